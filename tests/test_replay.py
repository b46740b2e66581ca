"""capture and replay, the quick lane: statement normalisation, the PostgreSQL log
readers, the trace file and its refusals, and a short replay against a real PostgreSQL.

The live capture of pgbench traffic and the settings it restores are in
tests/test_capture_pg.py (slow).
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import psycopg
import pytest
from conftest import cli_in_process
from sqlalchemy.engine import make_url

from tpsbench.results.store import ResultsStore
from tpsbench.workloads.replay.normalise import normalise, tables_of
from tpsbench.workloads.replay.pglog import read_csvlog, read_stderr
from tpsbench.workloads.replay.summary import summarise
from tpsbench.workloads.replay.trace import Statement, Trace, TraceSession, whole_transactions, write_trace


def test_literals_become_parameters_and_shapes_group():
    a, va = normalise("UPDATE t SET x = x + -25 WHERE id = 7;")
    b, vb = normalise("update t  SET x = x + 3\n WHERE id = 12 -- note")
    assert a == "UPDATE t SET x = x + ? WHERE id = ?" and va == [-25, 7]
    assert b.lower() == a.lower() and vb == [3, 12]
    text, values = normalise("SELECT a-1, 'it''s', E'x\\'y', 1.5e3 FROM t WHERE n = $1")
    assert text == "SELECT a-?, ?, ?, ? FROM t WHERE n = ?"
    assert values == [1, "it's", "x\\'y", 1500.0]
    assert normalise("ALTER ROLE app PASSWORD 'hunter22'")[1] == ["***"]
    assert tables_of("SELECT * FROM a JOIN b ON a.i = b.i", "postgresql") == ("a", "b")


def test_a_transaction_the_window_cut_is_left_out():
    texts = ["UPDATE t SET x = 1", "END", "SELECT 1", "BEGIN", "UPDATE t SET x = 2", "COMMIT", "BEGIN", "SELECT 2"]
    kept, dropped = whole_transactions([Statement(i, 0.1, t) for i, t in enumerate(texts)])
    assert [s.text for s in kept] == ["SELECT 1", "BEGIN", "UPDATE t SET x = 2", "COMMIT"] and dropped == 4


STDERR_LOG = """\
2026-01-01 10:00:00.000 UTC [9] LOG:  a line of another prefix
tpsbench|1700000000.500|65a.1f|shop|LOG:  duration: 0.250 ms  statement: SELECT 1;
tpsbench|1700000000.900|65a.20|shop|LOG:  duration: 1.500 ms  execute <unnamed>: SELECT *
\tFROM t WHERE a = $1 AND b = $2
tpsbench|1700000000.900|65a.20|shop|DETAIL:  parameters: $1 = '4', $2 = 'it''s'
tpsbench|1700000001.000|65a.20|shop|LOG:  duration: 0.100 ms  parse <unnamed>: SELECT 2
tpsbench|1700000001.100|65a.1f|other|LOG:  duration: 0.100 ms  statement: SELECT 3
"""


def test_the_stderr_log_reads_as_statements_with_parameters():
    found = list(read_stderr(STDERR_LOG.splitlines(keepends=True)))
    assert [(e.session, e.database, e.text, e.params) for e in found] == [
        ("65a.1f", "shop", "SELECT 1;", None),
        ("65a.20", "shop", "SELECT *\nFROM t WHERE a = $1 AND b = $2", ["4", "it's"]),
        ("65a.1f", "other", "SELECT 3", None)]
    assert found[1].end == pytest.approx(1700000000.9) and found[1].duration_ms == 1.5


def test_a_csvlog_reads_as_statements():
    row = ['2026-01-01 10:00:01.250 UTC', 'postgres', 'shop', '77', '127.0.0.1:5', '65a.4d', '3', 'SELECT',
           '2026-01-01 10:00:00 UTC', '3/4', '0', 'LOG', '00000',
           'duration: 0.500 ms  execute <unnamed>: SELECT $1', "parameters: $1 = '9'", '', '', '', '', '', '',
           'client backend', '', '0']
    import csv
    import io
    out = io.StringIO()
    csv.writer(out).writerow(row)
    (found,) = read_csvlog(io.StringIO(out.getvalue()))
    assert (found.session, found.text, found.params, found.duration_ms) == ("65a.4d", "SELECT $1", ["9"], 0.5)
    assert found.end == pytest.approx(1767261601.25)


def make_trace(path: Path, texts: list[list[str]], gap: float = 0.01, database: str = "x") -> Trace:
    sessions = [TraceSession(f"s{n}", [Statement(i * gap, 0.1, t) for i, t in enumerate(ts)])
                for n, ts in enumerate(texts)]
    trace = Trace("postgresql", database, 0.0, gap * max(len(t) for t in texts), sessions)
    trace.summary = summarise(trace)
    write_trace(trace, path)
    return trace


def replay(tmp_path: Path, *args: str):
    return cli_in_process("replay", *args, cwd=tmp_path)


def one_line(result, *words: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and all(w in lines[0] for w in words), lines[0]
    return lines[0]


def test_bad_traces_and_speeds_are_refused_in_one_line(tmp_path: Path):
    db = "postgresql://postgres@127.0.0.1/none"
    good = tmp_path / "good.trace"
    make_trace(good, [["SELECT 1", "SELECT 2"], ["SELECT 3"]])
    (tmp_path / "empty.trace").write_text("")
    lines = good.read_text().splitlines()
    (tmp_path / "cut.trace").write_text("\n".join(lines[:-1]) + "\n")
    (tmp_path / "half.trace").write_text("\n".join(lines[:1]) + "\n" + lines[1][:30])
    newer = json.loads(lines[0]) | {"version": 99}
    (tmp_path / "newer.trace").write_text("\n".join([json.dumps(newer), *lines[1:]]) + "\n")
    one_line(replay(tmp_path, "empty.trace", "--db", db), "empty")
    one_line(replay(tmp_path, "cut.trace", "--db", db), "truncated")
    one_line(replay(tmp_path, "half.trace", "--db", db), "truncated")
    one_line(replay(tmp_path, "newer.trace", "--db", db), "version 99")
    one_line(replay(tmp_path, "nothing.trace", "--db", db), "no trace file")
    for speed in ("0", "-2", "nan", "inf"):
        one_line(replay(tmp_path, "good.trace", "--db", db, "--speed", speed), "--speed")


@pytest.mark.postgresql
def test_a_target_without_a_traced_table_is_refused_before_anything_runs(tmp_path: Path, pg_url: str):
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE present (n int)")
    make_trace(tmp_path / "t.trace", [["INSERT INTO present VALUES (1)", "SELECT * FROM absent_one"]])
    one_line(replay(tmp_path, "t.trace", "--db", pg_url), "absent_one")
    with psycopg.connect(_plain(pg_url)) as conn:
        assert conn.execute("SELECT count(*) FROM present").fetchone()[0] == 0


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.mark.postgresql
def test_replay_counts_and_samples_errors_and_goes_on_unless_told(tmp_path: Path, pg_url: str):
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE hits (n int)")
    texts = [["BEGIN", "INSERT INTO hits VALUES (1)", "SELECT 1/0", "END", "INSERT INTO hits VALUES (2)"],
             ["INSERT INTO hits VALUES (3)", "SELECT n FROM hits WHERE n = 42"]]
    make_trace(tmp_path / "t.trace", texts, gap=0.02)
    result = replay(tmp_path, "t.trace", "--db", pg_url)
    assert result.returncode == 0, result.stderr
    assert "division by zero" in result.stderr and "1 error(s)" in result.stdout
    with psycopg.connect(_plain(pg_url)) as conn:  # the failed transaction rolled back, the others ran
        assert sorted(r[0] for r in conn.execute("SELECT n FROM hits")) == [2, 3]
    stopped = replay(tmp_path, "t.trace", "--db", pg_url, "--stop-on-error")
    assert stopped.returncode == 1 and "--stop-on-error" in stopped.stderr and "division by zero" in stopped.stderr


@pytest.mark.postgresql
def test_replay_keeps_parameters_and_timing(tmp_path: Path, pg_url: str):
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE kv (k int, v text)")
    session = TraceSession("p", [Statement(0.0, 0.1, "INSERT INTO kv VALUES ($1, $2)", ["1", "50% off"]),
                                 Statement(0.5, 0.1, "INSERT INTO kv VALUES ($2::int, $1)", ["a$1", "2"])])
    trace = Trace("postgresql", "x", 0.0, 0.5, [session])
    trace.summary = summarise(trace)
    write_trace(trace, tmp_path / "p.trace")
    result = replay(tmp_path, "p.trace", "--db", pg_url, "--speed", "0.5")
    assert result.returncode == 0, result.stderr
    with psycopg.connect(_plain(pg_url)) as conn:
        assert conn.execute("SELECT k, v FROM kv ORDER BY k").fetchall() == [(1, "50% off"), (2, "a$1")]
    elapsed = float(re.search(r"over\s+([0-9.]+)\s+s", result.stdout).group(1))
    assert 1.0 <= elapsed < 10, result.stdout  # half speed: the 0.5 s gap took at least 1 s (more on a busy host)


def test_capture_without_consent_or_duration_is_refused(tmp_path: Path):
    db = "postgresql://postgres@127.0.0.1/postgres"
    one_line(cli_in_process("capture", "--db", db, "--duration", "5s", "-o", "t.trace", cwd=tmp_path),
             "--allow-settings")
    one_line(cli_in_process("capture", "--db", db, "-o", "t.trace", cwd=tmp_path), "--duration")
    one_line(cli_in_process("capture", "--db", db, "--duration", "0s", "-o", "t.trace", "--allow-settings",
                            cwd=tmp_path), "--duration")
    one_line(cli_in_process("capture", "--db", db, "--log", "pg.log", "--duration", "5s", "-o", "t.trace",
                            cwd=tmp_path), "--log")
    (tmp_path / "notes.txt").write_text("mine")
    one_line(cli_in_process("capture", "--db", db, "--duration", "5s", "-o", "notes.txt", "--allow-settings",
                            cwd=tmp_path), "not a tpsbench trace")
    assert (tmp_path / "notes.txt").read_text() == "mine" and not (tmp_path / "t.trace").exists()


def test_capture_reads_an_existing_log(tmp_path: Path):
    (tmp_path / "pg.log").write_text(STDERR_LOG)
    result = cli_in_process("capture", "--db", "postgresql://postgres@127.0.0.1/shop", "--log", "pg.log",
                            "-o", "t.trace", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "t.trace").read_text().splitlines()]
    assert [len(r["statements"]) for r in rows if "session" in r] == [1, 1]
    summary = next(r["summary"] for r in rows if "summary" in r)
    assert {s["statement"] for s in summary["statements"]} == {"SELECT ?", "SELECT * FROM t WHERE a = ? AND b = ?"}
    assert summary["tables"] == ["t"]


def test_sessions_on_threads_where_the_cursor_cannot_send_ahead(tmp_path: Path):
    """A target whose cursor only executes (DB-API's) gets a thread per session; the counts
    and the failure sampling are the same as on the multiplexed path."""
    import sqlite3

    from tpsbench.commands.replay import outcome
    from tpsbench.workloads.replay.player import Player

    db = tmp_path / "t.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (n int)")
    trace = make_trace(tmp_path / "t.trace", [["INSERT INTO t VALUES (1)", "SELECT * FROM nowhere"],
                                              ["INSERT INTO t VALUES (2)", "INSERT INTO t VALUES (3)"]])
    player = Player(trace, lambda: sqlite3.connect(db, isolation_level=None, check_same_thread=False),
                    lambda conn: conn.cursor(), lambda exc: isinstance(exc, sqlite3.Error))
    result = outcome(trace, player.play(), 1.0, player.start, player.first_error)
    assert {s.text: (s.traced, s.replayed, s.errors) for s in result.statements} == {
        "INSERT INTO t VALUES (?)": (3, 3, 0), "SELECT * FROM nowhere": (1, 1, 1)}
    assert "no such table" in next(s for s in result.statements if s.errors).samples[0]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 3


def test_the_statements_that_undo_a_capture_put_back_what_was_there():
    """What capture prints before it changes a server must restore it: a setting that had a
    postgresql.auto.conf line gets its value back, one that had none is reset; MariaDB's
    numeric and text settings each in their own spelling."""
    from tpsbench.commands.my_capture import undo_sql as mysql_undo
    from tpsbench.commands.pg_capture import undo_sql as pg_undo

    assert pg_undo({"log_min_duration_statement": None, "log_line_prefix": "%m it's"}) == (
        "ALTER SYSTEM RESET log_min_duration_statement; ALTER SYSTEM SET log_line_prefix = '%m it''s'; "
        "SELECT pg_reload_conf()")
    assert mysql_undo({"general_log": "0", "log_output": "FILE"}) == \
        "SET GLOBAL general_log = 0; SET GLOBAL log_output = 'FILE'"


def test_general_log_rows_keep_their_thread_and_database():
    """A thread's database is the one it connected or changed to, else the one it was on when
    the window began; a thread connected to none, or unknown, has none."""
    from tpsbench.commands.my_capture import logged

    rows = [(10.0, 7, "Connect", b"root@localhost on shop using TCP/IP"), (10.1, 7, "Query", b"BEGIN"),
            (10.2, 8, "Query", b"SELECT 1"), (10.3, 7, "Prepare", b"SELECT ?"), (10.4, 7, "Execute", b"SELECT 5"),
            (10.5, 8, "Init DB", b"other"), (10.6, 8, "Query", b"SELECT 2"), (10.7, 9, "Query", b"SELECT 3"),
            (10.8, 5, "Query", b"SELECT 4"), (10.9, 6, "Connect", b"root@localhost on  using TCP/IP"),
            (11.0, 6, "Query", b"SELECT 6")]
    found = [(e.session, e.database, e.text, e.end) for e in logged(rows, {"8": "shop", "9": "else"})]
    assert found == [("7", "shop", "BEGIN", 10.1), ("8", "shop", "SELECT 1", 10.2), ("7", "shop", "SELECT 5", 10.4),
                     ("8", "other", "SELECT 2", 10.6), ("9", "else", "SELECT 3", 10.7), ("5", "", "SELECT 4", 10.8),
                     ("6", "", "SELECT 6", 11.0)]


@pytest.mark.postgresql
def test_a_session_behind_sends_ahead_in_order_and_each_error_is_its_own(tmp_path: Path, pg_url: str):
    """While a slow statement runs, the session's next ones fall due: they are queued
    behind it on its connection (libpq's pipeline), run in the trace's order, and their
    latency counts from when each was due; a statement that cannot be prepared fails with
    its own message, alone: the next one runs."""
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE seq (n int, at timestamptz DEFAULT clock_timestamp())")
    insert = "INSERT INTO seq (n) VALUES ($1)"
    session = TraceSession("p", [Statement(0.0, 0.1, "SELECT pg_sleep(0.4)"),
                                 *[Statement(0.01 + i * 0.001, 0.1, insert, [str(i)]) for i in range(20)],
                                 Statement(0.04, 0.1, "INSERT INTO seq (n) VALUES ($1::no_such_type)", ["1"]),
                                 Statement(0.05, 0.1, insert, ["99"])])
    trace = Trace("postgresql", "x", 0.0, 0.05, [session])
    trace.summary = summarise(trace)
    write_trace(trace, tmp_path / "p.trace")
    result = replay(tmp_path, "p.trace", "--db", pg_url)
    assert result.returncode == 0, result.stderr
    with psycopg.connect(_plain(pg_url)) as conn:
        assert [r[0] for r in conn.execute("SELECT n FROM seq ORDER BY at")] == [*range(20), 99]
    assert 'type "no_such_type" does not exist' in result.stderr and "1 error(s)" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "INSERT INTO seq (n) VALUES (?) " in line)
    traced, replayed, errors, in_doubt, mean_ms = (c.strip() for c in row.split("│")[2:7])
    assert (traced, replayed, errors, in_doubt) == ("21", "21", "0", "0") and float(mean_ms) > 300  # behind the sleep


@pytest.mark.postgresql
def test_statements_in_flight_on_a_killed_connection_are_in_doubt_and_those_after_fail(tmp_path: Path,
                                                                                     pg_url: str):
    """A session's backend killed mid-pipeline: what it had sent and not had answered may
    have run or not, so it is counted in doubt, not as errors; what falls due after fails
    to be sent (errors); the other session goes on. Every statement sent is answered,
    failed or in doubt, in the table and in the stored run alike."""
    # the sleep and the ten behind it are due at once: sent in one write before the kill
    sessions = [TraceSession("a", [Statement(0.0, 0.1, "SELECT pg_sleep($1)", ["30"]),
                                   *[Statement(0.0, 0.1, "SELECT $1::int", ["1"]) for _ in range(10)],
                                   *[Statement(1.0 + 0.01 * i, 0.1, "SELECT $1::bigint", ["4"]) for i in range(3)]]),
                TraceSession("b", [Statement(0.0, 0.1, "SELECT $1::int", ["2"]),
                                   Statement(0.01, 0.1, "SELECT $1::int", ["3"])])]
    trace = Trace("postgresql", "x", 0.0, 1.02, sessions)
    trace.summary = summarise(trace)
    write_trace(trace, tmp_path / "t.trace")
    killed: list[tuple[bool]] = []
    done = threading.Event()

    def kill() -> None:
        with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
            while not killed and not done.is_set():
                killed.extend(conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname ="
                                           " current_database() AND query = 'SELECT pg_sleep($1)' AND state = 'active'")
                              .fetchall())
                time.sleep(0.02)

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        result = replay(tmp_path, "t.trace", "--db", pg_url)
    finally:
        done.set()
        killer.join()
    assert killed == [(True,)] and result.returncode == 0, result.stderr
    rows = {cells[0]: [int(c) for c in cells[1:5]] for cells in
            ([c.strip() for c in line.split("│")[1:-1]] for line in result.stdout.splitlines())
            if len(cells) == 8 and cells[1].isdigit()}
    # traced, replayed (sent), errors, in doubt
    assert rows == {"SELECT ?::int": [12, 12, 0, 10], "SELECT pg_sleep(?)": [1, 1, 0, 1],
                    "SELECT ?::bigint": [3, 3, 3, 0]}, result.stdout
    assert "3 error(s), 11 in doubt" in result.stdout
    store = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}")
    (run,) = store.list_runs()
    (step,) = store.load_run(run.id).steps
    assert step.summary is not None
    stored = {n: (t.commits, t.errors, t.in_doubt) for n, t in step.summary.txns.items()}
    assert stored == {"SELECT ?::int": (2, 0, 10), "SELECT pg_sleep(?)": (0, 0, 1), "SELECT ?::bigint": (0, 3, 0)}
    assert all(sum(stored[n]) == sent for n, (_, sent, _, _) in rows.items())  # sent = answered + errors + in doubt
