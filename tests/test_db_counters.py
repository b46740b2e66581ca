"""The database counters observer, against the real servers: known work in, its rates out.

Each server test runs a known amount of work between two samples (N committed INSERT
transactions and a SELECT over a table of a few thousand rows) and checks the figures
against it. PostgreSQL publishes a backend's counts at most once a second, so the work's
last transaction calls pg_stat_force_next_flush() (PostgreSQL 15+) to make them visible
at once. pg_stat_database counts every transaction, the observer's own one per sample
too, and MariaDB's Com_commit counts every COMMIT on the server, other clients' too: so
the commit count may exceed N by a little, never fall short of it, and on MariaDB a
measurement that a busy neighbour spoiled is taken again (up to three times).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from tpsbench.core.target import Target
from tpsbench.measure.db_counters import DatabaseCounters
from tpsbench.measure.observers import Observers
from tpsbench.targets import open_target

SERVERS = [pytest.param("pg_url", marks=pytest.mark.postgresql), pytest.param("mysql_url", marks=pytest.mark.mysql)]
#: committed transactions per measurement, and rows of the table the SELECT reads
COMMITS, ROWS = 300, 5000
#: the database's own counter of log written, by dialect
LOG_FIGURE = {"postgresql": "wal_bytes_s", "mysql": "innodb_os_log_written_s"}


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> Target:
    return open_target(request.getfixturevalue(request.param))


def execute(conn: Any, sql: str, params: Any = ()) -> list[tuple]:
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return list(cur.fetchall()) if cur.description else []
    finally:
        cur.close()


def publish(target: Target, conn: Any) -> None:
    """Make this transaction's counts visible as soon as it commits (PostgreSQL's lag)."""
    if target.dialect == "postgresql":
        execute(conn, "SELECT pg_stat_force_next_flush()")


def scratch_table(target: Target) -> Any:
    """A work connection, with a table of ROWS rows committed and published."""
    conn = target.connect()
    execute(conn, "CREATE TABLE scratch (id INT PRIMARY KEY, pad VARCHAR(100))")
    cur = conn.cursor()
    mark = target.placeholder()
    cur.executemany(f"INSERT INTO scratch VALUES ({mark}, {mark})", [(i, "x" * 100) for i in range(ROWS)])
    cur.close()
    publish(target, conn)
    conn.commit()
    return conn


def commit_rows(target: Target, conn: Any, first: int, count: int = COMMITS) -> None:
    """``count`` transactions of one INSERT each, committed, and a SELECT over the table."""
    mark = target.placeholder()
    for i in range(first, first + count):
        execute(conn, f"INSERT INTO scratch VALUES ({mark}, 'y')", (i,))
        if i == first + count - 1:
            execute(conn, "SELECT count(*), max(pad) FROM scratch")
            publish(target, conn)
        conn.commit()


def measured(observer: DatabaseCounters, work: Callable[[], None]) -> tuple[dict[str, float], float]:
    """The observer's reading over ``work``, and the window's seconds (as Observers times it)."""
    started, before = time.time(), observer.sample()
    work()
    ended, after = time.time(), observer.sample()
    assert before and after
    return observer.reading(before, after, ended - started), ended - started


@pytest.mark.alone  # MariaDB's commit counter is the whole server's
def test_rates_match_the_work_done(server: Target) -> None:
    observer = DatabaseCounters(server)
    observer.step_started(1, 1)
    conn = scratch_table(server)
    try:
        for attempt in range(3):
            reading, seconds = measured(observer, partial(commit_rows, server, conn, ROWS + attempt * COMMITS))
            commits = reading["commits_s"] * seconds
            assert commits >= COMMITS - 0.01  # a counter of commits cannot miss one
            if commits <= COMMITS * 1.03 + 2:
                break
        assert abs(reading["commits_s"] - COMMITS / seconds) <= 0.03 * COMMITS / seconds + 2 / seconds, reading
    finally:
        conn.close()
        observer.step_ended(1)
    assert observer.conn is None
    assert all(isinstance(value, float) and value >= 0 for value in reading.values()), reading
    assert 0.0 <= reading["buffer_hit_pct"] <= 100.0
    assert reading["cache_hits_s"] + reading["cache_misses_s"] > 0  # the SELECT read the table's pages
    assert reading[LOG_FIGURE[server.dialect]] > 0 and reading["writes_s"] > 0 and reading["write_kB_s"] > 0
    assert {"reads_s", "read_kB_s", "rollbacks_s"} <= reading.keys()
    if server.dialect == "postgresql":
        assert reading["tup_inserted_s"] * seconds >= COMMITS and "checkpoints_s" in reading


@pytest.mark.postgresql
def test_a_stats_reset_between_two_samples_gives_no_figures(pg_url: str) -> None:
    target = open_target(pg_url)
    observer = DatabaseCounters(target)
    observer.step_started(1, 1)
    conn = scratch_table(target)
    try:
        before = observer.sample()
        execute(conn, "SELECT pg_stat_reset()")  # this database's counters start again from zero
        conn.commit()
        commit_rows(target, conn, ROWS)
        after = observer.sample()
    finally:
        conn.close()
        observer.step_ended(1)
    assert before and after
    # the commits climbed past their old value: only the reset time tells the difference is wrong
    assert after["commits"] > before["commits"] and after["counting_since"] > before["counting_since"]
    assert observer.reading(before, after, 1.0) == {}


def test_a_counter_gone_backwards_gives_no_figure_and_a_reset_none_at_all() -> None:
    observer = DatabaseCounters(open_target("sqlite://"))
    before = {"commits": 100.0, "reads": 50.0, "cache_hits": 90.0, "cache_misses": 10.0, "counting_since": 1000.0}
    after = {"commits": 130.0, "reads": 20.0, "cache_hits": 117.0, "cache_misses": 13.0, "counting_since": 1000.7}
    assert observer.reading(before, after, 2.0) == {"commits_s": 15.0, "cache_hits_s": 13.5, "cache_misses_s": 1.5,
                                                     "buffer_hit_pct": 90.0}
    assert observer.reading(before, dict(after, counting_since=1010.0), 2.0) == {}
    assert observer.reading(None, after, 2.0) == {} and observer.reading(before, None, 2.0) == {}
    no_requests = dict(after, cache_hits=90.0, cache_misses=10.0)
    assert "buffer_hit_pct" not in observer.reading(before, no_requests, 2.0)


def test_a_lost_connection_loses_one_sample_and_the_next_reconnects(server: Target) -> None:
    observer = DatabaseCounters(server)
    observer.step_started(1, 1)
    try:
        assert observer.sample()
        admin = server.connect()
        server.set_autocommit(admin)
        try:
            if server.dialect == "postgresql":
                execute(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                               " WHERE datname = current_database() AND pid <> pg_backend_pid()")
            else:
                rows = execute(admin, "SELECT id FROM information_schema.PROCESSLIST"
                                      " WHERE db = DATABASE() AND id <> CONNECTION_ID()")
                assert rows
                for (thread,) in rows:
                    execute(admin, f"KILL {int(thread)}")
        finally:
            admin.close()
        assert observer.sample() is None
        assert observer.sample()
    finally:
        observer.step_ended(1)


def test_an_unreachable_server_gives_no_samples_and_no_errors() -> None:
    observer = DatabaseCounters(open_target("postgresql://postgres@127.0.0.1:1/nothing"))
    observer.step_started(1, 1)
    assert observer.conn is None and observer.sample() is None
    observer.step_ended(1)


def test_sqlite_has_no_counters(sqlite_url: str) -> None:
    target = open_target(sqlite_url)
    conn = target.connect()
    try:
        assert target.read_counters(conn) == {}
    finally:
        conn.close()
    observer = DatabaseCounters(target)
    observer.step_started(1, 1)
    before, after = observer.sample(), observer.sample()
    observer.step_ended(1)
    assert before == {} and after == {} and observer.reading(before, after, 1.0) == {}


@pytest.mark.postgresql
def test_sampled_at_the_boundaries_on_the_observers_thread(pg_url: str) -> None:
    target = open_target(pg_url)
    conn = scratch_table(target)
    observer = DatabaseCounters(target)
    observers = Observers([observer])
    try:
        observers.start_step(1, 1, time.time() + 0.2, [(0.0, 0.8, True)])
        time.sleep(0.3)  # the first sample is taken 0.2 s from now
        commit_rows(target, conn, ROWS, count=50)
        interval = observers.interval(0)
    finally:
        observers.end_step(1)
        conn.close()
    assert observer.conn is None
    assert interval["database"]["commits_s"] * 0.8 >= 50 * 0.9  # its window measured on the clock, so near 0.8 s
    assert observers.steady() == interval
