"""``run --like RUN`` repeats a stored run's configuration elsewhere; ``compare`` then says
what differs in their environments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import cli_in_process, copy_of, scratch_pg_database
from sqlalchemy.engine import make_url

from tpsbench.commands.like import like_arguments
from tpsbench.results.store import ResultsStore

pytestmark = pytest.mark.slow

#: what a run stores about where it ran, not what it ran: it differs by nature between places
ENVIRONMENT = ("driver_host", "memory", "storage")
SHORT = ("--rampup", "0s", "--duration", "1s", "--interval", "0.5s")


def tpsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def last_run(results: str) -> int:
    return ResultsStore(results, create=False).list_runs()[-1].id


def run_config(results: str, run_id: int) -> dict[str, object]:
    config = ResultsStore(results, create=False).load_run(run_id).run.config
    return {k: v for k, v in config.items() if k not in ENVIRONMENT}


@pytest.fixture(scope="module")
def pg(built_tpcc_pg: str) -> Iterator[str]:
    """TPC-C scale 1 on PostgreSQL: the session's build, copied."""
    with scratch_pg_database(built_tpcc_pg) as url:
        yield url


@pytest.fixture(scope="module")
def runs(built_tpcc_sqlite: Path, tmp_path_factory: pytest.TempPathFactory, pg: str) -> tuple[Path, str, int, int]:
    """A SQLite run with options of its own, then the same configuration on PostgreSQL by --like."""
    folder = tmp_path_factory.mktemp("like")
    results = f"sqlite:///{folder / 'results.db'}"
    done = tpsbench("run", "tpcc", "--db", copy_of(built_tpcc_sqlite, folder), "--users", "1,2", "--repeat", "2",
                    *SHORT, "--seed", "42", "--think", "fixed:10ms", "--mix",
                    "new_order=50,payment=40,order_status=4,delivery=3,stock_level=3", "--processes", "1",
                    "--storage", "local file", "--results", results, cwd=folder)
    assert done.returncode == 0, done.stderr
    first = last_run(results)
    done = tpsbench("run", "--like", str(first), "--db", pg, "--storage", "postgres", "--results", results, cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder, results, first, last_run(results)


def test_like_repeats_the_stored_configuration_on_another_database(runs: tuple[Path, str, int, int]) -> None:
    _, results, first, second = runs
    original, repeated = run_config(results, first), run_config(results, second)
    assert original["options"]["mix"] and original["seed"] == 42 and original["repeat"] == 2  # type: ignore[index]  # options: a dict
    assert repeated == original
    store = ResultsStore(results, create=False)
    assert store.load_run(second).run.db_url.startswith("postgresql")  # type: ignore[union-attr]  # stored


def test_compare_lists_the_environment_differences_of_a_sqlite_and_a_postgresql_run(
        runs: tuple[Path, str, int, int]) -> None:
    folder, results, first, second = runs
    done = cli_in_process("compare", str(first), str(second), "--results", results, cwd=folder)
    assert done.returncode == 0, done.stderr
    section = done.stdout.partition("Environment differences")[2]
    assert "| database " in section and "sqlite+pysqlite" in section and "postgresql+psycopg" in section
    assert "| server.version " in section and "| server.shared_buffers " in section
    assert "| memory.buffer_pool_bytes " in section
    assert "| host.python " not in section  # the same interpreter ran both
    done = cli_in_process("report", str(first), str(second), "--format", "json", "--results", results, cwd=folder)
    differ = json.loads(done.stdout)["environment_differences"]
    assert differ["database"] == {str(first): "sqlite+pysqlite", str(second): "postgresql+psycopg"}
    done = cli_in_process("report", str(first), str(second), "--format", "html", "--results", results, cwd=folder)
    assert 'id="environment"' in done.stdout and "postgresql+psycopg" in done.stdout


def test_two_postgresql_runs_that_differ_in_one_server_setting(runs: tuple[Path, str, int, int], pg: str) -> None:
    folder, results, _, second = runs
    url = make_url(pg)
    with psycopg.connect(host=url.host, port=url.port or 5432, user=url.username, dbname="postgres",
                         autocommit=True) as admin:  # this database's own default, not the server's
        admin.execute(f'ALTER DATABASE "{url.database}" SET work_mem = \'8MB\'')
    done = tpsbench("run", "--like", str(second), "--db", pg, "--users", "1", "--storage", "postgres 8MB",
                    "--results", results, cwd=folder)
    assert done.returncode == 0, done.stderr
    third = last_run(results)
    assert run_config(results, third) == {**run_config(results, second), "users": [1]}  # only what was given
    done = cli_in_process("compare", str(second), str(third), "--results", results, cwd=folder)
    rows = [line for line in done.stdout.splitlines() if line.startswith("| server.")]
    assert rows and [row.split("|")[1].strip() for row in rows] == ["server.work_mem"], rows
    assert "4096 kB" in rows[0] and "8192 kB" in rows[0]


def test_like_a_bundle_s_run_reproduces_its_configuration(runs: tuple[Path, str, int, int],
                                                          built_tpcc_sqlite: Path) -> None:
    """A run exported to a bundle (tpsbench export), run again elsewhere from the file alone."""
    folder, results, first, second = runs
    bundle = folder / "two.tpsbench"
    done = tpsbench("export", str(first), str(second), "-o", str(bundle), "--results", results, cwd=folder)
    assert done.returncode == 0, done.stderr
    elsewhere = f"sqlite:///{folder / 'elsewhere.db'}"
    done = cli_in_process("run", "--like", str(bundle), "--results", elsewhere, cwd=folder)
    assert done.returncode == 2 and f"holds 2 runs ({first}, {second}); name one as" in done.stderr, done.stderr
    done = tpsbench("run", "--like", f"{bundle}:{first}", "--db", copy_of(built_tpcc_sqlite, folder, "again.db"),
                    "--results", elsewhere, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert run_config(elsewhere, last_run(elsewhere)) == run_config(results, first)
    done = cli_in_process("run", "--like", f"{bundle}:77", "--results", elsewhere, cwd=folder)
    assert done.returncode == 2 and "the bundle holds no run 77" in done.stderr, done.stderr


def test_like_refuses_an_unknown_run_or_a_word_in_one_line(runs: tuple[Path, str, int, int]) -> None:
    folder, results, _, _ = runs
    before = len(ResultsStore(results, create=False).list_runs())
    for value, said in (("999", "has no run 999"), ("abc", "--like abc: not a run id")):
        done = cli_in_process("run", "--like", value, "--results", results, cwd=folder)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert len(ResultsStore(results, create=False).list_runs()) == before


@pytest.mark.parametrize("key", ["processes", "workers"])
def test_the_processes_of_a_configuration_new_or_stored_before(key: str) -> None:
    """Runs stored before the key was "processes" said "workers": both repeat as --processes."""
    config = {"workload": "sysbench", "users": [4], key: 3}
    args = like_arguments(config)
    assert args[args.index("--processes") + 1] == "3", args


def test_the_arguments_of_a_configuration() -> None:
    config = {"workload": "sysbench", "users": [4, 8], "rampup_s": 1.5, "duration_s": 60.0, "interval_s": 5.0,
              "warmup_s": 0.0, "until_steady_s": None, "repeat": 2, "workers": None, "seed": None, "multiplex": False,
              "options": {"mode": "oltp_read_only", "think": "off", "tables": "None"}, "rates": [100.0, 200.0],
              "arrivals": "fixed", "cache": "warm", "build_scale": None}
    assert like_arguments(config, seed=9) == [
        "sysbench", "--users", "4,8", "--rampup", "1.5s", "--duration", "60.0s", "--interval", "5.0s",
        "--warmup", "0.0s", "--repeat", "2", "--seed", "9", "--mode", "oltp_read_only", "--think", "off",
        "--no-multiplex", "--rate", "100.0,200.0", "--arrivals", "fixed", "--cache", "warm"]
