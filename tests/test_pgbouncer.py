"""PostgreSQL through a real PgBouncer in transaction pooling, as docs/postgresql.md sets it up.

Why: thousands of users reach PostgreSQL through PgBouncer, whose transaction pooling
hands each transaction to whichever server connection is free, so a named prepared
statement made in one transaction is gone in the next (before PgBouncer 1.21). The URL
says so (``?pool_mode=transaction``): users then prepare nothing, ``--client prepared``
is refused in one line, and the users a run may have are PgBouncer's max_client_conn, not
PostgreSQL's max_connections. Eight users over two server connections show it: any
prepared statement would be missing on the other connection.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import cli_in_process, scratch_pg_database
from private_servers import private_pgbouncer
from sqlalchemy.engine import make_url

from tpsbench.commands.run import RunConfig, run
from tpsbench.targets import open_target

#: server connections PgBouncer keeps per database and user, fewer than the users
POOL = 2
#: the clients PgBouncer takes
CLIENTS = 40
USERS = 8


@pytest.fixture(scope="module")
def bouncer_url(built_tpcc_pg: str) -> Iterator[str]:
    """A TPC-C scale 1 database on PostgreSQL directly (the session's build, copied), and its
    URL through PgBouncer."""
    with scratch_pg_database(built_tpcc_pg) as direct:
        url = make_url(direct)
        with private_pgbouncer(url.host or "127.0.0.1", url.port or 5432, url.username or "postgres",
                               pool=POOL, clients=CLIENTS) as port:
            yield url.set(port=port).update_query_dict({"pool_mode": "transaction"}).render_as_string(False)


@pytest.mark.slow
@pytest.mark.parametrize(("options", "multiplex"), [
    ({}, True),  # stored procedures, each user's call sent on the shared thread as libpq's unnamed statement
    ({"procedures": "off"}, False),  # statements on a thread each: BEGIN travels with the first in a pipeline
], ids=["procedures-shared-thread", "statements-threads"])
def test_a_run_through_transaction_pooling_is_honest_and_checks(bouncer_url: str, tmp_path: Path,
                                                                 options: dict[str, str], multiplex: bool) -> None:
    config = RunConfig("tpcc", bouncer_url, users=[USERS], rampup_s=0.0, duration_s=8.0, interval_s=1.0, seed=3,
                       results_url=f"sqlite:///{tmp_path}/results.db", options={"think": "off", **options},
                       multiplex=multiplex)
    record = run(config, live=None)
    assert record.status == "completed"
    (step,) = record.outcome.steps
    total = step.total()
    assert total is not None and total.total("commits") > 0 and step.problems == []
    assert total.total("errors") == 0, total.error_counts
    assert record.honesty["match"] is True, record.honesty
    # the database's counters read every interval, by one observer connection: a statement
    # run a fifth time there would be prepared, and missing on the next server connection
    data = record.store.load_run(record.run_id)
    counters = [data.readings(1, i.interval).get("database", {}) for i in data.intervals if i.steady]
    assert len(counters) >= 6 and all("commits_s" in c for c in counters), counters
    done = cli_in_process("check", "tpcc", "--db", bouncer_url, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (("--client", "prepared"), "named prepared statements do not exist before PgBouncer 1.21); use text, dbapi"),
    (("--users", str(CLIENTS)), f"accepts {CLIENTS} more; raise max_client_conn in pgbouncer.ini"),
])
def test_what_transaction_pooling_cannot_take_is_refused_in_one_line(bouncer_url: str, tmp_path: Path,
                                                                      args: tuple[str, ...], needle: str) -> None:
    """Nothing stored: the results file is not even made."""
    done = subprocess.run([sys.executable, "-m", "tpsbench", "run", "tpcc", "--users", "1", "--duration", "1s",
                           "--db", bouncer_url, "--results", f"sqlite:///{tmp_path}/results.db", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert needle in lines[0]
    assert not (tmp_path / "results.db").exists()


@pytest.mark.parametrize(("mode", "paths"),
                         [("session", ("prepared",)), ("transaction", ("text",)), ("statement", ("text",))])
def test_only_pooling_that_shares_server_connections_prepares_nothing(mode: str, paths: tuple[str, ...]) -> None:
    """Session pooling keeps a server connection per client, so its prepared statements
    stay; the URL's pool_mode never reaches libpq or SQLAlchemy, which would refuse it."""
    target = open_target(f"postgresql://postgres@127.0.0.1:6432/tpcc?pool_mode={mode}")
    assert target.client_paths() == paths
    assert target.client_path("fast") == paths[0]
    assert "pool_mode" not in target.engine.url.query
