"""A custom workload file kept to its own tables: ``tpsbench build/run/check/drop custom``.

Why these tests: a workload file is SQL run on the user's database, which may hold
another application's tables. Every way a file could reach one (several statements in
one, DDL of a table it does not declare, a statement reading or writing outside its
tables, a check or counter that is no SELECT, bounds no column holds) must be refused
in one line naming the file's key, before anything runs, on every database here: so
each case goes through the real CLI against a database holding ``app_users`` with rows,
and that table's rows must come out as they went in. A file that names the table in
``reads`` may read it, and runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import slow_on
from test_custom_workload import KINDS, scratch, tpsbench_cli

from tpsbench.cli.main import main
from tpsbench.targets import open_target
from tpsbench.workloads.custom.readonly import read_only

TABLE = """
[[table]]
name = "cw_t"
create = "CREATE TABLE cw_t (id INTEGER NOT NULL PRIMARY KEY, v INTEGER)"
rows = 3
columns = { id = { gen = "sequence" }, v = { gen = "uniform", min = 1, max = 9 } }
"""
TXN = """
[[transaction]]
name = "pay"
weight = 1
statements = ["SELECT v FROM cw_t WHERE id = :x", "UPDATE cw_t SET v = v + 1 WHERE id = :x"]
params = { x = { gen = "uniform", min = 1, max = 3 } }
"""
GOOD = TABLE + TXN

CASES = Path(__file__).parent / "fixtures" / "confine_cases.toml"


def cases(kind: str) -> list[tuple[str, str, str, str]]:
    """(name, command, the file, what its one line says) of CASES' ``kind`` ("refused", "typed")."""
    out = []
    for case in tomllib.loads(CASES.read_text())[kind]:
        text = GOOD
        for old, new in case.get("replace", []):
            assert old in text, (case["name"], old)
            text = text.replace(old, new)
        out.append((case["name"], case["command"], case.get("before", "") + text + case.get("after", ""), case["says"]))
    return out


def digest(url: str, table: str) -> str:
    """A digest of ``table``'s rows (three of them)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            rows = conn.execute(sa.text(f"SELECT * FROM {table} ORDER BY id")).all()
    finally:
        engine.dispose()
    assert len(rows) == 3, rows
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def app_users(url: str) -> str:
    """A digest of app_users' rows, the other application's table (created with rows first)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            if not sa.inspect(conn).has_table("app_users"):
                conn.execute(sa.text("CREATE TABLE app_users (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(20))"))
                conn.execute(sa.text("INSERT INTO app_users VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')"))
    finally:
        engine.dispose()
    return digest(url, "app_users")


def cli(command: str, path: Path, url: str, folder: Path) -> subprocess.CompletedProcess[str]:
    args = [command, "custom", "--file", str(path), "--db", url]
    if command == "build":
        args += ["--loaders", "1", "--drop-existing"]
    if command == "run":
        args += ["--users", "1", "--rampup", "0s", "--duration", "1s", "--interval", "1s", "--processes", "1",
                 "--results", f"sqlite:///{folder / 'results.db'}"]
    return tpsbench_cli(*args, cwd=folder)


@pytest.fixture(params=KINDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    with scratch(request.param, tmp_path) as url:
        yield request.param, url


def in_process(command: str, path: Path, url: str, folder: Path, *more: str) -> tuple[int, str, str]:
    """The CLI's own entry (argument parsing, the command, its one-line errors and exit codes)
    in this process, for commands that start no process of their own: a process started
    costs seconds on a busy machine. Its exit code and what it wrote on stderr and stdout."""
    args = [command, "custom", "--file", str(path), "--db", url, *more]
    args += {"build": ["--loaders", "1", "--drop-existing"],
             "run": ["--users", "1", "--duration", "1s", "--results", f"sqlite:///{folder / 'results.db'}"]
             }.get(command, [])
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            main(args)
        except SystemExit as exc:
            return int(exc.code or 0), err.getvalue(), out.getvalue()
    return 0, err.getvalue(), out.getvalue()


def refused(cases: list[tuple[str, str, str, str]], url: str, folder: Path) -> None:
    """Each case through the CLI, on a complete build of the good file (so that a run or a
    check would run for real, and a build --drop-existing would drop it): exit 2, one line
    naming the file and what it says, no traceback, nothing built, dropped or stored,
    and app_users' rows (and the build's) as they were."""
    app_users(url)
    good = folder / "good.toml"
    good.write_text(GOOD)
    assert cli("build", good, url, folder).returncode == 0
    before = {table: digest(url, table) for table in ("app_users", "cw_t")}
    tables = sorted(open_target(url).table_names())
    for name, command, text, says in sorted(cases, key=lambda case: case[1] == "build"):  # builds replace it: last
        path = folder / f"{name}.toml"
        path.write_text(text)
        code, err, _ = in_process(command, path, url, folder)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1, (name, err)
        assert lines[0].startswith(f"tpsbench: error: {path}: ") and says in lines[0], (name, lines)
    assert {table: digest(url, table) for table in before} == before
    assert sorted(open_target(url).table_names()) == tables
    assert not (folder / "results.db").exists()


def test_a_file_reaching_outside_its_tables_is_refused_and_touches_nothing(database: tuple[str, str],
                                                                           tmp_path: Path) -> None:
    refused(cases("refused"), database[1], tmp_path)


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_bounds_beyond_a_columns_type_are_refused_before_the_build(kind: str, tmp_path: Path) -> None:
    with scratch(kind, tmp_path) as url:
        refused(cases("typed"), url, tmp_path)


READS = """
reads = ["app_users"]

[[table]]
name = "cw_orders"
create = "CREATE TABLE cw_orders (id INTEGER NOT NULL PRIMARY KEY, user_id INTEGER NOT NULL)"
indexes = ["CREATE INDEX cw_orders_user ON cw_orders (user_id)"]
rows = 3
columns = { id = { gen = "sequence" }, user_id = { gen = "uniform", min = 1, max = 3 } }

[[transaction]]
name = "order"
weight = 1
statements = [{ sql = "SELECT MAX(id) + 1 FROM cw_orders", into = ["next"] },
              "INSERT INTO cw_orders (id, user_id) SELECT :next, id FROM app_users WHERE id = :user"]
params = { user = { gen = "query", sql = "SELECT id FROM app_users" } }

[[check]]
title = "every order's user is a user"
sql = "SELECT id FROM cw_orders WHERE user_id NOT IN (SELECT id FROM app_users)"

[[counter]]
name = "orders"
sql = "SELECT COUNT(*) FROM cw_orders"
per_commit = { order = 1 }
"""


@slow_on("database", {kind: [] for kind in KINDS}, "postgresql", "mariadb")  # a run: the quick lane runs SQLite's
def test_a_file_that_reads_another_table_it_names_builds_runs_and_checks(database: tuple[str, str],
                                                                          tmp_path: Path) -> None:
    url = database[1]
    before = app_users(url)
    path = tmp_path / "reads.toml"
    path.write_text(READS)
    assert in_process("build", path, url, tmp_path)[0] == 0
    ran = cli("run", path, url, tmp_path)
    assert ran.returncode == 0 and "honesty check matches" in ran.stdout, ran.stdout + ran.stderr
    code, err, out = in_process("check", path, url, tmp_path)
    assert code == 0 and not err and "pass" in out and "FAIL" not in out, out + err
    assert app_users(url) == before


def test_drop_drops_only_what_the_build_recorded(database: tuple[str, str], tmp_path: Path) -> None:
    """A file that later names app_users as a table of its own cannot make drop (or a
    rebuild) take it: it is not among the tables the build recorded."""
    url = database[1]
    before = app_users(url)
    good, greedy = tmp_path / "good.toml", tmp_path / "greedy.toml"
    good.write_text(GOOD)
    greedy.write_text(GOOD + '[[table]]\nname = "app_users"\ncreate = "CREATE TABLE app_users (id INTEGER)"\n')
    assert cli("build", good, url, tmp_path).returncode == 0
    for command in ("drop", "build"):
        code, err, _ = in_process(command, greedy, url, tmp_path)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "named like custom's that tpsbench did not build (app_users)" in err, err
    assert digest(url, "cw_t")  # the build is there still
    assert in_process("drop", good, url, tmp_path)[:2] == (0, "")
    assert app_users(url) == before and sorted(open_target(url).table_names()) == ["app_users"]


def test_a_read_only_transaction_refuses_writes(database: tuple[str, str]) -> None:
    """What checks, counters and query generators run in: a write inside fails on every
    database here, and the connection writes again after it."""
    url = database[1]
    app_users(url)
    target = open_target(url)
    conn = target.connect()
    try:
        cur = conn.cursor()
        with pytest.raises(Exception) as raised, read_only(target.dialect, cur.execute, conn.rollback):
            cur.execute("DELETE FROM app_users")
        assert target.is_driver_error(raised.value), raised.value
        cur.execute("UPDATE app_users SET name = name WHERE id = 1")
        conn.rollback()
    finally:
        conn.close()


SEQUENCE = """
[[table]]
name = "cw_s"
create = "CREATE TABLE cw_s (id SERIAL PRIMARY KEY, v INTEGER)"

[[transaction]]
name = "t"
weight = 1
statements = ["SELECT v FROM cw_s"]

[[check]]
title = "a SELECT whose function writes"
sql = "SELECT nextval('cw_s_id_seq')"
"""


def test_a_check_whose_select_writes_through_a_function_is_stopped_by_the_read_only_transaction(
        tmp_path: Path) -> None:
    """Parsing lets a SELECT through whatever function it calls; PostgreSQL's read-only
    transaction is what keeps nextval() from advancing the sequence: one line, exit 2."""
    path = tmp_path / "sequence.toml"
    path.write_text(SEQUENCE)
    with scratch("postgresql", tmp_path) as url:
        assert in_process("build", path, url, tmp_path)[0] == 0
        code, err, _ = in_process("check", path, url, tmp_path)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "read-only transaction" in err, err
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                assert conn.execute(sa.text("SELECT is_called FROM cw_s_id_seq")).scalar_one() is False
        finally:
            engine.dispose()
