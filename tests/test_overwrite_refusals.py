"""Nothing already built or recorded is destroyed by a command pointed at the wrong thing,
through the real CLI: ``--output`` of report, compare and plan; ``drop`` and ``build
--drop-existing`` under an active run; ``--results`` naming a database that is not a store.

Each refusal is one line, a non-zero exit, no traceback, and the files involved are the
same bytes after (SHA-256), or the server's table the same rows.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from conftest import cli_in_process, copy_of

from tpsbench.core.meta import ACTIVE, write_meta
from tpsbench.results.schema import marker_table, store_info_table
from tpsbench.targets import open_target

#: every test here runs the CLI on a store of two recorded runs (a few CLI runs to make)
pytestmark = pytest.mark.slow


def tpsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in ``cwd`` with no TPSBENCH_ settings: a process of its own for run and build,
    which start processes, the others in this one (conftest.cli_in_process)."""
    if args[0] not in ("run", "build"):
        return cli_in_process(*args, cwd=cwd)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def refused(result: subprocess.CompletedProcess, *needles: str) -> str:
    """The one error line of a refused command, checked: non-zero exit, no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tpsbench: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record(built: Path, folder: Path, users: str) -> Path:
    """``folder`` with a copy of the TPC-C database ``built`` (tpcc.db) and a store
    (results.db) of two runs, on disk A and on disk B, of a step for each of ``users``."""
    db = copy_of(built, folder)
    for label in ("disk A", "disk B"):
        done = tpsbench("run", "tpcc", "--db", db, "--results", f"sqlite:///{folder / 'results.db'}", "--users",
                        users, "--rampup", "0s", "--duration", "1s", "--interval", "0.5s", "--storage", label,
                        cwd=folder)
        assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="module")
def recorded(built_tpcc_sqlite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of three steps each (:func:`record`), so that report, compare and plan all
    have something to write."""
    return record(built_tpcc_sqlite, tmp_path_factory.mktemp("recorded"), "1,2,3")


@pytest.fixture
def here(recorded: Path, tmp_path: Path) -> Path:
    """A copy of :func:`recorded` this test may change."""
    for name in ("tpcc.db", "results.db"):
        shutil.copy(recorded / name, tmp_path / name)
    return tmp_path


# -- --output ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("command", "target", "extra"), [
    (["report"], "results.db", []),                          # the store it reads
    (["report", "--format", "html"], "tpcc.db", ["--force"]),  # a built database, even with --force
    (["compare", "1", "2"], "results.db", ["--force"]),
    (["plan", "1"], "tpcc.db", []),
])
def test_output_never_writes_over_a_database(here: Path, command: list[str], target: str, extra: list[str]) -> None:
    before = {name: digest(here / name) for name in ("tpcc.db", "results.db")}
    done = tpsbench(*command, "--results", "sqlite:///results.db", "--output", target, *extra, cwd=here)
    refused(done, f"refusing to write over {target}: it is a SQLite database")
    assert {name: digest(here / name) for name in before} == before


@pytest.mark.parametrize(("command", "existing", "content"), [
    (["report", "--format", "csv"], "notes.txt", "my notes\n"),  # a file of someone's
    (["compare", "1", "2"], "notes.md", "# results by hand\n"),
    (["plan", "1"], "a.html", None),  # an HTML report is not a plan
    (["report", "--format", "json"], "a.html", None),  # nor a JSON one
])
def test_output_refuses_a_file_that_is_not_an_earlier_output_of_its_kind(
        here: Path, command: list[str], existing: str, content: str | None) -> None:
    if content is None:
        assert tpsbench("report", "--format", "html", "--results", "sqlite:///results.db", "--output", existing,
                        cwd=here).returncode == 0
    else:
        (here / existing).write_text(content)
    before = digest(here / existing)
    done = tpsbench(*command, "--results", "sqlite:///results.db", "--output", existing, cwd=here)
    refused(done, f"refusing to write over {existing}", "--force")
    assert digest(here / existing) == before


@pytest.mark.parametrize("command", [["report", "--format", "markdown"], ["report", "--format", "html"],
                                     ["report", "--format", "csv"], ["report", "--format", "json"],
                                     ["report"], ["compare", "1", "2"], ["plan", "1"]])
def test_an_earlier_output_of_the_same_kind_is_replaced_and_force_replaces_any_other_file(
        here: Path, command: list[str]) -> None:
    args = [*command, "--results", "sqlite:///results.db", "--output"]
    for _ in range(2):
        done = tpsbench(*args, "out", cwd=here)
        assert done.returncode == 0 and done.stderr.startswith("wrote out ("), done.stderr
    (here / "notes.txt").write_text("my notes\n")
    assert tpsbench(*args, "notes.txt", "--force", cwd=here).returncode == 0
    assert (here / "notes.txt").read_bytes() == (here / "out").read_bytes()


# -- drop and rebuild under an active run ------------------------------------------------------
def mark_active(url: str) -> str:
    """Mark the TPC-C build at ``url`` as a run on another load host does (its pid cannot
    be looked at from here, so the mark stands): run 7, started at 02:00 UTC."""
    mark = "loadhost2 4242 2026-01-02T02:00:00+00:00 7"
    write_meta(open_target(url), "tpcc", {ACTIVE: mark})
    return mark


@pytest.mark.parametrize("command", [["drop", "tpcc"], ["build", "tpcc", "--scale", "1", "--drop-existing"]])
def test_drop_and_rebuild_are_refused_while_a_run_is_active_unless_forced(here: Path, command: list[str]) -> None:
    url = f"sqlite:///{here / 'tpcc.db'}"
    mark_active(url)
    before = digest(here / "tpcc.db")
    done = tpsbench(*command, "--db", url, cwd=here)
    refused(done, "a run is active on the tpcc database", "run 7 started 2026-01-02T02:00:00+00:00",
            "by pid 4242 on loadhost2", "--force")
    assert digest(here / "tpcc.db") == before
    forced = tpsbench(*command, "--db", url, "--force", cwd=here)
    assert forced.returncode == 0, forced.stderr


def test_drop_is_refused_on_postgresql_while_a_run_is_active(tpcc_pg_url: str, tmp_path: Path) -> None:
    pg_url = tpcc_pg_url  # TPC-C scale 1, the session's build copied
    mark_active(pg_url)
    checksum = "SELECT md5(string_agg(w::text, ',' ORDER BY w_id)) FROM warehouse w"
    url = sa.engine.make_url(pg_url)
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database) as conn:
        before = conn.execute(checksum).fetchone()
        refused(tpsbench("drop", "tpcc", "--db", pg_url, cwd=tmp_path), "run 7 started", "--force")
        assert conn.execute(checksum).fetchone() == before
        assert conn.execute("SELECT count(*) FROM stock").fetchone() == (100_000,)


# -- a database that is not a results store ------------------------------------------------------
def application_db(path: Path) -> str:
    """An application's SQLite database whose tables happen to be named runs and steps."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, athlete TEXT, km REAL)")
        conn.execute("CREATE TABLE steps (run_id INTEGER, n INTEGER)")
        conn.execute("INSERT INTO runs VALUES (1, 'ana', 10.5)")
    conn.close()
    return f"sqlite:///{path}"


@pytest.mark.parametrize("command", [
    ["runs"], ["report"],
    ["run", "tpcc", "--db", "sqlite:///tpcc.db", "--users", "1", "--rampup", "0s", "--duration", "1s",
     "--interval", "0.5s"],
])
def test_a_database_with_same_named_tables_is_not_taken_for_a_store(here: Path, command: list[str]) -> None:
    results = application_db(here / "app.db")
    before = {name: digest(here / name) for name in ("app.db", "tpcc.db")}
    done = tpsbench(*command, "--results", results, cwd=here)
    refused(done, "has tables named like a results store's (runs, steps) but is not one", "tpsbench_results_store")
    assert {name: digest(here / name) for name in before} == before


def test_a_store_of_an_older_layout_is_read_as_it_is_and_gains_the_marker_when_written(here: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{here / 'results.db'}")
    with engine.begin() as conn:  # what tpsbench wrote before the marker: layout 3
        marker_table.drop(conn)
        conn.execute(store_info_table.update().values(value="3"))
    engine.dispose()
    before = digest(here / "results.db")
    listed = tpsbench("runs", "--results", "sqlite:///results.db", cwd=here)
    assert listed.returncode == 0 and "disk B" in listed.stdout, listed.stderr
    assert digest(here / "results.db") == before  # a reader writes nothing
    ran = tpsbench("run", "tpcc", "--db", "sqlite:///tpcc.db", "--results", "sqlite:///results.db", "--users", "1",
                   "--rampup", "0s", "--duration", "1s", "--interval", "0.5s", cwd=here)
    assert ran.returncode == 0 and "run 3: completed" in ran.stdout, ran.stderr
    assert marker_table.name in sa.inspect(sa.create_engine(f"sqlite:///{here / 'results.db'}")).get_table_names()


def test_a_postgresql_database_with_an_applications_runs_table_is_refused_untouched(pg_url: str,
                                                                                     tmp_path: Path) -> None:
    url = sa.engine.make_url(pg_url)
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database,
                         autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (id int PRIMARY KEY, note text)")
        conn.execute("INSERT INTO runs VALUES (1, 'keep me')")
        refused(tpsbench("runs", "--results", pg_url, cwd=tmp_path), "(runs) but is not one")
        refused(tpsbench("report", "--format", "json", "--results", pg_url, cwd=tmp_path), "(runs) but is not one")
        tables = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        assert [t for (t,) in tables] == ["runs"]
        assert conn.execute("SELECT * FROM runs").fetchall() == [(1, "keep me")]
