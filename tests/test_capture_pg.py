"""capture and replay on PostgreSQL with a client no one here wrote: pgbench (TPC-B-like,
4 clients) is captured from the server log while it runs, and its trace replayed on a
copy of its database taken before the capture.

What must hold: the replay sends exactly the traced statements (counts per normalised
statement), keeps the traced rate at speed 1 within 2 %, leaves pgbench's invariant true
on the replica (accounts = tellers = branches = history), and the capture leaves the
server's settings as they were, also when it is interrupted or loses its connection.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from conftest import scratch_name, scratch_pg_database, unavailable
from overlapping_captures import capture_args, refusal, second_capture
from private_servers import private_server
from sqlalchemy.engine import make_url

from tpsbench.commands.pg_capture import take_lock
from tpsbench.results.store import ResultsStore

#: one capture at a time per server (the capture lock)
pytestmark = [pytest.mark.slow, pytest.mark.postgresql, pytest.mark.exclusive("postgresql capture")]

PGBENCH = "/usr/bin/pgbench"
#: pgbench's transactions a second (-R), about 2,000 statements a second
PGBENCH_TPS = 300
ADMIN = os.environ.get("TPSBENCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
SETTINGS = ("log_min_duration_statement", "log_line_prefix", "log_parameter_max_length")
SRC = str(Path(__file__).resolve().parents[1] / "src")


def admin() -> psycopg.Connection:
    try:
        return psycopg.connect(ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        unavailable("PostgreSQL", exc)


def url_of(name: str) -> str:
    return make_url(ADMIN).set(database=name).render_as_string(hide_password=False)


def server_settings() -> tuple[list[tuple[str, str]], dict[str, str]]:
    """postgresql.auto.conf's lines for the capture's settings, and their values in force."""
    with admin() as conn:
        auto = conn.execute("SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%%auto.conf' "
                            "AND name = ANY(%s) ORDER BY name", (list(SETTINGS),)).fetchall()
        live = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
                                 (list(SETTINGS),)).fetchall())
    return auto, live


def balances(name: str) -> tuple[int, int, int, int]:
    with psycopg.connect(url_of(name)) as conn:
        return conn.execute("SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM "
                            "pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches), "
                            "(SELECT coalesce(sum(delta), 0) FROM pgbench_history)").fetchone()


def tpsbench(*args: str, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen([sys.executable, "-m", "tpsbench", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


@pytest.fixture
def pgbench_pair():
    """A pgbench database at scale 1 and a copy of it (CREATE DATABASE ... TEMPLATE), dropped after."""
    if not shutil.which(PGBENCH):
        unavailable("pgbench", f"no {PGBENCH}")
    source, copy = scratch_name(), scratch_name()
    with admin() as conn:
        conn.execute(f'CREATE DATABASE "{source}"')
    try:
        subprocess.run([PGBENCH, "-i", "-s", "1", "-q", url_of(source)], check=True, capture_output=True)
        with admin() as conn:
            conn.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{source}"')
        yield source, copy
    finally:
        with admin() as conn:
            for name in (source, copy):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_pgbench_captured_and_replayed_on_a_copy(tmp_path: Path, pgbench_pair):
    source, copy = pgbench_pair
    before = server_settings()
    # paced (-R): the traced rate is then pgbench's schedule, not the most two shared cores
    # gave it at that moment, which a replay sharing them with the server need not beat
    bench = subprocess.Popen([PGBENCH, "-c", "4", "-R", str(PGBENCH_TPS), "-T", "16", url_of(source)],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    trace_file = tmp_path / "pgbench.trace"
    cap = tpsbench("capture", "--db", url_of(source), "--duration", "10s", "-o", str(trace_file),
                   "--allow-settings")
    out, err = cap.communicate(timeout=120)
    bench.communicate(timeout=60)
    assert cap.returncode == 0, err
    assert server_settings() == before
    rows = [json.loads(line) for line in trace_file.read_text().splitlines()]
    assert "url" not in rows[0] and "postgres@" not in trace_file.read_text()
    captured = {s["statement"]: s["count"] for s in rows[-2]["summary"]["statements"]}
    assert captured["SELECT abalance FROM pgbench_accounts WHERE aid = ?"] > 100
    assert len({*captured.values()}) == 1  # whole transactions only: every statement of one as often

    rep = tpsbench("replay", str(trace_file), "--db", url_of(copy), "--stop-on-error", cwd=tmp_path)
    out, err = rep.communicate(timeout=120)
    assert rep.returncode == 0, err
    counts = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[1].isdigit():
            counts[cells[0]] = (int(cells[1]), int(cells[2]), int(cells[3]))
    assert len(counts) == len(captured) and all(t == r and e == 0 for t, r, e in counts.values()), out
    assert sum(t for t, _, _ in counts.values()) == sum(captured.values())
    header = next(line for line in out.splitlines() if line.startswith("replayed at speed 1"))
    achieved, traced = (float(x) for x in
                        (header.split(": ")[1].split(" ")[0], header.split("(traced ")[1].split("/s")[0]))
    assert abs(achieved / traced - 1) <= 0.02, header
    a, t, b, h = balances(copy)
    assert a == t == b == h and h != 0
    with psycopg.connect(url_of(copy)) as conn:
        history = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()[0]
    assert history == captured["INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, "
                               "CURRENT_TIMESTAMP)"]
    store = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}")  # the replay's run, as report reads it
    (run,) = store.list_runs()
    (step,) = store.load_run(run.id).steps
    assert run.status == "completed" and step.summary is not None
    assert {run.config["statements"][n]: t.commits for n, t in step.summary.txns.items()} == captured


def _capture_idle(tmp_path: Path, source: str) -> subprocess.Popen:
    return tpsbench("capture", "--db", url_of(source), "--duration", "60s", "-o", str(tmp_path / "t.trace"),
                    "--allow-settings", start_new_session=True)


def _wait_for_logging(deadline_s: float = 30) -> None:
    end = time.monotonic() + deadline_s
    while server_settings()[1]["log_line_prefix"] != "tpsbench|%n|%c|%d|":
        assert time.monotonic() < end, "the capture never set its settings"
        time.sleep(0.2)


def test_ctrl_c_restores_every_setting_and_changes_no_data(tmp_path: Path, pgbench_pair, deliverable_sigint):
    source, _ = pgbench_pair
    before, data = server_settings(), balances(source)
    cap = _capture_idle(tmp_path, source)
    _wait_for_logging()
    assert server_settings() != before
    cap.send_signal(signal.SIGINT)
    out, err = cap.communicate(timeout=60)
    assert cap.returncode == 130 and "restored" in err and "Traceback" not in err, err
    assert server_settings() == before and balances(source) == data
    assert not (tmp_path / "t.trace").exists()


def test_a_lost_connection_still_restores_the_settings(tmp_path: Path, pgbench_pair):
    source, _ = pgbench_pair
    before = server_settings()
    cap = _capture_idle(tmp_path, source)
    _wait_for_logging()
    with admin() as conn:
        killed = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE application_name = 'tpsbench capture'").fetchall()
    assert killed == [(True,)]
    out, err = cap.communicate(timeout=60)
    lines = [line for line in err.splitlines() if line.startswith("tpsbench: error")]
    assert cap.returncode != 0 and len(lines) == 1 and "lost the connection" in lines[0], err
    assert server_settings() == before and "Traceback" not in err


def test_a_second_capture_on_the_server_is_refused_and_changes_nothing(tmp_path: Path):
    """A capture of another database of the server, while one runs, is refused in one line
    naming the running one's lock holder; the server ends with the settings it began with."""
    with scratch_pg_database() as first, scratch_pg_database() as second:
        before = server_settings()

        def holder() -> object:
            with admin() as conn:
                return conn.execute("SELECT pid FROM pg_stat_activity "
                                    "WHERE application_name = 'tpsbench capture lock'").fetchone()

        refused, held = second_capture(first, second, tmp_path, holder)
        assert held is not None and f"(pid {held[0]}," in refusal(refused)
        assert server_settings() == before


def test_without_the_postgres_database_the_lock_is_the_captured_databases(tmp_path: Path):
    """On a server of the test's own whose ``postgres`` database is gone, the lock is taken in
    the captured database, said to be per database, and still refuses a second capture of it."""
    with private_server("postgresql") as server:
        u = make_url(server.url)
        with psycopg.connect(host=u.host, port=u.port, user=u.username, dbname=u.database, autocommit=True) as c:
            c.execute("DROP DATABASE postgres")
            take_lock(c)
            done = subprocess.run(capture_args(server.url, "1s", tmp_path / "t.trace"), text=True,
                                  env=dict(os.environ, PYTHONPATH=SRC), capture_output=True, timeout=60)
            pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        said, error = done.stderr.splitlines()
        assert "holds for database 'tpsbench' only" in said, done.stderr
        assert f"(pid {pid}," in refusal(subprocess.CompletedProcess(done.args, done.returncode, done.stdout, error))
