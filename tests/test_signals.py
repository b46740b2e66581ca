"""Ctrl-C, SIGTERM and SIGHUP at any moment: one line, exit 130, 143 or 129 within 5 s,
nothing left half done; sent to the process, or to its whole group as a terminal sends
them (test_group_signals has more of the latter: builds, campaigns, nohup).

The moments a user hits: while a connection waits for a server that never answers (a C
driver holds the main thread there: tpsbench.core.watchdog), and anywhere in a run,
from loading the libraries through the steps to the honesty check and the report,
which a sweep of signal times over one short run reaches; and, in this process, an
interruption just after the run is stored, which the sweep reaches only by chance.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import copy_of

from tpsbench.commands.run import RunConfig, run
from tpsbench.core.errors import raise_interruption
from tpsbench.results.store import ResultsStore

EXIT: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
#: the longest a signal may take to end the process
WITHIN_S = 5.0
#: the most a finished process takes to end (its exit handlers, Python's own shutdown);
#: a signal in those moments leaves its exit code alone (tpsbench.__main__._keep_exit_code)
ENDING_S = 0.5


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}


#: waits for the moment to send the signal, or for the process to end
Moment = Callable[[subprocess.Popen[str]], None]


def _signal_after(args: list[str], cwd: Path, moment: Moment, sig: int,
                  group: bool = False) -> tuple[int, float, str, str]:
    """Start ``tpsbench ARGS`` (in a session of its own), send ``sig`` at ``moment`` to it,
    or to its whole process group as a terminal does (``group``); (exit code, seconds it
    took after the signal (0 if it ended before), stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        moment(proc)
        if proc.poll() is not None:
            out, err = proc.communicate()
            return proc.returncode, 0.0, out, err
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, time.monotonic() - sent, out, err


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM yet, tpsbench's first act (Python's
    own start sets none)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:  # gone
        return False
    caught = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def after(seconds: float) -> Moment:
    """``seconds`` after tpsbench's own code began: before, Python itself is starting,
    which no program can handle, and which takes the longer the busier the machine is
    (past 0.8 s with 30 processes wanting its two cores)."""
    def moment(proc: subprocess.Popen[str]) -> None:
        while proc.poll() is None and not _catches_sigterm(proc.pid):
            time.sleep(0.005)
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            pass
    return moment


class SilentServer:
    """A port that accepts connections and never says a word: a hung server, for real."""

    def __init__(self, listening: socket.socket) -> None:
        self.listening = listening
        self.port: int = listening.getsockname()[1]
        self.clients: list[socket.socket] = []  # held open: a closed one would be an answer

    def connected(self, proc: subprocess.Popen[str]) -> None:
        """A moment: once ``proc`` has connected (and is waiting for the server's first
        word), rather than a fixed time that a loaded machine may not have reached yet."""
        self.listening.settimeout(0.1)
        deadline = time.monotonic() + 60.0
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                self.clients.append(self.listening.accept()[0])
            except TimeoutError:
                continue
            time.sleep(0.3)  # from its connect() into the read that waits
            return


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        server = SilentServer(listening)
        try:
            yield server
        finally:
            for client in server.clients:
                client.close()


DRIVERS = ["postgresql+psycopg", "mysql+pymysql", "mysql+mysqldb"]


@pytest.mark.parametrize(("driver", "sig"), [
    # seconds each (MySQLdb's connect, in C, waits out a timeout): the quick lane sends SIGINT to the
    # others, and test_cli_errors SIGTERM
    pytest.param(driver, sig, id=f"{driver}-{sig.name}",
                 marks=[pytest.mark.slow] if driver == "mysql+mysqldb" or sig == signal.SIGTERM else [])
    for driver in DRIVERS for sig in (signal.SIGINT, signal.SIGTERM)])
def test_a_signal_while_connecting_to_a_server_that_never_answers(driver: str, sig: int,
                                                                  silent_server: SilentServer, tmp_path: Path,
                                                                  require, deliverable_sigint: None) -> None:
    if driver.endswith("mysqldb") and importlib.util.find_spec("MySQLdb") is None:
        require("mysqlclient (pip install mysqlclient)", "not installed")
    code, took, _, err = _signal_after(["run", "tpcc", "--db", f"{driver}://u@127.0.0.1:{silent_server.port}/x"],
                                       tmp_path, silent_server.connected, sig)
    assert silent_server.clients, f"it never connected: {err}"
    assert took > 0, f"it ended before the signal: {err}"
    assert code == EXIT[sig] and took < WITHIN_S, (code, took, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tpsbench: ") and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []  # nothing stored: the run never started


#: seconds after tpsbench's code began (a tenth of a second or so after the start on an
#: idle machine) at which a signal arrives: from the libraries loading to the report
#: (test_cli_errors covers the first moment tpsbench's own code runs)
MOMENTS = [0.8, 1.4, 2.0, 2.6, 3.2, 3.8, 4.4, 5.0, 5.8, 6.6]


@pytest.mark.slow
def test_a_signal_at_any_moment_of_a_run_ends_it_cleanly(built_tpcc_sqlite: Path, tmp_path: Path,
                                                         deliverable_sigint: None) -> None:
    def one(index: int) -> tuple[float, int, tuple[int, float, str, str], Path, subprocess.CompletedProcess | None]:
        folder = tmp_path / f"at{index}"
        folder.mkdir()
        db = copy_of(built_tpcc_sqlite, folder)
        sig = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)[index % 3]
        args = ["run", "tpcc", "--db", db, "--results", f"sqlite:///{folder / 'results.db'}", "--users", "1,2",
                "--rampup", "0.5s", "--duration", "1s", "--interval", "0.5s"]
        moment = MOMENTS[index]
        outcome = _signal_after(args, folder, after(moment), sig, group=index % 2 == 0)
        if not outcome[1]:  # over before the signal
            return moment, sig, outcome, folder, None
        # then a run on the same data: none left marked active, nothing damaged (its honesty check)
        again = subprocess.run([sys.executable, "-m", "tpsbench", *args[:5], f"sqlite:///{folder / 'again.db'}",
                                "--users", "1", "--rampup", "0s", "--duration", "0.5s", "--interval", "0.5s"],
                               cwd=folder, env=_env(), capture_output=True, text=True, timeout=120, check=False)
        return moment, sig, outcome, folder, again

    with ThreadPoolExecutor(3) as pool:  # the latest moments first: the pool's last runs are then its shortest
        outcomes = list(pool.map(one, reversed(range(len(MOMENTS)))))
    interrupted = 0
    for moment, sig, (code, took, _, err), folder, again in outcomes:
        where = f"signal {sig} at {moment}s: exit {code} after {took:.1f}s\n{err}"
        assert "Traceback" not in err, where
        if again is None:  # the run was over before the signal
            assert code == 0, where
            continue
        if code == 0:  # the signal came as the finished process was ending: it changes nothing
            assert took < ENDING_S, where
            continue
        interrupted += 1
        assert code == EXIT[sig] and took < WITHIN_S, where
        results = folder / "results.db"
        if results.exists():  # a run stored before the signal is kept, and not left running
            statuses = {r.status for r in ResultsStore(f"sqlite:///{results}", create=False).list_runs()}
            assert statuses <= {"interrupted", "completed"}, where + str(statuses)
        assert again.returncode == 0, where + again.stderr
    assert interrupted >= len(MOMENTS) // 2  # the sweep reached the run, not only its end


def test_an_interruption_just_after_the_run_is_stored_ends_it_as_interrupted(built_tpcc_sqlite: Path,
                                                                            tmp_path: Path) -> None:
    """Ctrl-C (a KeyboardInterrupt in the main thread) as the run says its plan, which is
    once it is stored as running and before its steps: it is then stored as interrupted,
    with no honesty check, instead of running for ever."""
    url, results = copy_of(built_tpcc_sqlite, tmp_path), f"sqlite:///{tmp_path / 'results.db'}"

    def live(line: str) -> None:
        if line.startswith("run "):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(RunConfig("tpcc", url, users=[1], rampup_s=0.0, duration_s=1.0, interval_s=1.0, results_url=results),
            live=live)
    (stored,) = ResultsStore(results, create=False).list_runs()
    assert (stored.status, stored.honesty) == ("interrupted", {"match": None, "skipped": "interrupted before the "
                                                                                        "steps' counts were in"})


def _module_run(tmp_path: Path, name: str, command: str) -> subprocess.CompletedProcess[str]:
    """``python -m NAME`` for a module whose ``command(**kw)`` (Python source) stands in for
    tpsbench's click command, run through tpsbench's entry point."""
    (tmp_path / f"{name}.py").write_text(
        f"import os, signal, time\n{command}\n"
        "import tpsbench.cli.main as cli_main\n"
        "cli_main.cli.main = command\n"
        "from tpsbench.__main__ import entry\n"
        "entry()\n")
    return subprocess.run([sys.executable, "-m", name], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=60, check=False)


def test_a_ctrl_c_that_passed_through_exec_of_a_string_still_exits_130(tmp_path: Path) -> None:
    """CPython marks a KeyboardInterrupt that went through exec() of a string as unhandled
    even when it was handled later, and then kills ``python -m`` with SIGINT at exit
    (namedtuple, dataclasses and SQLAlchemy exec such strings as a run starts): here the
    command itself raises Ctrl-C's KeyboardInterrupt that way."""
    done = _module_run(tmp_path, "ctrl_c_in_exec", "def command(**kw):\n    exec('raise KeyboardInterrupt')")
    assert (done.returncode, done.stderr) == (130, "tpsbench: interrupted\n")


def test_a_ctrl_c_that_python_wrapped_in_another_error_is_still_an_interruption(tmp_path: Path) -> None:
    """Python 3.11 turns what a class's ``__set_name__`` raises into a RuntimeError, and
    dataclasses' fields have one: a Ctrl-C landing there, as a module is imported in the
    middle of a command, is still one line and 130, not a traceback."""
    done = _module_run(tmp_path, "wrapped", "class Field:\n"
                                            "    def __set_name__(self, owner, name):\n"
                                            "        raise KeyboardInterrupt\n"
                                            "def command(**kw):\n"
                                            "    class Record:\n"
                                            "        field = Field()")
    assert (done.returncode, done.stderr) == (130, "tpsbench: interrupted\n")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_whose_exception_a_library_swallowed_still_ends_the_command(sig: int, tmp_path: Path,
                                                                            deliverable_sigint: None) -> None:
    """numpy's random module, as it is imported, catches everything, KeyboardInterrupt
    included: a Ctrl-C landing there vanished, and the run went on to the end. Here the
    command swallows the exception of a signal it gets, then returns as if done."""
    done = _module_run(tmp_path, "swallowed", "def command(**kw):\n"
                                              "    try:\n"
                                              f"        os.kill(os.getpid(), {int(sig)})\n"
                                              "        time.sleep(5)\n"
                                              "    except BaseException:\n"
                                              "        pass")
    what = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}[sig]
    assert (done.returncode, done.stderr) == (EXIT[sig], f"tpsbench: {what}\n")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_landing_in_a_weakref_callback_is_one_line_not_a_traceback(sig: int, tmp_path: Path,
                                                                           deliverable_sigint: None) -> None:
    """Python cannot pass on what a weakref callback or a ``__del__`` raises: it prints
    "Exception ignored in", traceback and all (the import system's module locks have such
    a callback, and a SIGTERM landed in one in a full suite). The signal still ends the
    command, in one line."""
    done = _module_run(tmp_path, "in_callback", "import weakref\n"
                                                "class Thing:\n"
                                                "    pass\n"
                                                "def command(**kw):\n"
                                                "    thing = Thing()\n"
                                                f"    ref = weakref.ref(thing, lambda _: os.kill(os.getpid(), {sig}))\n"
                                                "    del thing\n"
                                                "    time.sleep(0.5)")  # then returns, as if done
    what = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}[sig]
    assert (done.returncode, done.stderr) == (EXIT[sig], f"tpsbench: {what}\n")


def test_a_run_that_starts_after_a_swallowed_signal_ends_at_once_as_interrupted(built_tpcc_sqlite: Path,
                                                                               tmp_path: Path) -> None:
    """The same, in a run: the signal came before the steps (loading its libraries), a
    library caught the exception, and the run is stored as interrupted without a step."""
    url, results = copy_of(built_tpcc_sqlite, tmp_path), f"sqlite:///{tmp_path / 'results.db'}"
    previous = signal.signal(signal.SIGTERM, raise_interruption)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        record = run(RunConfig("tpcc", url, users=[1], rampup_s=0.0, duration_s=1.0, interval_s=1.0,
                               results_url=results), live=None)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (record.status, record.outcome.signal, record.outcome.steps) == ("interrupted", signal.SIGTERM, [])
