"""Bad input ends in one line on stderr and a non-zero exit, never a traceback.

Commands that start no process run in this one (conftest.cli_in_process, which fails a
command that starts one); runs, signals and a few refusals run as ``python -m tpsbench``.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_in_process, copy_of


def tpsbench(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m tpsbench ARGS``: a process of its own, for what starts processes or takes signals."""
    full_env = {k: v for k, v in os.environ.items() if k != "TPSBENCH_DB"} | (env or {})
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tpsbench: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["build", "nosuch", "--scale", "1"], "unknown workload 'nosuch'"),
        (["build", "tpcc", "--scale", "0"], "got 0"),
        (["build", "tpcc", "--scale", "-3"], "got -3"),
        (["build", "tpcc", "--scale", "ten"], "got 'ten'"),
        (["build", "tpcc", "--scale", "1", "--db", "postgresql://postgres@127.0.0.1:1/x"], "connect failed"),
        (["build", "tpcc", "--scale", "1", "--db", "postgresql://postgres@nosuchhost.invalid/x"], "nosuchhost"),
        (["build", "tpcc", "--scale", "1", "--db", "mysql:/x//:"], "malformed database URL"),
        (["build", "tpcc", "--scale", "1", "--db", "oracle://u@h/db"], "unsupported database 'oracle'"),
        (["check", "tpcc"], "no tpcc database"),
        (["size", "tpcc", "--scale", "0"], "got 0"),
        (["build", "tpcc"], "--scale"),
        (["run", "tpcc", "--processes", "0"], "0 is not in the range x>=1"),
        (["run", "sysbench", "--processes", "-2"], "-2 is not in the range x>=1"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    """In this process; one build and one run (:data:`REAL`) as ``python -m tpsbench``, its real entry point."""
    assert_one_line_error((tpsbench if args in REAL else cli_in_process)(*args, cwd=tmp_path), needle)


#: the cases above run as ``python -m tpsbench``: the real entry point refuses a build and a run
REAL = [["build", "tpcc", "--scale", "1", "--db", "postgresql://postgres@127.0.0.1:1/x"],
        ["run", "tpcc", "--processes", "0"]]


def test_wrong_password_is_one_line(tmp_path: Path, mysql_url: str) -> None:
    url = mysql_url.replace("root@", "root:wrong-password@", 1)
    assert_one_line_error(cli_in_process("build", "tpcc", "--scale", "1", "--db", url, cwd=tmp_path), "Access denied")


def test_existing_tables_are_refused_and_kept(tmp_path: Path, built_tpcc_sqlite: Path) -> None:
    copy_of(built_tpcc_sqlite, tmp_path, "tpsbench.db")  # the default database, built
    db = tmp_path / "tpsbench.db"
    size_before = db.stat().st_size
    again = cli_in_process("build", "tpcc", "--scale", "1", cwd=tmp_path)
    assert_one_line_error(again, "already has tpcc tables", "--drop-existing")
    assert db.stat().st_size == size_before
    assert cli_in_process("check", "tpcc", cwd=tmp_path).returncode == 0


def test_procedures_on_sqlite_are_refused_before_the_run(tmp_path: Path, built_tpcc_sqlite: Path) -> None:
    """SQLite has no stored procedures: the run stops with one line and records nothing."""
    db = copy_of(built_tpcc_sqlite, tmp_path)
    result = cli_in_process("run", "tpcc", "--db", db, "--procedures", "on", "--users", "1", "--duration", "1s",
                            cwd=tmp_path)
    assert_one_line_error(result, "no stored procedures for sqlite", "--procedures off")
    assert not (tmp_path / "tpsbench-results.db").exists()


@pytest.mark.parametrize(("client", "needle"), [
    ("text", "--client text: not on sqlite"),
    ("binary", "'binary' is not one of 'fast', 'prepared', 'text', 'dbapi'"),
])
def test_a_client_path_the_database_lacks_is_refused_before_the_run(tmp_path: Path, client: str, needle: str,
                                                                    built_tpcc_sqlite: Path) -> None:
    """One line before any user starts (not a problem per user), and nothing recorded."""
    db = copy_of(built_tpcc_sqlite, tmp_path)
    result = cli_in_process("run", "tpcc", "--db", db, "--client", client, "--users", "1", "--duration", "1s",
                            cwd=tmp_path)
    assert_one_line_error(result, needle)
    assert not (tmp_path / "tpsbench-results.db").exists()


def test_build_takes_sysbench_spelling_and_the_flags_beat_dash_o(tmp_path: Path) -> None:
    """`build sysbench --tables N --table-size M`, as sysbench prepare takes them; a flag
    given wins over the same option given with -o."""
    db = f"sqlite:///{tmp_path / 'sb.db'}"
    built = cli_in_process("build", "sysbench", "--tables", "2", "--table-size", "300", "-o", "table_size=50",
                           "--db", db, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "600 rows" in built.stdout, built.stdout
    checked = cli_in_process("check", "sysbench", "--db", db, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert_one_line_error(cli_in_process("build", "sysbench", "--tables", "2", "--rand-type", "normal", "--db", db,
                                         cwd=tmp_path), "normal")


def test_ctrl_c_while_the_cli_loads_is_one_line(tmp_path: Path) -> None:
    """Ctrl-C in the first fraction of a second, while click, rich and SQLAlchemy load."""
    env = {k: v for k, v in os.environ.items() if k != "TPSBENCH_DB"}
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "build", "tpcc", "--scale", "1"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # see test_build
                            preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL))
    time.sleep(0.25)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and err.rstrip().endswith("tpsbench: interrupted")


@pytest.mark.slow  # a run: the quick lane sends SIGTERM while the CLI loads
def test_sigterm_mid_step_ends_the_run_as_interrupted_with_143(tmp_path: Path, built_tpcc_sqlite: Path) -> None:
    """A service manager's or kill's SIGTERM is handled as Ctrl-C is: the finished intervals
    are kept, the run is stored as interrupted (not left "running" for ever), exit 143."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    db, results = copy_of(built_tpcc_sqlite, tmp_path), f"sqlite:///{tmp_path / 'results.db'}"
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "run", "tpcc", "--db", db, "--results", results,
                             "--users", "2", "--rampup", "0s", "--duration", "5m", "--interval", "0.5s"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    while "users: 2" not in proc.stderr.readline():  # the first live line: the step is measuring
        assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err)
    assert time.monotonic() - sent < 5.0 and "Traceback" not in err
    assert "run 1: interrupted" in out
    runs = cli_in_process("runs", "--results", results, cwd=tmp_path)
    assert "interrupted" in runs.stdout and "running" not in runs.stdout


def handles(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``sig`` (its SigCgt mask)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (sig - 1) & 1)


@pytest.mark.parametrize("during", ["loading the libraries", "loading rows"])
def test_sigterm_while_the_cli_loads_or_builds_is_one_line_and_143(tmp_path: Path, during: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TPSBENCH_DB"}
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "build", "tpcc", "--scale", "2"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if during == "loading rows":
        assert proc.stderr is not None and "started" in proc.stderr.readline()  # the progress's first line
    else:  # once its handler is in place (a busy host may take longer than usual to get there)
        while not handles(proc.pid, signal.SIGTERM):
            assert proc.poll() is None
            time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err)
    assert "Traceback" not in err and err.rstrip().endswith("tpsbench: terminated")


def test_commands_that_only_read_create_no_file(tmp_path: Path) -> None:
    """runs, report, compare, check, drop, size and presets in an empty folder leave it
    empty: no results store, no SQLite database created on the way."""
    for args in (["runs"], ["report"], ["compare"], ["check", "tpcc"], ["drop", "tpcc"], ["drop", "sysbench"],
                 ["size", "tpcc", "--scale", "1"], ["size", "sysbench", "--scale", "2"], ["presets", "tpcc"]):
        done = cli_in_process(*args, cwd=tmp_path)
        assert "Traceback" not in done.stderr, (args, done.stderr)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_second_run_on_the_same_data_is_refused_unless_forced(tmp_path: Path, built_tpcc_sqlite: Path) -> None:
    """Two runs at once both fail their honesty checks (each counts the other's commits):
    the second says so before it starts; --force runs it anyway; once the first has
    ended, a run starts as usual."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    db, results = copy_of(built_tpcc_sqlite, tmp_path), f"sqlite:///{tmp_path / 'results.db'}"
    common = ["run", "tpcc", "--db", db, "--results", results, "--users", "1", "--rampup", "0s", "--interval", "0.5s"]
    first = subprocess.Popen([sys.executable, "-m", "tpsbench", *common, "--duration", "5m"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stderr is not None
        while "users: 1" not in first.stderr.readline():
            assert first.poll() is None
        second = cli_in_process(*common, "--duration", "1s", cwd=tmp_path)  # refused before a process starts
        assert_one_line_error(second, "another run is active", f"{first.pid}", "--force")
        forced = tpsbench(*common, "--duration", "1s", "--force", cwd=tmp_path)
        # the refused one stored nothing, so the forced one is run 2; it counts the first's commits too
        assert "run 2: completed; honesty check FAILED" in forced.stdout, forced.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert first.returncode == 143
    after = tpsbench(*common, "--duration", "1s", cwd=tmp_path)
    assert after.returncode == 0 and "run 3: completed" in after.stdout, after.stderr
