"""Thousands of users with TPC-C's keying and think times, on MariaDB and through PgBouncer.

Why: a user with the rules' waits spends some 21 s a transaction, so a server takes
thousands of them easily; what can fail is the driver (file descriptors, memory, users
woken late) and the servers' connection limits. 2,000 users over 30 s is the size a CI
affords; bench/fifteen_thousand.py runs the full 15,000.

The database: TPC-C at 2 warehouses, 1,000 users on each. The rules' 10 terminals a
warehouse would need 200 (far too large to build here); tpsbench spreads users over
warehouses by user number (TpccSession), with no cap per warehouse, and at ~21 s a
transaction 1,000 users put some 20 New-Orders a second on a warehouse's 10 district
rows, each held for one stored-procedure call: contention the server shrugs off.

Users share their driver process's thread (the default, multiplexed path), as a 15,000-user
run has them: a thread each would be 15,000 threads. Through PgBouncer they send libpq's
unnamed statements, which transaction pooling takes (docs/postgresql.md).

Checked, for each server: every user connected through the measured window (counted by
the server, or by PgBouncer, every few seconds; no reconnect, no error), the think times
drawn follow the rules (one Kolmogorov-Smirnov test over all types, p > 0.01), users woke
on time (wake-up lag p99 and mean under LAG_P99_MS and LAG_MEAN_MS), the honesty check matches and `check tpcc` passes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import cli_in_process, scratch_pg_database
from private_servers import private_pgbouncer, private_server
from sqlalchemy.engine import make_url

from tpsbench.commands.build import build
from tpsbench.commands.run import RunConfig, RunRecord, run
from tpsbench.measure.clients import clients_connected
from tpsbench.measure.waits import LAG, decoded, ks_negexp, think_name, wait_stats
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc.table import THINK_CAP, THINK_MEAN_S

pytestmark = pytest.mark.slow

USERS = 2000
WAREHOUSES = 2
RAMPUP_S, DURATION_S, INTERVAL_S = 10.0, 30.0, 5.0
#: Wake-up lag bounds. The 10 ms p99 target is for a quiet machine (bench/fifteen_thousand.py).
#: Here the database, the driver's two worker processes and other jobs share 2 cores (a
#: load average of 10 was seen while this ran), and a user's wake-up waits for a core and
#: then its worker's GIL: measured p99 120-230 ms then, p50 1 ms. What the test must catch
#: is a driver that falls behind its users, whose lag grows with the users asleep to
#: seconds: a p99 under 500 ms (a quarter of the shortest keying time, 2 s) and a mean
#: under 50 ms (a quarter of a percent of a user's 21 s cycle: the load stays as asked).
LAG_P99_MS = 500.0
LAG_MEAN_MS = 50.0
#: server connections PgBouncer keeps to PostgreSQL for all the users
POOL = 20
#: a sample of the clients connected every so often
EVERY_S = 3.0


def sampled_run(url: str, tmp_path: Path) -> tuple[RunRecord, list[int], list[str]]:
    """Run the step, counting the server's clients every EVERY_S seconds: the counts made
    inside the measured window (with a second's margin at each end), and the lines the run
    printed."""
    target = open_target(url)
    readings: list[tuple[float, int]] = []
    began: list[float] = []
    lines: list[str] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(EVERY_S):
            readings.append((time.monotonic(), clients_connected(target)))

    def live(line: str) -> None:
        lines.append(line)
        if not began and line.startswith("run "):  # the plan's line: the step's users start now
            began.append(time.monotonic())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    config = RunConfig("tpcc", url, users=[USERS], rampup_s=RAMPUP_S, duration_s=DURATION_S, interval_s=INTERVAL_S,
                       seed=11, results_url=f"sqlite:///{tmp_path}/results.db",
                       options={"keying": "spec", "think": "spec"})
    try:
        record = run(config, live=live)
    finally:
        done.set()
        sampler.join(30)
    assert began, "the run printed no plan line"
    start, end = began[0] + RAMPUP_S + 2 * INTERVAL_S, began[0] + RAMPUP_S + DURATION_S - 1.0
    return record, [count for at, count in readings if start <= at <= end], lines


def check_step(record: RunRecord, counts: list[int], url: str, tmp_path: Path) -> None:
    assert record.status == "completed"
    (step,) = record.outcome.steps
    total = step.total()
    assert total is not None and step.problems == [], step.problems
    assert total.total("errors") == 0 and total.reconnects == 0, (total.error_counts, total.reconnects)
    assert counts and min(counts) >= USERS, counts
    assert record.honesty["match"] is True, record.honesty
    # the waits as stored with the step: the histograms survive the store whole
    (stored,) = record.store.load_run(record.run_id).steps
    assert stored.summary is not None
    waits = decoded(stored.summary.waits)
    thinks = [(waits[think_name(name)], mean) for name, mean in THINK_MEAN_S.items() if think_name(name) in waits]
    assert sum(hist.count() for hist, _ in thinks) > USERS  # every user drew at least one
    p = ks_negexp(thinks, THINK_CAP)
    stats = wait_stats(waits)
    assert stats is not None and waits[LAG].count() > USERS
    print(f"KS p={p:.3f}; lag p50/p99/max {stats.lag_p50_ms:.2f}/{stats.lag_p99_ms:.2f}/{stats.lag_max_ms:.2f} ms;"
          f" clients {min(counts)}..{max(counts)}; commits {stored.summary.commits}")
    assert p > 0.01, p
    assert stats.lag_p99_ms < LAG_P99_MS and stats.lag_mean_ms < LAG_MEAN_MS, stats
    done = cli_in_process("check", "tpcc", "--db", url, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture()
def mariadb_url() -> Iterator[str]:
    """A MariaDB of the test's own set up as docs/getting-started.md says for many users:
    its thread pool, max_connections and open files raised (the shared one allows 151);
    stored_program_cache stays at its default, so that the run's note on it shows."""
    files = 3 * USERS + 2000
    args = ("--thread-handling=pool-of-threads", f"--max-connections={USERS + 200}",
            f"--open-files-limit={files}", "--innodb-buffer-pool-size=256M", "--innodb-flush-log-at-trx-commit=2")
    with private_server("mysql", files=files, args=args) as server:
        url = make_url(server.url).set(drivername="mysql").render_as_string(False)
        build("tpcc", WAREHOUSES, url, show_progress=False)
        yield url


def test_two_thousand_users_on_mariadb(mariadb_url: str, tmp_path: Path) -> None:
    record, counts, lines = sampled_run(mariadb_url, tmp_path)
    check_step(record, counts, mariadb_url, tmp_path)
    # the server at its default stored_program_cache keeps each connection's compiled
    # procedures: the run says so before it starts, and says nothing once the setting is 0
    assert any("connections will keep its own compiled copy" in line and "stored_program_cache = 0" in line
               for line in lines), lines
    target = open_target(mariadb_url)
    target.fetch_all("SET GLOBAL stored_program_cache = 0", "setting stored_program_cache")
    assert target.routine_cache_note(USERS) is None


@pytest.fixture()
def bouncer_url() -> Iterator[str]:
    """TPC-C built on the shared PostgreSQL directly, and its URL through a PgBouncer of
    the test's own in transaction pooling, POOL server connections for USERS clients."""
    with scratch_pg_database() as direct:
        build("tpcc", WAREHOUSES, direct, show_progress=False)
        url = make_url(direct)
        with private_pgbouncer(url.host or "127.0.0.1", url.port or 5432, url.username or "postgres",
                               pool=POOL, clients=USERS + 100) as port:
            yield url.set(port=port).update_query_dict({"pool_mode": "transaction"}).render_as_string(False)


def test_two_thousand_users_through_pgbouncer(bouncer_url: str, tmp_path: Path) -> None:
    record, counts, _ = sampled_run(bouncer_url, tmp_path)
    check_step(record, counts, bouncer_url, tmp_path)
