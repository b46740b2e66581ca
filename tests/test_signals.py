"""Ctrl-C and SIGTERM at any moment: one line, exit 130 or 143 within 5 s, nothing left half done.

The moments a user hits: while a connection waits for a server that never answers (a C
driver holds the main thread there: tpsbench.core.watchdog), and anywhere in a run,
from loading the libraries through the steps to the honesty check and the report,
which a sweep of signal times over one short run reaches.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tpsbench.results.store import ResultsStore

EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
#: the longest a signal may take to end the process
WITHIN_S = 5.0


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}


def _signal_after(args: list[str], cwd: Path, after_s: float, sig: int) -> tuple[int, float, str, str]:
    """Start ``tpsbench ARGS``, send ``sig`` after ``after_s``; (exit code, seconds it took
    after the signal (0 if it ended before), stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.wait(after_s)
        out, err = proc.communicate()
        return proc.returncode, 0.0, out, err
    except subprocess.TimeoutExpired:
        pass
    proc.send_signal(sig)
    sent = time.monotonic()
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, time.monotonic() - sent, out, err


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never says a word: a hung server, for real."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


DRIVERS = ["postgresql+psycopg", "mysql+pymysql", "mysql+mysqldb"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_signal_while_connecting_to_a_server_that_never_answers(driver: str, sig: int, silent_server: int,
                                                                  tmp_path: Path, require) -> None:
    if driver.endswith("mysqldb") and importlib.util.find_spec("MySQLdb") is None:
        require("mysqlclient (pip install mysqlclient)", "not installed")
    code, took, _, err = _signal_after(["run", "tpcc", "--db", f"{driver}://u@127.0.0.1:{silent_server}/x"],
                                       tmp_path, 2.5, sig)
    assert took > 0, f"it ended before the signal: {err}"
    assert code == EXIT[sig] and took < WITHIN_S, (code, took, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tpsbench: ") and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []  # nothing stored: the run never started


@pytest.fixture(scope="module")
def built_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("built")
    result = subprocess.run([sys.executable, "-m", "tpsbench", "build", "tpcc", "--scale", "1", "--db",
                             f"sqlite:///{folder / 'tpcc.db'}"], cwd=folder, env=_env(), capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    return folder / "tpcc.db"


#: seconds after the start at which a signal arrives: from the libraries loading to the report
#: (not sooner: in the first few tenths of a second Python itself is starting, which no
#: program can handle; test_cli_errors covers the first moment tpsbench's own code runs)
MOMENTS = [0.8, 1.4, 2.0, 2.6, 3.2, 3.8, 4.4, 5.0, 5.8, 6.6]


@pytest.mark.slow
def test_a_signal_at_any_moment_of_a_run_ends_it_cleanly(built_db: Path, tmp_path: Path) -> None:
    def one(index: int) -> tuple[float, int, tuple[int, float, str, str], Path, subprocess.CompletedProcess | None]:
        folder = tmp_path / f"at{index}"
        folder.mkdir()
        shutil.copy(built_db, folder / "tpcc.db")
        sig = (signal.SIGINT, signal.SIGTERM)[index % 2]
        args = ["run", "tpcc", "--db", f"sqlite:///{folder / 'tpcc.db'}", "--results",
                f"sqlite:///{folder / 'results.db'}", "--users", "1,2", "--rampup", "0.5s", "--duration", "1s",
                "--interval", "0.5s"]
        outcome = _signal_after(args, folder, MOMENTS[index], sig)
        if not outcome[1]:  # over before the signal
            return MOMENTS[index], sig, outcome, folder, None
        # then a run on the same data: none left marked active, nothing damaged (its honesty check)
        again = subprocess.run([sys.executable, "-m", "tpsbench", *args[:5], f"sqlite:///{folder / 'again.db'}",
                                "--users", "1", "--rampup", "0s", "--duration", "0.5s", "--interval", "0.5s"],
                               cwd=folder, env=_env(), capture_output=True, text=True, timeout=120, check=False)
        return MOMENTS[index], sig, outcome, folder, again

    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(one, range(len(MOMENTS))))
    interrupted = 0
    for moment, sig, (code, took, _, err), folder, again in outcomes:
        where = f"signal {sig} at {moment}s: exit {code} after {took:.1f}s\n{err}"
        assert "Traceback" not in err, where
        if again is None:  # the run was over before the signal
            assert code == 0, where
            continue
        interrupted += 1
        assert code == EXIT[sig] and took < WITHIN_S, where
        results = folder / "results.db"
        if results.exists():  # a run stored before the signal is kept, and not left running
            statuses = {r.status for r in ResultsStore(f"sqlite:///{results}", create=False).list_runs()}
            assert statuses <= {"interrupted", "completed"}, where + str(statuses)
        assert again.returncode == 0, where + again.stderr
    assert interrupted >= len(MOMENTS) // 2  # the sweep reached the run, not only its end
