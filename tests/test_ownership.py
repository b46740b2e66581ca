"""tpsbench touches only the tables it built, and shows no password on any path.

Why: a benchmark runs on machines that hold other people's data. A database's own
``customer`` or ``sbtest1`` table is not tpsbench's because of its name: only tables
that tpsbench_meta says a tpsbench build created may be dropped or replaced. And
connection strings carry passwords, which must not reach a terminal or a log, whatever
went wrong (a malformed URL, an unknown database, a refused connection, a wrong password).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_in_process

SECRET = "S3cret-Passw0rd"
#: the tables a SQLite database holds, its own bookkeeping left out
USER_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"


def tpsbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI: a process of its own for run and build, which start processes, the others
    in this one (conftest.cli_in_process)."""
    if args[0] not in ("run", "build"):
        return cli_in_process(*args, cwd=Path.cwd(), env=env)
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def someone_elses_tables(path: Path, *tables: str) -> None:
    with sqlite3.connect(path) as conn:
        for table in tables:
            conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, note TEXT)")
            conn.execute(f"INSERT INTO {table} VALUES (1, 'theirs')")


def rows(path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT * FROM {table}").fetchall()


@pytest.mark.parametrize("command", [("drop", "tpcc"), ("build", "tpcc", "--scale", "1"),
                                     ("build", "tpcc", "--scale", "1", "--drop-existing")])
def test_tables_tpsbench_did_not_build_are_never_touched(tmp_path: Path, command: tuple[str, ...]) -> None:
    db = tmp_path / "theirs.db"
    someone_elses_tables(db, "customer", "orders")
    done = tpsbench(*command, "--db", f"sqlite:///{db}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "did not build (customer, orders)" in lines[0]
    assert rows(db, "customer") == rows(db, "orders") == [(1, "theirs")]
    with sqlite3.connect(db) as conn:
        tables = {name for (name,) in conn.execute(USER_TABLES)}
    assert tables == {"customer", "orders"}  # nothing created either: no tpsbench_meta, no warehouse


def test_sysbench_drop_keeps_tables_sysbench_prepared(tmp_path: Path) -> None:
    db = tmp_path / "sb.db"
    someone_elses_tables(db, "sbtest1", "sbtest2")
    done = tpsbench("drop", "sysbench", "--db", f"sqlite:///{db}")
    assert done.returncode == 2 and "did not build (sbtest1, sbtest2)" in done.stderr
    assert rows(db, "sbtest1") == [(1, "theirs")]


@pytest.mark.slow
def test_what_tpsbench_built_it_drops_and_nothing_else(tmp_path: Path) -> None:
    db = tmp_path / "ours.db"
    assert tpsbench("build", "tpcc", "--scale", "1", "--db", f"sqlite:///{db}").returncode == 0
    someone_elses_tables(db, "audit_log")
    done = tpsbench("drop", "tpcc", "--db", f"sqlite:///{db}")
    assert done.returncode == 0 and "dropped 9 tpcc table(s)" in done.stdout
    with sqlite3.connect(db) as conn:
        tables = {name for (name,) in conn.execute(USER_TABLES)}
    assert tables == {"audit_log"}
    assert rows(db, "audit_log") == [(1, "theirs")]


def test_a_second_table_of_the_same_name_elsewhere_in_the_list_stops_the_drop(tmp_path: Path) -> None:
    """tpsbench built sbtest1..2; sbtest3 is someone else's: the drop refuses whole."""
    db = tmp_path / "mixed.db"
    done = tpsbench("build", "sysbench", "--tables", "2", "--table-size", "100", "--db", f"sqlite:///{db}")
    assert done.returncode == 0, done.stderr
    someone_elses_tables(db, "sbtest3")
    done = tpsbench("drop", "sysbench", "--db", f"sqlite:///{db}")
    assert done.returncode == 2 and "did not build (sbtest3)" in done.stderr
    with sqlite3.connect(db) as conn:
        tables = {name for (name,) in conn.execute(USER_TABLES)}
    assert {"sbtest1", "sbtest2", "sbtest3", "tpsbench_meta"} <= tables


PASSWORD_URLS = [
    f"postgresql://postgres:{SECRET}@127.0.0.1:abc/x",  # malformed port
    f"oracle://scott:{SECRET}@127.0.0.1/orcl",  # unsupported database
    f"postgresql://postgres:{SECRET}@127.0.0.1:1/x",  # nothing listens there
    f"postgresql://postgres@127.0.0.1:1/x?password={SECRET}",  # the password in the query
    f"mysql+pymysql://nobody:{SECRET}@127.0.0.1:3306/x",  # a refused login
]


PASSWORD_COMMANDS = [("check", "tpcc"), ("build", "tpcc", "--scale", "1"), ("size", "tpcc", "--scale", "2"),
                     ("run", "tpcc", "--users", "1", "--duration", "1s", "--rampup", "0s")]


@pytest.mark.parametrize("command, url", [
    (command, url) for command in PASSWORD_COMMANDS for url in PASSWORD_URLS
    # size reads no server, an estimate with no error to show, except where the URL itself is bad
    if command[0] != "size" or "oracle" in url or "abc" in url])
def test_no_password_is_shown_whatever_went_wrong(tmp_path: Path, url: str, command: tuple[str, ...]) -> None:
    """In this process, run and build too: each fails before it would start one (and the
    test with it, if it started one)."""
    done = cli_in_process(*command, "--db", url, cwd=tmp_path,
                          env={"TPSBENCH_RESULTS": f"sqlite:///{tmp_path / 'r.db'}"})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

