"""Users that cannot stop at the end of a step: the step still ends in bounded time, says
so, and the honesty check accounts for the transactions they had in flight.

How a user falls behind here: another session holds a lock on the table every
transaction writes (sysbench's oltp_insert, one autocommit INSERT each), taken once the
steady window has begun and released only once the run said it gave up on the users. The
worker waits the grace period (tpsbench.engine.protocol.STOP_GRACE_S) for them, then gives
up, counting each transaction in flight *in doubt*: its INSERT is queued on the server and
commits the moment the lock goes, whether or not a client is still there to hear of it.
So the database ends with exactly one row more per user given up on than the driver
counted as committed, and the honesty check's range (commits .. commits + in doubt) holds
it; before, those rows were nowhere in the driver's counts and the check failed.

A worker that ends before its last report (killed here; or one the coordinator kills for
not reporting within the grace period) leaves commits no count holds: the check cannot
match then, and says by how much and why, naming the worker.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import cli_in_process
from sqlalchemy.engine import make_url

from tpsbench.engine.protocol import STOP_GRACE_S
from tpsbench.results.store import ResultsStore

USERS = 2


def conninfo(url: str) -> dict[str, Any]:
    parsed = make_url(url)
    return {"host": parsed.host, "port": parsed.port or 5432, "user": parsed.username, "dbname": parsed.database,
            "password": parsed.password}


def rows(url: str) -> int:
    with psycopg.connect(**conninfo(url), autocommit=True) as conn:
        return int(conn.execute("SELECT count(*) FROM sbtest1").fetchone()[0])  # type: ignore[index]  # count(*) always answers one row


def start_run(url: str, folder: Path, duration: str, processes: str, multiplex: str,
              users: str = str(USERS)) -> tuple[Path, int, subprocess.Popen[str]]:
    """sysbench built at ``url`` (one small table), and a run of oltp_insert started on it
    through the CLI: its results store, the table's rows before it, the run's process."""
    results = folder / "results.db"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")},
           "TPSBENCH_DB": url, "TPSBENCH_RESULTS": f"sqlite:///{results}"}
    cli = [sys.executable, "-m", "tpsbench"]
    # one loader: a build that starts no process, run in this one
    built = cli_in_process("build", "sysbench", "--tables", "1", "--table-size", "100", "--loaders", "1",
                           cwd=folder, env={k: v for k, v in env.items() if k.startswith("TPSBENCH_")})
    assert built.returncode == 0, built.stderr
    first = rows(url)
    proc = subprocess.Popen([*cli, "run", "sysbench", "--mode", "oltp_insert", "--users", users, "--rampup",
                             "0.5s", "--duration", duration, "--interval", "0.5s", "--processes", processes,
                             multiplex], env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    return results, first, proc


def steady(proc: subprocess.Popen[str]) -> list[str]:
    """The run's lines on stderr up to the steady window's first live line."""
    assert proc.stderr is not None
    said: list[str] = []
    while not said or "ramp-up" in said[-1] or "left" not in said[-1]:
        said.append(proc.stderr.readline())
        assert said[-1] or proc.poll() is None, "".join(said)
    return said


def rest(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The run's stdout and the rest of its stderr, once it ends. Not communicate(): it reads
    the pipes beneath the lines that readline() has buffered already, which would be lost."""
    assert proc.stdout is not None and proc.stderr is not None
    err = proc.stderr.read()  # the table on stdout is far smaller than a pipe holds
    out = proc.stdout.read()
    proc.wait(60)
    return out, err


def settle(url: str) -> None:
    """Until no other session is left on the database: the orphaned INSERTs have committed."""
    deadline = time.monotonic() + 30
    with psycopg.connect(**conninfo(url), autocommit=True) as conn:
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                           " AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchone()[0]:  # type: ignore[index]  # count(*) always answers one row
            assert time.monotonic() < deadline, "sessions left on the database"
            time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("multiplex", ["--multiplex", "--no-multiplex"])
def test_users_stuck_past_the_step_end_are_given_up_on_in_time_and_counted_in_doubt(
        pg_url: str, tmp_path: Path, multiplex: str) -> None:
    results, first, proc = start_run(pg_url, tmp_path, "2s", "1", multiplex)
    assert proc.stderr is not None
    with psycopg.connect(**conninfo(pg_url)) as holder:
        said = steady(proc)
        holder.execute("LOCK TABLE sbtest1 IN SHARE MODE")  # every INSERT now waits for it, well before the end
        locked = time.monotonic()
        while "did not stop within" not in said[-1]:
            said.append(proc.stderr.readline())
            assert said[-1], "".join(said)
        given_up = time.monotonic() - locked
        holder.rollback()  # the queued INSERTs commit now, their clients gone or not listening
    out, err = rest(proc)
    text = "".join(said) + err
    # bounded: the rest of the window and the grace period, with room for a busy machine
    assert given_up < 2.0 + STOP_GRACE_S + 15, text
    assert proc.returncode == 1 and "Traceback" not in text + out, text
    assert "step 1 ran short of its plan (PROBLEM above); honesty check matches" in out.splitlines()[-1], out
    problems = [line for line in text.splitlines() if "PROBLEM" in line]
    doubt_said = ("counted in doubt" if multiplex == "--no-multiplex"
                  else f"the shared thread gave up on {USERS} transaction(s) still out")
    assert any(doubt_said in line for line in problems), text
    settle(pg_url)
    store = ResultsStore(f"sqlite:///{results}", create=False)
    honesty = store.list_runs()[-1].honesty
    assert honesty is not None and honesty["match"] is True and honesty["in_doubt"] == {"oltp_insert": USERS}, honesty
    # every commit is counted: the driver's, and those it gave up on, which all committed once the lock went
    (counter,) = honesty["expected"]
    assert rows(pg_url) - first == honesty["expected"][counter] + USERS == honesty["most"][counter], honesty


def worker_pids(pid: int) -> list[int]:
    """The run's worker processes (spawned: multiprocessing's, not its resource tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children
            if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes() and
            b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()]


@pytest.mark.slow
@pytest.mark.parametrize("multiplex", ["--multiplex", "--no-multiplex"])
def test_a_worker_lost_before_its_last_report_fails_the_check_saying_why(pg_url: str, tmp_path: Path,
                                                                        multiplex: str) -> None:
    results, first, proc = start_run(pg_url, tmp_path, "2s", "2", multiplex)
    said = steady(proc)
    time.sleep(0.25)  # between two reports: commits no report holds yet
    victim = max(worker_pids(proc.pid))
    os.kill(victim, signal.SIGKILL)
    out, err = rest(proc)
    text = "".join(said) + err
    assert proc.returncode == 1 and "Traceback" not in text + out, text
    assert f"(pid {victim}) was killed by signal 9 during step 1; the step ends with what arrived" in text, text
    assert out.splitlines()[-1].endswith("honesty check FAILED"), out
    settle(pg_url)
    honesty = ResultsStore(f"sqlite:///{results}", create=False).list_runs()[-1].honesty
    assert honesty is not None and honesty["match"] is False, honesty
    (counter,) = honesty["actual"]
    # the difference is the database's own: it changed by more than the driver counted
    assert rows(pg_url) - first == honesty["actual"][counter] > honesty["expected"][counter], honesty
    line = next(line for line in text.splitlines() if line.startswith("HONESTY CHECK FAILED"))
    worker = re.search(rf"(worker \d+ \(pid {victim}\)) was killed", text).group(1)  # type: ignore[union-attr]  # the run says which worker was killed (asserted above)
    assert line == (f"HONESTY CHECK FAILED: the database changed by {honesty['actual']} but the driver counted "
                    f"{honesty['expected']}; the driver's count lacks what 1 worker(s) committed after their last"
                    f" report ({worker} was killed by signal 9 during step 1)"), line


@pytest.mark.slow
def test_a_user_given_up_on_counts_nothing_more_when_its_transaction_then_fails(pg_url: str, tmp_path: Path) -> None:
    """Once the worker counted a stuck transaction in doubt, its thread's later failure (its
    backend terminated while the next step runs) adds no second in-doubt, retry or error."""
    results, _, proc = start_run(pg_url, tmp_path, "3s", "1", "--no-multiplex", users=f"{USERS},{USERS}")
    assert proc.stderr is not None
    with psycopg.connect(**conninfo(pg_url)) as holder:
        said = steady(proc)
        holder.execute("LOCK TABLE sbtest1 IN SHARE MODE")
        stuck: list[int] = []
        deadline = time.monotonic() + 10
        while len(stuck) < USERS:  # the users' backends, each waiting on the lock
            assert time.monotonic() < deadline, "the users never waited on the lock"
            with psycopg.connect(**conninfo(pg_url), autocommit=True) as look:
                stuck = [r[0] for r in look.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                                    " AND datname = current_database()")]
        while "did not stop within" not in said[-1]:
            said.append(proc.stderr.readline())
            assert said[-1], "".join(said)
        with psycopg.connect(**conninfo(pg_url), autocommit=True) as killer:
            for pid in stuck:
                killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        holder.rollback()
    out, err = rest(proc)
    text = "".join(said) + err
    assert "Traceback" not in text + out, text
    settle(pg_url)
    store = ResultsStore(f"sqlite:///{results}", create=False)
    run = store.list_runs()[-1]
    assert run.honesty is not None and run.honesty["match"] is True, run.honesty
    assert run.honesty["in_doubt"] == {"oltp_insert": USERS}, run.honesty
    second = store.load_run(run.id).steps[1].summary
    assert second is not None
    assert (second.total("in_doubt"), second.total("retries"), second.total("errors")) == (0, 0, 0), text
