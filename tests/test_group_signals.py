"""Signals as people send them: to the whole process group (a terminal's Ctrl-C, a closed
terminal's SIGHUP, ``kill -TERM -PGID``), at moments of a run, a build and a campaign.

Every process of the group gets the signal at once, the workers and loaders as well as
the command: the command alone decides, ends within 5 s with 130, 143 or 129 and one
line, no process prints a traceback, and none is left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import copy_of
from test_campaign import write_campaign
from test_signals import EXIT, WITHIN_S, _env, _signal_after, after

from tpsbench.commands.check import check
from tpsbench.core.errors import TpsbenchError
from tpsbench.results.store import ResultsStore

#: each test runs commands through to a signal at several moments: seconds each
pytestmark = pytest.mark.slow

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
SAID = {signal.SIGINT: "tpsbench: interrupted", signal.SIGTERM: "tpsbench: terminated",
        signal.SIGHUP: "tpsbench: hung up"}
#: how long the processes of an ended command may take to be gone (the resource tracker
#: ends once it reads the end of its pipe)
GONE_WITHIN_S = 3.0


def left_in_session(session: int) -> list[int]:
    """The processes still in ``session`` (a command started with a session of its own)
    once they had GONE_WITHIN_S to end."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == session and fields[0] != "Z":
                left.append(int(entry.name))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def run_args(folder: Path, db: str) -> list[str]:
    return ["run", "tpcc", "--db", db, "--results", f"sqlite:///{folder / 'results.db'}", "--users", "1,2",
            "--rampup", "0.5s", "--duration", "1s", "--interval", "0.5s", "--processes", "2",
            "--cache", "cached"]  # a one-warehouse database fits in memory: that is the point here, unsaid


#: (signal, seconds after tpsbench's code began): the libraries loading, the two workers
#: starting (their interpreters importing), the steps
RUN_MOMENTS = [(signal.SIGINT, 0.3), (signal.SIGTERM, 0.6), (signal.SIGHUP, 0.9), (signal.SIGINT, 1.3),
               (signal.SIGTERM, 1.8), (signal.SIGHUP, 2.5)]


def test_a_signal_to_the_whole_group_ends_a_run_as_it_ends_the_run_alone(built_tpcc_sqlite: Path, tmp_path: Path,
                                                                         deliverable_sigint: None) -> None:
    """Ctrl-C in a terminal while the workers start: a worker still importing used to die
    of it with a traceback, and the run then failed ("worker 0 was killed by signal 2
    while starting"); SIGHUP killed the run with no cleanup and left it running."""
    def one(index: int) -> tuple[int, float, tuple[int, float, str, str], list[int], Path]:
        sig, moment = RUN_MOMENTS[index]
        folder = tmp_path / f"at{index}"
        folder.mkdir()
        sessions: list[int] = []

        def at(proc: subprocess.Popen[str]) -> None:
            sessions.append(proc.pid)
            after(moment)(proc)

        outcome = _signal_after(run_args(folder, copy_of(built_tpcc_sqlite, folder)), folder, at, sig, group=True)
        return sig, moment, outcome, left_in_session(sessions[0]), folder

    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(one, range(len(RUN_MOMENTS))))
    for sig, moment, (code, took, out, err), left, folder in outcomes:
        where = f"signal {sig} at {moment}s: exit {code} after {took:.1f}s\n{err}"
        assert took > 0, "it ended before the signal: " + where
        assert code == EXIT[sig] and took < WITHIN_S, where
        assert "Traceback" not in err + out and "killed by signal" not in err, where
        assert not left, f"{where}\nprocesses left: {left}"
        # what is said beside the live output (the plan, interval and step lines): one line at most
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("run 1: ", "[ ", "step "))]
        said = [line for line in out.splitlines() if line.startswith("run 1: ")]
        assert lines == [SAID[sig]] or (not lines and said and "interrupted" in said[0]), where + out
        results = folder / "results.db"
        if results.exists():
            try:
                store = ResultsStore(f"sqlite:///{results}", create=False)
            except TpsbenchError as exc:  # the signal came as the store was made, before a run was in it
                assert "has no runs yet" in str(exc), where + str(exc)
                continue
            statuses = {r.status for r in store.list_runs()}
            assert statuses <= {"interrupted"}, where + str(statuses)


def test_nohup_keeps_a_run_going_through_sighup(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    """SIGHUP ignored from the start (``nohup tpsbench run ...``) stays ignored: the run
    outlives its terminal, as nohup promises."""
    db = copy_of(built_tpcc_sqlite, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", *run_args(tmp_path, db)], cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    after(1.5)(proc)
    os.killpg(proc.pid, signal.SIGHUP)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "run 1: completed" in out


#: (signal, seconds after the start): the tables being created, the loaders starting, loading
BUILD_MOMENTS = [(signal.SIGINT, 1.5), (signal.SIGTERM, 2.5), (signal.SIGHUP, 3.5)]


@pytest.mark.parametrize(("sig", "moment"), BUILD_MOMENTS, ids=[f"{signal.Signals(s).name}-{m}s"
                                                                for s, m in BUILD_MOMENTS])
def test_a_signal_to_the_whole_group_ends_a_build_and_its_loaders(sig: int, moment: float, pg_url: str,
                                                                  tmp_path: Path, deliverable_sigint: None) -> None:
    """A build's loader processes get the signal too: they leave it to the build, which
    ends them, says one line and leaves the build marked incomplete."""
    sessions: list[int] = []

    def at(proc: subprocess.Popen[str]) -> None:
        sessions.append(proc.pid)
        after(moment)(proc)

    code, took, out, err = _signal_after(["build", "tpcc", "--scale", "2", "--loaders", "2", "--db", pg_url],
                                         tmp_path, at, sig, group=True)
    where = f"exit {code} after {took:.1f}s\n{err}"
    assert took > 0, "it ended before the signal: " + where
    assert code == EXIT[sig] and took < WITHIN_S, where
    assert [line for line in err.splitlines() if line.strip()][-1:] == [SAID[sig]], where
    assert "Traceback" not in err + out, where
    assert not left_in_session(sessions[0])
    with pytest.raises(Exception, match="incomplete|no tpcc database"):  # never taken for a complete build
        check("tpcc", pg_url)


#: (signal, to the group or to the campaign alone)
CAMPAIGN_CASES = [(signal.SIGTERM, True), (signal.SIGHUP, True), (signal.SIGTERM, False)]


@pytest.mark.parametrize(("sig", "group"), CAMPAIGN_CASES,
                         ids=[f"{signal.Signals(s).name}-{'group' if g else 'pid'}" for s, g in CAMPAIGN_CASES])
def test_a_signal_ends_a_campaign_with_its_own_exit_code(sig: int, group: bool, built_tpcc_sqlite: Path,
                                                         tmp_path: Path, deliverable_sigint: None) -> None:
    """SIGTERM to a campaign used to exit 130 and SIGHUP to kill it with no cleanup: each
    run now gets the signal once, from the campaign, ends as a run ends, and the
    campaign exits with the signal's own code, stored as interrupted."""
    urls = {name: copy_of(built_tpcc_sqlite, tmp_path, name + ".db") for name in ("first", "second")}
    path = write_campaign(tmp_path, urls, duration="5m")
    sessions: list[int] = []

    def first_live_line(proc: subprocess.Popen[str]) -> None:  # of the first target
        sessions.append(proc.pid)
        assert proc.stderr is not None
        while "[first] [" not in proc.stderr.readline() and proc.poll() is None:
            pass

    code, took, out, err = _signal_after(["campaign", str(path)], tmp_path, first_live_line, sig, group=group)
    assert took > 0 and code == EXIT[sig] and took < WITHIN_S, (code, took, out, err)
    assert out.rstrip().endswith("campaign 1: interrupted") and "Traceback" not in out + err
    assert not left_in_session(sessions[0])
    store = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}", create=False)
    assert [(r.storage, r.status) for r in store.list_runs()] == [("first", "interrupted")]
