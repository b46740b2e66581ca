"""TPC-C build + check on real databases: exact row counts, determinism, recovery."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from tpsbench.commands.build import build, drop
from tpsbench.commands.check import check
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import read_meta
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload

LOAD_TIME = "2026-01-02 03:04:05"
TPCC = get_workload("tpcc")


def row_counts(url: str) -> dict[str, int]:
    with open_target(url).engine.connect() as conn:
        return {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one() for t in TPCC.tables}


def assert_built_and_consistent(url: str, scale: int, loaders: int) -> None:
    result = build("tpcc", scale, url, loaders=loaders, seed=11, load_time=LOAD_TIME, show_progress=False)
    expected = TPCC.expected_rows(scale, 11)
    assert result.rows == expected
    assert row_counts(url) == expected
    results = check("tpcc", url)
    assert [r.number for r in results] == list(range(1, 13))
    assert all(r.passed for r in results), [(r.number, r.violations) for r in results]
    assert read_meta(open_target(url), "tpcc")["state"] == "complete"


ROUTINES_SQL = {
    "postgresql": "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace",
    "mysql": "SELECT routine_name FROM information_schema.routines WHERE routine_schema = DATABASE()",
}


def routines(url: str) -> set[str]:
    target = open_target(url)
    with target.engine.connect() as conn:
        return {name for (name,) in conn.exec_driver_sql(ROUTINES_SQL[target.dialect])}


@pytest.mark.slow
@pytest.mark.parametrize("url_fixture", [
    pytest.param("pg_url", marks=pytest.mark.postgresql), pytest.param("mysql_url", marks=pytest.mark.mysql)])
def test_build_creates_and_drop_removes_the_stored_procedures(url_fixture: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(url_fixture)
    build("tpcc", 1, url, loaders=2, show_progress=False)
    assert routines(url) == {"tpcc_new_order", "tpcc_payment", "tpcc_delivery"}
    drop("tpcc", url)
    assert routines(url) == set() and not open_target(url).table_names() & set(TPCC.tables)


@pytest.mark.parametrize("scale", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_sqlite_build_and_check(sqlite_url: str, scale: int) -> None:
    assert_built_and_consistent(sqlite_url, scale, loaders=1)


@pytest.mark.slow  # the quick lane builds on the servers through conftest's db_template
@pytest.mark.postgresql
@pytest.mark.parametrize("scale", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_postgresql_build_and_check(pg_url: str, scale: int) -> None:
    assert_built_and_consistent(pg_url, scale, loaders=2)


@pytest.mark.slow  # the quick lane builds on the servers through conftest's db_template
@pytest.mark.mysql
@pytest.mark.parametrize("scale", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_mariadb_build_and_check(mysql_url: str, scale: int) -> None:
    assert_built_and_consistent(mysql_url, scale, loaders=2)


def table_digests(url: str, tables: tuple[str, ...] = TPCC.tables) -> dict[str, str]:
    """md5 over every row of each of ``tables`` in primary-key order, computed by PostgreSQL."""
    target = open_target(url)
    insp = sa.inspect(target.engine)
    digests = {}
    with target.engine.connect() as conn:
        for table in tables:
            order = insp.get_pk_constraint(table)["constrained_columns"] or [
                c["name"] for c in insp.get_columns(table)
            ]
            sql = f"SELECT md5(string_agg(md5(CAST(t AS text)), '' ORDER BY {', '.join(order)})) FROM {table} t"
            digests[table] = conn.execute(sa.text(sql)).scalar_one()
    return digests


@pytest.mark.slow
@pytest.mark.postgresql
def test_same_seed_same_data_with_1_and_3_loaders(pg_url: str) -> None:
    """Scale 2 is three load tasks (ITEM and two warehouses): spread over three loader
    processes, more than the cores, where one loader generates all three in turn."""
    build("tpcc", 2, pg_url, loaders=1, seed=5, load_time=LOAD_TIME, show_progress=False)
    one = table_digests(pg_url)
    build("tpcc", 2, pg_url, loaders=3, seed=5, load_time=LOAD_TIME, show_progress=False, drop_existing=True)
    three = table_digests(pg_url)
    assert one == three
    build("tpcc", 2, pg_url, loaders=1, seed=6, load_time=LOAD_TIME, show_progress=False, drop_existing=True)
    other_seed = table_digests(pg_url, ("customer", "order_line"))
    assert other_seed["customer"] != one["customer"] and other_seed["order_line"] != one["order_line"]


@pytest.mark.slow
def test_existing_tables_need_drop_existing(sqlite_url: str) -> None:
    build("tpcc", 1, sqlite_url, seed=1, show_progress=False)
    with pytest.raises(TpsbenchError, match="already has tpcc tables"):
        build("tpcc", 1, sqlite_url, seed=2, show_progress=False)
    assert read_meta(open_target(sqlite_url), "tpcc")["seed"] == "1"
    build("tpcc", 1, sqlite_url, seed=2, show_progress=False, drop_existing=True)
    assert read_meta(open_target(sqlite_url), "tpcc")["seed"] == "2"


def test_drop_removes_only_tpsbench_tables(sqlite_url: str) -> None:
    target = open_target(sqlite_url)
    with target.engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE users_own_table (x INTEGER)")
    build("tpcc", 1, sqlite_url, show_progress=False)
    dropped = drop("tpcc", sqlite_url)
    assert sorted(dropped) == sorted(TPCC.tables)
    assert target.table_names() == {"users_own_table"}


@pytest.mark.slow
def test_interrupted_build_is_reported_and_recovered(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TPSBENCH_DB"}
    cmd = [sys.executable, "-m", "tpsbench", "build", "tpcc", "--scale", "3", "--loaders", "1"]
    # SIGINT as a terminal delivers it: a suite started in the background (`cmd &` in a
    # script) hands its children SIGINT ignored, and Python then never raises on it
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL))
    db = tmp_path / "tpsbench.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not db.exists() or db.stat().st_size < 5_000_000):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert "Traceback" not in err and err.rstrip().endswith("tpsbench: interrupted")
    checked = subprocess.run([sys.executable, "-m", "tpsbench", "check", "tpcc"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode != 0
    assert "incomplete" in checked.stderr
    rebuilt = subprocess.run(cmd[:6] + ["1", "--drop-existing"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert all(r.passed for r in check("tpcc", f"sqlite:///{db}"))
