"""A workload of one's own, from a folder outside the package.

Why: the layered layout promises that a new benchmark is one folder and nothing else:
its DDL per database, its loader, its transactions, its checks. These tests write such
a folder (``kvtoy``, a key-value table) into a temporary directory, register it the
public way (``TPSBENCH_WORKLOADS``) and build, run and check it through the public API
on SQLite and PostgreSQL, and once through the CLI. If the framework still reached into
its own workloads anywhere (a list of names, DDL under ``src/``, a dialect switch), one of
these steps would fail or the toy would have to be copied into ``src/tpsbench``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import tpsbench
import tpsbench.workloads
from tpsbench.core.errors import TpsbenchError

REPO = Path(__file__).resolve().parents[1]
NAME = "kvtoy"
#: rows per scale unit: the scale counts thousands of keys
ROWS_PER_UNIT = 1000

# -- the workload folder, as a user would write it ------------------------------------------

INIT_PY = '''
"""kvtoy: a key-value table, read and bumped by key; a user's own workload folder.

Scale N is N * 1000 keys. Every committed update adds one to both v and version of its
row, so SUM(version) counts committed updates (the honesty check) and SUM(v) - SUM(version)
stays what the build loaded (a consistency check that a broken update violates).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np

from tpsbench.core.batch import Batch
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.workload import Check, LoadParams, LoadTask, Workload

ROWS_PER_UNIT = 1000
#: rows per generated chunk (two chunks, two commits per task)
CHUNK = 500


def initial_values(seed: int, unit: int) -> np.ndarray:
    """The loaded v of keys unit * 1000 + 1 .. (unit + 1) * 1000: a stream of (seed, unit) alone."""
    return np.random.default_rng([seed, unit]).integers(0, 1_000_000, ROWS_PER_UNIT, dtype=np.int64)


class KvSession(Session):
    """One user: half reads, half updates, on a plain DB-API cursor, committing each."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        self.rng = random.Random(f"kvtoy/{ctx.seed}/{user_id}")
        self.keys = ctx.scale * ROWS_PER_UNIT
        mark = target.placeholder()
        self.read_sql = f"SELECT v FROM kv WHERE k = {mark}"
        self.update_sql = f"UPDATE kv SET v = v + 1, version = version + 1 WHERE k = {mark}"
        self.rebind(conn)

    def rebind(self, conn: Any) -> None:
        self.conn = conn
        self.cur = conn.cursor()

    def next_transaction(self) -> str:
        return "read" if self.rng.random() < 0.5 else "update"

    def inputs(self, name: str) -> object:
        return (self.rng.randint(1, self.keys),)

    def execute(self, name: str, inputs: object) -> bool:
        try:
            if name == "read":
                self.cur.execute(self.read_sql, inputs)
                if self.cur.fetchone() is None:
                    raise RuntimeError(f"key {inputs[0]} is missing")
            else:
                self.cur.execute(self.update_sql, inputs)
                if self.cur.rowcount != 1:
                    raise RuntimeError(f"update of key {inputs[0]} changed {self.cur.rowcount} rows")
            self.conn.commit()
            return True
        except Exception:
            try:
                self.conn.rollback()
            except Exception:
                pass
            raise


class KvWorkload(Workload):
    """A key-value toy: SELECT v by key, UPDATE v and version by key."""

    name = "kvtoy"
    tables = ("kv",)
    scale_unit = "thousand keys"
    transaction_names = ("read", "update")

    def __init__(self) -> None:
        self.scale = 1
        self.seed = 0

    # -- build ---------------------------------------------------------------------
    def constants(self, seed: int) -> dict[str, int]:
        return {}

    def tasks(self, scale: int) -> list[LoadTask]:
        return [LoadTask("kv", (unit,)) for unit in range(scale)]

    def generate(self, task: LoadTask, params: LoadParams) -> Iterator[Batch]:
        (unit,) = task.key
        values = initial_values(params.seed, unit)
        first = unit * ROWS_PER_UNIT + 1
        for start in range(0, ROWS_PER_UNIT, CHUNK):
            yield Batch("kv", {
                "k": np.arange(first + start, first + start + CHUNK, dtype=np.int64),
                "v": values[start:start + CHUNK],
                "version": np.zeros(CHUNK, dtype=np.int64),
            })

    def expected_rows(self, scale: int, seed: int) -> dict[str, int]:
        return {"kv": scale * ROWS_PER_UNIT}

    def loaded_sum(self) -> int:
        """SUM(v) right after the build, regenerated from the seed (cheap at this size)."""
        return int(sum(int(initial_values(self.seed, unit).sum()) for unit in range(self.scale)))

    # -- check ---------------------------------------------------------------------
    def verify_schema(self, target: Target) -> dict[str, str]:
        """The build's metadata; keeps its scale and seed, which the checks need."""
        meta = super().verify_schema(target)
        self.scale, self.seed = int(meta.get("scale", "1")), int(meta.get("seed", "0"))
        return meta

    def checks(self) -> list[Check]:
        """Conditions on the verified build (check() calls verify_schema first)."""
        rows = self.scale * ROWS_PER_UNIT
        return [
            Check(1, "every key of the build is there once",
                  f"SELECT 1 WHERE (SELECT COUNT(*) FROM kv WHERE k BETWEEN 1 AND {rows}) <> {rows}"
                  f" OR (SELECT COUNT(*) FROM kv) <> {rows}"),
            Check(2, "SUM(v) - SUM(version) is the loaded SUM(v)",
                  f"SELECT 1 WHERE (SELECT SUM(v) - SUM(version) FROM kv) <> {self.loaded_sum()}"),
            Check(3, "no row has a negative version", "SELECT k FROM kv WHERE version < 0"),
        ]

    # -- run -----------------------------------------------------------------------
    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        return KvSession(ctx, user_id, users, conn, target)

    def database_counts(self, conn: Any) -> dict[str, int]:
        cur = conn.cursor()
        try:
            cur.execute("SELECT COALESCE(SUM(version), 0) FROM kv")
            total = int(cur.fetchone()[0])
        finally:
            cur.close()
            conn.rollback()
        return {"sum_version": total}

    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        return {"sum_version": commits.get("update", 0)}


WORKLOAD = KvWorkload
'''

SQLITE_SQL = """\
-- kvtoy for SQLite: k INTEGER PRIMARY KEY is the rowid.
CREATE TABLE kv (
    k       INTEGER NOT NULL PRIMARY KEY,
    v       INTEGER NOT NULL,
    version INTEGER NOT NULL
);

-- indexes
CREATE INDEX kv_version ON kv(version);
"""

POSTGRESQL_SQL = """\
-- kvtoy for PostgreSQL.
CREATE TABLE kv (
    k       INTEGER NOT NULL,
    v       INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (k)
);

-- indexes
CREATE INDEX kv_version ON kv(version);
"""

SCALE_FACTORS = """\
[presets]
toy = { scale = 2, note = "two thousand keys" }
"""


def write_workload(root: Path) -> Path:
    """``root/kvtoy``: the whole workload, and nothing of it anywhere else."""
    folder = root / NAME
    (folder / "schemas").mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(INIT_PY).lstrip())
    (folder / "schemas" / "sqlite.sql").write_text(SQLITE_SQL)
    (folder / "schemas" / "postgresql.sql").write_text(POSTGRESQL_SQL)
    (folder / "scale_factors.toml").write_text(SCALE_FACTORS)
    return folder


def src_status() -> set[str]:
    """``git status`` of src/ (other work in progress included: compared before and after)."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "src"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return set(out.splitlines())


def assert_nothing_written_to_src(before: set[str]) -> None:
    """No trace of the toy under src/: git sees no new kvtoy path, no kvtoy folder appeared.

    Why not ``before == after``: other engineers edit this working tree at the same time,
    so unrelated paths may change during the test; only the toy's own must not appear.
    """
    new = src_status() - before
    assert not [line for line in new if NAME in line], new
    assert not (REPO / "src" / "tpsbench" / "workloads" / NAME).exists()
    assert not list((REPO / "src").rglob(f"*{NAME}*"))


@pytest.fixture
def toy_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy workload written under ``tmp_path/workloads`` and registered through
    TPSBENCH_WORKLOADS; afterwards the environment, sys.path, sys.modules and the
    registry are as before, so that no other test sees the toy."""
    root = tmp_path / "workloads"
    folder = write_workload(root)
    monkeypatch.setattr(sys, "path", list(sys.path))  # discovery appends root; restored after
    monkeypatch.setenv(tpsbench.workloads.ENV_VAR, str(root))
    tpsbench.workloads.workload_classes.cache_clear()
    try:
        yield folder
    finally:
        for module in [m for m in sys.modules if m == NAME or m.startswith(f"{NAME}.")]:
            del sys.modules[module]
        monkeypatch.undo()
        tpsbench.workloads.workload_classes.cache_clear()


def committed(record: Any, name: str) -> int:
    """Steady-state commits of ``name`` over every stored step of the run."""
    data = record.store.load_run(record.run_id)
    return sum(step.summary.txns[name].commits for step in data.steps)


def failed_checks(url: str) -> dict[int, int | None]:
    return {r.number: r.violations for r in tpsbench.check(NAME, url) if not r.passed}


@pytest.mark.slow
@pytest.mark.parametrize("database", ["sqlite_url", "pg_url"])
def test_own_workload_builds_runs_and_checks(database: str, toy_folder: Path, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    """Build, run and check the folder's workload on each database through the public API.

    Why each assertion: the build must load exactly what the loader generates (through the
    target's bulk path, workers in spawned processes importing the toy by name on
    PostgreSQL); the run must count both transactions and agree with the database's own
    SUM(version) (honesty); the toy's checks must pass before and after the run, and a
    broken update must make them fail, so that they are not vacuous.
    """
    url = request.getfixturevalue(database)
    before = src_status()
    assert tpsbench.workloads.workload_classes()[NAME].folder() == toy_folder.resolve()

    scale = 3
    built = tpsbench.build(NAME, scale, url, loaders=2, seed=7, show_progress=False)
    assert built.rows == {"kv": scale * ROWS_PER_UNIT}
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT COUNT(*), MIN(k), MAX(k), SUM(version) FROM kv")).one() == (
                scale * ROWS_PER_UNIT, 1, scale * ROWS_PER_UNIT, 0)
        assert failed_checks(url) == {}

        config = tpsbench.RunConfig(NAME, url, users=[1, 3], rampup_s=0.5, duration_s=1.5, interval_s=0.5, seed=11,
                                    results_url=f"sqlite:///{tmp_path}/results.db", storage="toy")
        record = tpsbench.run(config, live=None)
        assert record.status == "completed", record.outcome
        assert record.honesty["match"], record.honesty
        assert record.honesty["actual"]["sum_version"] > 0
        assert [step.users for step in record.store.load_run(record.run_id).steps] == [1, 3]
        assert committed(record, "read") > 0 and committed(record, "update") > 0
        assert all(step.summary.total("errors") == 0 for step in record.store.load_run(record.run_id).steps)
        assert failed_checks(url) == {}

        # a broken update (version without v) must be caught by check 2
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE kv SET version = version + 1 WHERE k = 1"))
        assert failed_checks(url) == {2: 1}
    finally:
        engine.dispose()
    assert_nothing_written_to_src(before)


def test_unregistered_toy_is_unknown_again(tmp_path: Path) -> None:
    """Why: the fixture must leave no trace, or later tests would see the toy workload."""
    assert NAME not in tpsbench.workloads.workload_classes()
    assert tpsbench.workloads.ENV_VAR not in os.environ or NAME not in os.environ[tpsbench.workloads.ENV_VAR]
    with pytest.raises(TpsbenchError, match="unknown workload 'kvtoy'"):
        tpsbench.workloads.get_workload(NAME)


def tpsbench_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
def test_cli_finds_own_workload(toy_folder: Path, sqlite_url: str, tmp_path: Path) -> None:
    """The CLI sees the folder through TPSBENCH_WORKLOADS alone: help lists it, its preset
    builds, a run completes honestly and the report shows the run.

    Why a subprocess: the CLI builds its subcommands from the registry at start, in a
    fresh interpreter, so this is what a user typing ``tpsbench run kvtoy`` gets.
    """
    before = src_status()
    results = f"sqlite:///{tmp_path}/cli-results.db"
    env = {**os.environ, "TPSBENCH_WORKLOADS": str(toy_folder), "TPSBENCH_DB": sqlite_url, "COLUMNS": "200"}
    env.pop("TPSBENCH_RESULTS", None)

    helped = tpsbench_cli("run", "--help", env=env, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert re.search(rf"^\s+{NAME}\b", helped.stdout, re.MULTILINE), helped.stdout

    built = tpsbench_cli("build", NAME, "--scale", "toy", env=env, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert f"built {NAME} scale 2" in built.stdout and "2,000 rows" in built.stdout, built.stdout

    ran = tpsbench_cli("run", NAME, "--users", "1,2", "--rampup", "0.5s", "--duration", "1.5s", "--interval",
                       "0.5s", "--seed", "5", "--storage", "cli toy", "--results", results, env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert re.search(r"^run 1: completed; honesty check matches$", ran.stdout, re.MULTILINE), ran.stdout
    assert "cli toy" in ran.stdout and "TPS" in ran.stdout, ran.stdout  # its report table

    reported = tpsbench_cli("report", "1", "--results", results, "--format", "markdown", env=env, cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    assert re.search(r"^\| cli toy \| TPS \| [1-9]", reported.stdout, re.MULTILINE), reported.stdout
    listed = tpsbench_cli("runs", "--results", results, env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert re.search(rf"\b1\b.*{NAME}.*cli toy.*completed", listed.stdout), listed.stdout

    checked = tpsbench_cli("check", NAME, env=env, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    assert not (tmp_path / "tpsbench-results.db").exists()  # every result went where --results said
    assert_nothing_written_to_src(before)
