"""The sessions' waits observer (db_waits) against the real servers: known waits in, their shares out.

A session of the test holds a lock (an uncommitted UPDATE of a row, or LOCK TABLE on a
hot table) while other sessions ask for it; the observer must then see those sessions
waiting on a lock of that table. An idle database must show no active session, the
observers' own connections included, and a look the server does not answer must give
no figures and no error, with the sampling thread gone once the step is over.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_of

import tpsbench
from tpsbench.core.target import Target
from tpsbench.measure.db_counters import DatabaseCounters
from tpsbench.measure.db_waits import DbWaits
from tpsbench.measure.observers import Observers
from tpsbench.measure.reachability import Reachability
from tpsbench.targets import open_target

SERVERS = [pytest.param("pg_url", marks=pytest.mark.postgresql), pytest.param("mysql_url", marks=pytest.mark.mysql)]
#: sessions blocked behind the held lock
BLOCKED = 2


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> Target:
    return open_target(request.getfixturevalue(request.param))


def execute(conn: Any, sql: str) -> None:
    cur = conn.cursor()
    try:
        cur.execute(sql)
    finally:
        cur.close()


def over(observer: DbWaits, seconds: float) -> dict[str, float]:
    """The observer's reading over the next ``seconds``."""
    before = observer.sample()
    time.sleep(seconds)
    return observer.reading(before, observer.sample(), seconds)


def db_waits_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "db_waits" and t.is_alive()]


@pytest.fixture
def held_row(server: Target) -> Iterator[Target]:
    """Table ``hot`` with one row, UPDATEd by a transaction left open, and BLOCKED sessions
    UPDATEing the same row behind it (each gives up after 10 s at most)."""
    holder = server.connect()
    execute(holder, "CREATE TABLE hot (id INT PRIMARY KEY, v INT)")
    execute(holder, "INSERT INTO hot VALUES (1, 0)")
    holder.commit()
    execute(holder, "UPDATE hot SET v = v + 1 WHERE id = 1")

    def wait_for_the_row() -> None:
        conn = server.connect()
        try:
            execute(conn, "SET lock_timeout = '10s'" if server.dialect == "postgresql"
                    else "SET innodb_lock_wait_timeout = 10")
            execute(conn, "UPDATE hot SET v = v + 1 WHERE id = 1")
        except Exception:  # noqa: BLE001 - a timeout is the end of its wait either way
            pass
        finally:
            conn.close()

    blocked = [threading.Thread(target=wait_for_the_row) for _ in range(BLOCKED)]
    for thread in blocked:
        thread.start()
    try:
        yield server
    finally:
        holder.rollback()
        for thread in blocked:
            thread.join()
        holder.close()


def test_a_row_lock_held_by_another_session_shows_as_lock_waits_on_its_table(held_row: Target) -> None:
    observer = DbWaits(held_row)
    observer.step_started(1, BLOCKED)
    try:
        time.sleep(0.3)  # the blocked sessions are in their wait
        reading = over(observer, 1.0)
    finally:
        observer.step_ended(1)
    assert reading["active"] == pytest.approx(BLOCKED, abs=0.2)
    assert reading["lock_pct"] >= 90 and reading["lock_on.hot"] >= 90, reading
    assert reading["cpu_pct"] <= 10
    events = {k for k in reading if k.startswith("event.")}
    if held_row.dialect == "postgresql":  # the first waits for the holder's transaction, the next for the row
        assert events <= {"event.Lock:transactionid", "event.Lock:tuple"} and events, reading
        assert set(reading) >= {"lwlock_pct", "io_pct", "ipc_pct"}
    else:  # no performance_schema: neither I/O nor internal waits are told
        assert events == {"event.Lock:InnoDB record lock"}, reading
        assert "io_pct" not in reading and "lwlock_pct" not in reading
    assert not db_waits_threads()


@pytest.mark.mysql
def test_a_metadata_lock_wait_on_mariadb_is_a_lock_wait_by_its_state(mysql_url: str) -> None:
    """An ALTER TABLE waits for a transaction that read the table: PROCESSLIST's STATE
    names the wait ("Waiting for table metadata lock"); no table is told for it."""
    target = open_target(mysql_url)
    holder = target.connect()
    execute(holder, "CREATE TABLE hot (id INT PRIMARY KEY)")
    execute(holder, "SELECT * FROM hot")  # the open transaction holds the table's metadata lock

    def alter() -> None:
        conn = target.connect()
        try:
            execute(conn, "SET SESSION lock_wait_timeout = 10")
            execute(conn, "ALTER TABLE hot ADD COLUMN v INT")
        except Exception:  # noqa: BLE001 - a timeout is the end of its wait either way
            pass
        finally:
            conn.close()

    altering = threading.Thread(target=alter)
    altering.start()
    observer = DbWaits(target)
    observer.step_started(1, 1)
    try:
        time.sleep(0.3)
        reading = over(observer, 1.0)
    finally:
        observer.step_ended(1)
        holder.rollback()
        altering.join()
        holder.close()
    assert reading["active"] == pytest.approx(1.0, abs=0.1) and reading["lock_pct"] >= 90, reading
    assert reading["event.Lock:Waiting for table metadata lock"] >= 90, reading
    assert not any(k.startswith("lock_on.") for k in reading)


def test_an_idle_database_has_no_active_session_the_observers_neither(server: Target) -> None:
    """The other observers' connections probe the database all the while; on PostgreSQL
    they carry the observers' application_name and are left out exactly. MariaDB has no
    such name: the probe's SELECT 1, well under a millisecond, is seen at most rarely (on
    two busy cores, in one or two samples of ten: a session at work would be 1.0)."""
    waits = DbWaits(server)
    observers = Observers([waits, Reachability(server), DatabaseCounters(server)])
    observers.start_step(1, 1, time.time(), [(0.0, 1.0, True)])
    try:
        reading = observers.interval(0)["db_waits"]
    finally:
        observers.end_step(1)
    assert reading["active"] <= (0.0 if server.dialect == "postgresql" else 0.25), reading
    assert set(reading) >= {f"{kind}_pct" for kind in server.wait_kinds}
    assert not db_waits_threads()


def test_an_unreachable_server_gives_no_figures_and_no_error() -> None:
    observer = DbWaits(open_target("postgresql://postgres@127.0.0.1:1/nothing"))
    observer.step_started(1, 1)
    try:
        reading = over(observer, 0.5)
    finally:
        observer.step_ended(1)
    assert reading == {} and observer.sample().looks == 0
    assert not db_waits_threads()


@pytest.mark.postgresql
@pytest.mark.slow  # a run: the quick lane reads waits in the others
def test_a_dropped_connection_costs_looks_not_the_step(pg_url: str) -> None:
    target = open_target(pg_url)
    observer = DbWaits(target)
    observer.step_started(1, 1)
    try:
        time.sleep(0.3)
        admin = target.connect()
        target.set_autocommit(admin)
        execute(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                       " WHERE datname = current_database() AND application_name = 'tpsbench observer'")
        admin.close()
        time.sleep(0.2)  # the look after the drop has failed; the next is a second after it
        dropped = over(observer, 0.5)
        time.sleep(0.8)
        again = over(observer, 0.5)
    finally:
        observer.step_ended(1)
    assert dropped == {}  # a window without a look answered: no figures
    assert again["active"] == 0.0  # connected again: figures
    assert not db_waits_threads()


@pytest.mark.slow
def test_a_locked_hot_table_during_a_sysbench_step(server: Target, tmp_path: Path) -> None:
    """Another session locks sysbench's table for the steady window's last 3.4 s of 4:
    PostgreSQL by LOCK TABLE ... IN ACCESS EXCLUSIVE MODE, MariaDB by taking every row
    (SELECT ... FOR UPDATE; its users' statements are prepared ones, COMMAND 'Execute').
    The step's readings name the lock and its table, and the server's CPU."""
    url = server.url.render_as_string(hide_password=False)
    tpsbench.build("sysbench", 1, url, show_progress=False, options={"table_size": "1000"})
    ramped = threading.Event()

    def lock_the_table() -> None:
        conn = server.connect()
        try:
            if ramped.wait(120):  # the ramp-up's line: the steady window begins
                time.sleep(0.3)
                execute(conn, "LOCK TABLE sbtest1 IN ACCESS EXCLUSIVE MODE" if server.dialect == "postgresql"
                        else "SELECT id FROM sbtest1 FOR UPDATE")
                time.sleep(3.4)
            conn.commit()
        finally:
            conn.close()

    locker = threading.Thread(target=lock_the_table)
    locker.start()
    try:
        record = tpsbench.run(tpsbench.RunConfig("sysbench", url, users=[4], rampup_s=1, duration_s=4, interval_s=1,
                                                 results_url=f"sqlite:///{tmp_path / 'r.db'}",
                                                 options={"mode": "oltp_update_non_index"}),
                              live=lambda line: ramped.set() if line.startswith("[ ") else None)
    finally:
        ramped.set()
        locker.join()
    assert record.status == "completed"
    steady = record.store.load_run(record.run_id).readings(1)
    waits, cpu = steady["db_waits"], steady["host_cpu"]
    assert waits["active"] >= 1.5 and waits["lock_pct"] >= 50 and waits["lock_on.sbtest1"] >= 50, waits
    event = "event.Lock:relation" if server.dialect == "postgresql" else "event.Lock:InnoDB record lock"
    assert waits[event] >= 50, waits
    assert cpu["server"] > 0 and cpu["others"] >= 0, cpu


@pytest.mark.slow
def test_sqlite_has_no_waits_observer_and_no_server_share(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    url = copy_of(built_tpcc_sqlite, tmp_path)
    record = tpsbench.run(tpsbench.RunConfig("tpcc", url, users=[1], rampup_s=0.5, duration_s=1.0, interval_s=0.5,
                                             results_url=f"sqlite:///{tmp_path / 'r.db'}", seed=1), live=None)
    steady = record.store.load_run(record.run_id).readings(1)
    assert "db_waits" not in steady and "server" not in steady["host_cpu"]
    assert steady["host_cpu"]["driver"] > 0 and steady["host_cpu"]["driver_peak"] > 0


READINGS = Path(__file__).parent / "fixtures" / "readings"


@pytest.mark.parametrize("path", sorted(READINGS.glob("*.json")), ids=lambda p: p.stem)
def test_the_recorded_readings_carry_the_agreed_figures(path: Path) -> None:
    """bench/record_readings.py's fixtures, on which the bottleneck verdict is tested:
    every step has host_cpu's split, and db_waits' shares where the database has sessions."""
    recorded = json.loads(path.read_text())
    target = open_target({"postgresql": "postgresql://x/y", "mysql": "mysql+pymysql://x/y",
                          "sqlite": "sqlite:///x.db"}[recorded["server"]])
    for step in recorded["steps"]:
        cpu, waits = step["readings"]["host_cpu"], step["readings"].get("db_waits")
        assert {"others", "driver_peak", "busy_allowed", "allowed_pct"} <= set(cpu)
        assert ("server" in cpu) == (recorded["server"] != "sqlite")  # every server here is local
        if target.wait_kinds:
            assert {"active", *(f"{kind}_pct" for kind in target.wait_kinds)} <= set(waits)
        else:
            assert waits is None
        assert step["tps"] > 0 and step["paced"] == ("pacing" in step["readings"])
    if path.stem.startswith("locks_"):  # the lock was held for most of the steady window
        waits = recorded["steps"][0]["readings"]["db_waits"]
        assert waits["lock_pct"] >= 50 and waits["lock_on.sbtest1"] >= 50
