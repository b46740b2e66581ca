"""The results store with two writers at once, and with its disk full or read-only mid-run.

Everything for real: writers are separate processes on one SQLite file, runs are the
``tpsbench`` command in a subprocess, and the faults are a small tmpfs that a test fills
up or remounts read-only while a run writes to it. Mounting needs root: the fault tests
skip without it (fail with CI=true).
"""

from __future__ import annotations

import errno
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pytest
import sqlalchemy as sa
from conftest import copy_of

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import ACTIVE, read_meta
from tpsbench.core.redact import safe_url
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.summary import SteadySummary
from tpsbench.results.store import ResultsStore, StoreUnwritable
from tpsbench.targets import open_target

NAMES = ("new_order", "payment", "delivery")
#: intervals each of two concurrent writers stores
INTERVALS = 300
#: a run of three short steps: a fault is made once the second has started
STEPS = ["--users", "1,2,3", "--rampup", "0s", "--duration", "3s", "--interval", "0.5s"]
#: how the line ends when the run's end could not be written either
RUNNING = "; the store still shows the run as running"


def tpsbench(*args: str, db: str = "", results: str = "", cwd: Path) -> subprocess.Popen[str]:
    """``tpsbench ARGS`` started in a subprocess; the database and the store by environment
    (TPSBENCH_DB, TPSBENCH_RESULTS), as a shell script would give them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    env |= {"TPSBENCH_DB": db} if db else {}
    env |= {"TPSBENCH_RESULTS": results} if results else {}
    return subprocess.Popen([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


# -- two writers ------------------------------------------------------------------------------
def write_a_run(url: str, label: str, start: Any, out: Any) -> None:
    """One writer: open the (new) store at once with the other, then a run of INTERVALS
    intervals, each with an error sample (a read and a write in one transaction)."""
    try:
        start.wait(60)
        store = ResultsStore(url)
        run_id = store.start_run("tpcc", db_url=f"sqlite:///{label}.db", storage=label)
        recorder = IntervalRecorder(NAMES)
        reports = []
        for number in range(INTERVALS):
            for i in range(30):
                recorder.record(NAMES[i % 3], 1000 + 37 * i, True)
            recorder.add("payment", "errors")
            recorder.error("payment", "could not serialize access")
            reports.append(recorder.take(1, number, float(number), number + 1.0))
            store.add_interval(run_id, reports[-1], users=2)
        store.finish_step(run_id, 1, SteadySummary.from_reports(reports, users=2))
        store.finish_run(run_id, "completed")
        out.put((label, run_id))
    except BaseException as exc:  # noqa: BLE001 - said to the test, which fails on it
        out.put((label, f"{type(exc).__name__}: {exc}"))


def read_runs(url: str, start: Any, stop: Any, out: Any) -> None:
    """A reader meanwhile (what `tpsbench runs` and `report` do), over and over."""
    reads = 0
    try:
        start.wait(60)
        while not stop.is_set():
            try:
                store = ResultsStore(url, create=False)
            except TpsbenchError as exc:
                if "no runs yet" not in str(exc):  # the writers have not made the store yet
                    raise
                continue
            for run in store.list_runs():
                store.load_run(run.id)
            reads += 1
        out.put(("reader", reads))
    except BaseException as exc:  # noqa: BLE001 - said to the test, which fails on it
        out.put(("reader", f"{type(exc).__name__}: {exc}"))


@pytest.mark.slow
def test_two_processes_write_one_sqlite_store_at_once_and_keep_every_row(tmp_path: Path) -> None:
    """Two writers create the same new store at the same moment and store their runs'
    intervals as fast as they can while a reader reads: no "database is locked", distinct
    run ids, every row there."""
    url = f"sqlite:///{tmp_path / 'results.db'}"
    ctx = mp.get_context("spawn")
    start, stop, out = ctx.Barrier(3), ctx.Event(), ctx.Queue()
    writers = [ctx.Process(target=write_a_run, args=(url, label, start, out)) for label in ("A", "B")]
    reader = ctx.Process(target=read_runs, args=(url, start, stop, out))
    for proc in (*writers, reader):
        proc.start()
    try:
        said = dict(out.get(timeout=120) for _ in writers)
        stop.set()
        said |= dict([out.get(timeout=60)])
    finally:
        stop.set()
        for proc in (*writers, reader):
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    assert all(isinstance(v, int) for v in said.values()), said
    assert said["A"] != said["B"] and said["reader"] > 0
    store = ResultsStore(url, create=False)
    assert sorted(r.id for r in store.list_runs()) == sorted([said["A"], said["B"]])
    for label in ("A", "B"):
        data = store.load_run(said[label])
        assert (data.run.storage, data.run.status) == (label, "completed")
        assert [i.interval for i in data.intervals] == list(range(INTERVALS))
        assert [(e.txn, e.count) for e in data.errors] == [("payment", INTERVALS)]
        assert data.steps[0].summary is not None and data.steps[0].summary.total("commits") == 30 * INTERVALS


@pytest.mark.slow
def test_two_cli_runs_at_once_on_two_databases_into_one_store(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    """Two `tpsbench run`s at once, each on its own database, into one results store, with
    `tpsbench runs` reading it meanwhile: both complete, honestly, with their own run ids."""
    results = f"sqlite:///{tmp_path / 'results.db'}"
    runs = [tpsbench("run", "tpcc", "--users", "1,2", "--rampup", "0s", "--duration", "1.5s", "--interval", "0.5s",
                     db=copy_of(built_tpcc_sqlite, tmp_path, name), results=results, cwd=tmp_path)
            for name in ("a.db", "b.db")]
    reads = 0
    while any(proc.poll() is None for proc in runs):
        if (tmp_path / "results.db").exists():
            code, out, err = finished(tpsbench("runs", results=results, cwd=tmp_path))
            assert code == 0 or "no runs yet" in err, err  # the first run may not have begun yet
            reads += code == 0
    assert reads > 0
    ended = [finished(proc) for proc in runs]
    for code, out, err in ended:
        assert code == 0 and "Traceback" not in err, (code, out, err)
    ends = (line for _, out, _ in ended for line in out.splitlines() if re.match(r"run \d+: ", line))
    assert sorted(ends) == [
        "run 1: completed; honesty check matches", "run 2: completed; honesty check matches"]
    store = ResultsStore(results, create=False)
    for run in store.list_runs():
        data = store.load_run(run.id)
        assert [s.users for s in data.steps] == [1, 2] and all(s.summary for s in data.steps)
        for step in (1, 2):
            numbers = [i.interval for i in data.intervals if i.step == step]
            assert numbers == list(range(len(numbers))) and len(numbers) >= 3, numbers  # 1.5 s in 0.5 s intervals


# -- a disk that fills up or turns read-only --------------------------------------------------
@pytest.fixture
def small_disk(tmp_path: Path, require: Callable[[str, object], NoReturn]) -> Iterator[Path]:
    """A 2 MB tmpfs, mounted for the test and unmounted after (read-only or not)."""
    if os.geteuid() != 0:
        require("root (to mount a small tmpfs)", "this test runs as a user")
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tpsbench-test", str(folder)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        require("mounting a tmpfs", mounted.stderr)
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> None:
    """Write a file in ``folder`` until its file system has not a byte left."""
    with open(folder / "filler", "wb", buffering=0) as file:
        chunk = 1 << 20
        while chunk:
            try:
                file.write(b"\0" * chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                chunk //= 2


def remount(folder: Path, mode: str) -> None:
    """``mount -o remount,MODE``: busy while the store is open for a write, so tried again."""
    deadline = time.monotonic() + 10.0
    while (done := subprocess.run(["mount", "-o", f"remount,{mode}", str(folder)], capture_output=True,
                                  text=True, check=False)).returncode != 0:
        assert time.monotonic() < deadline, done.stderr
        time.sleep(0.005)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


FAULTS: dict[str, tuple[Callable[[Path], None], Callable[[Path], None]]] = {
    "disk full": (fill, lambda folder: (folder / "filler").unlink()),
    "read-only": (lambda folder: remount(folder, "ro"), lambda folder: remount(folder, "rw")),
}


@pytest.mark.slow
@pytest.mark.parametrize("cause", FAULTS)
def test_a_store_that_cannot_be_written_mid_run_stops_it_in_one_line_and_keeps_what_was_written(
        cause: str, small_disk: Path, built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    """The store's disk fills up (or turns read-only) in the second step: the run stops
    within seconds, its workers gone and the database's run mark removed, with one line
    that names the store, the cause and what was kept, and exit 1; the first step can
    still be read, while the disk is full (read-only) and after."""
    db, results = copy_of(built_tpcc_sqlite, tmp_path), f"sqlite:///{small_disk / 'results.db'}"
    make_fault, repair = FAULTS[cause]
    proc = tpsbench("run", "tpcc", *STEPS, db=db, results=results, cwd=tmp_path)
    try:
        assert proc.stderr is not None
        while "step 2/3" not in proc.stderr.readline():  # step 1 is stored, step 2 measures
            assert proc.poll() is None, proc.stderr.read()
        workers = [int(pid) for pid in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        make_fault(small_disk)
        faulted = time.monotonic()
        code, out, err = finished(proc, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - faulted < 10.0 and code == 1, (code, out, err)
    assert "Traceback" not in err and not out
    said = [line for line in err.splitlines() if line.startswith("tpsbench:")]
    # the run's end may fit on a full disk once the failed write's journal is freed; never on a read-only one
    unended = cause == "read-only" or err.rstrip().endswith(RUNNING)
    assert said == [(f"tpsbench: error: the results store {results} cannot be written ({cause}): run 1 stopped "
                     f"during step 2; step 1 was kept{RUNNING if unended else ''}")], err
    assert err.rstrip().endswith(said[0])
    stopped = time.monotonic() + 5.0  # the workers, and multiprocessing's resource tracker that sees them off
    while [pid for pid in workers if alive(pid)] and time.monotonic() < stopped:
        time.sleep(0.05)
    assert workers and not [pid for pid in workers if alive(pid)]
    assert ACTIVE not in read_meta(open_target(db), "tpcc")

    def readable() -> None:
        listing, report = tpsbench("runs", results=results, cwd=tmp_path), tpsbench("report", "1", results=results,
                                                                                  cwd=tmp_path)  # both at once
        code, out, err = finished(listing)
        assert code == 0 and ("running" if unended else "failed") in out, err
        code, out, err = finished(report)
        assert code == 0 and "Traceback" not in err, err
        data = ResultsStore(results, create=False).load_run(1)
        assert data.run.status == ("running" if unended else "failed")
        (first,) = data.steps  # a step's row is written when it ends
        assert first.step == 1 and first.summary is not None and first.summary.tps > 0
        numbers = [i.interval for i in data.intervals if i.step == 1]
        assert numbers == list(range(len(numbers))) and len(numbers) >= 6  # 3 s in 0.5 s intervals, and the tail

    readable()  # while the disk is still full (read-only): readers write nothing
    repair(small_disk)
    readable()


def test_a_postgresql_store_turned_read_only_fails_its_writes_in_one_line_and_still_reads(pg_url: str) -> None:
    """Any backend: a PostgreSQL store whose database turns read-only refuses the next
    write as StoreUnwritable (read-only); its runs are still listed."""
    store = ResultsStore(pg_url)
    run_id = store.start_run("tpcc", db_url="sqlite:///x.db")
    url = sa.engine.make_url(pg_url)
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname="postgres", autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{url.database}" SET default_transaction_read_only = on')
    with pytest.raises(StoreUnwritable) as raised:
        store.finish_run(run_id, "completed")
    assert str(raised.value) == f"the results store {safe_url(pg_url)} cannot be written (read-only): finishing " \
                                "the run failed"
    assert [(r.id, r.status) for r in ResultsStore(pg_url, create=False).list_runs()] == [(run_id, "running")]


def test_the_line_says_where_the_run_stopped_what_was_kept_and_whether_its_end_was_written() -> None:
    failure = StoreUnwritable("sqlite:///r.db", "disk full", "storing interval 3 of step 2 failed")
    assert str(failure) == "the results store sqlite:///r.db cannot be written (disk full): storing interval 3 " \
                           "of step 2 failed"
    assert str(failure.run_ended(4, [1, 2], during=3, end_written=True)) == \
        "the results store sqlite:///r.db cannot be written (disk full): run 4 stopped during step 3; steps 1, 2 " \
        "were kept"
    assert str(failure.run_ended(4, [], during=1, end_written=False)).endswith(
        "run 4 stopped during step 1; no step was kept; the store still shows the run as running")
    ended = failure.run_ended(4, [1], during=None, end_written=False)
    assert str(ended).endswith("(disk full): run 4 ended; step 1 was kept; the store still shows the run as running")
    assert isinstance(ended, TpsbenchError) and ended.exit_code == 1
