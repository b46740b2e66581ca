"""Runs whose users sit on a Dask cluster's workers (``--cluster``), on PostgreSQL for real.

One LocalCluster of 2 worker processes serves the module (as ``dask scheduler`` and two
``dask worker`` would), the databases are built once. Checked: TPC-C and sysbench runs
whose honesty check matches, every interval merged from both workers' reports exactly
(histograms equal to the sum of theirs, count for count), each worker host's CPU and
clock offset stored with the run; a Dask worker process killed mid-step (the step ends
with the other, the problem is stored and shown, the dead worker's users leave the
database, the next step starts the worker again); the transport's contract (per-worker
order, the loss after the last message, the receive timeout) and its clock offsets;
Ctrl-C ending a CLI run within 5 s with its intervals kept and no task left on
the cluster; and the clusters that cannot run a run (none there, no workers, another
tpsbench, a worker not named, a clock too far off) refused in one line before anything
is stored.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed  # the test extra has it: CI runs these tests, never skips them
import psycopg
import pytest
from conftest import scratch_pg_database

from tpsbench import __version__
from tpsbench.commands.build import build
from tpsbench.commands.run import RunConfig, RunRecord, run
from tpsbench.core.errors import TpsbenchError
from tpsbench.engine.dask.cluster import connect, local_only, offset_of
from tpsbench.engine.dask.transport import DaskTransport, Place, _Slot
from tpsbench.engine.protocol import WorkerLost, WorkerStep
from tpsbench.measure.histogram import merged
from tpsbench.measure.host_cpu import on_worker_host, worker_hosts
from tpsbench.measure.reports import IntervalReport
from tpsbench.report.table import render
from tpsbench.results.store import ResultsStore

HOST = socket.gethostname()
STEP = {"rampup_s": 0.5, "duration_s": 2.0, "interval_s": 0.5, "processes": 2}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            distributed.Client(c) as client:
        client.wait_for_workers(2, timeout=60)
        yield client


@pytest.fixture(scope="module")
def tpcc_pg(built_tpcc_pg: str) -> Iterator[str]:
    with scratch_pg_database(built_tpcc_pg) as url:  # TPC-C scale 1, seed 0
        yield url


@pytest.fixture(scope="module")
def sysbench_pg() -> Iterator[str]:
    with scratch_pg_database() as url:
        build("sysbench", 1, url, seed=0, show_progress=False, options={"table_size": "2000"})
        yield url


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, IntervalReport]]:
    """Every interval report as a worker sent it, before the coordinator merged it."""
    reports: list[tuple[int, IntervalReport]] = []
    receive = DaskTransport.receive

    def recording(self: DaskTransport, timeout: float) -> list[tuple[int, object]]:
        out = receive(self, timeout)
        reports.extend((i, copy.deepcopy(m)) for i, m in out if isinstance(m, IntervalReport))
        return out

    monkeypatch.setattr(DaskTransport, "receive", recording)
    return reports


def on_cluster(client: Any, workload: str, url: str, tmp_path: Path, **kwargs: Any) -> RunRecord:
    live = kwargs.pop("live", None)
    config = RunConfig(workload, url, **{"users": [4], **STEP, **kwargs}, results_url=f"sqlite:///{tmp_path}/r.db",
                       seed=7, cluster=client.scheduler.address)
    return run(config, live=live)


def backends(url: str) -> int:
    """Connections to the test's database other than this one."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect("postgresql://postgres@127.0.0.1/postgres", autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone()
    assert row is not None
    return int(row[0])


def merged_exactly(record: RunRecord, seen: list[tuple[int, IntervalReport]]) -> None:
    """Each merged interval is the sum of the workers' reports of it, histograms count for count."""
    (step,) = record.outcome.steps
    assert {i for i, _ in seen} == {0, 1}
    assert all(sum(r.total("commits") for i, r in seen if i == worker) for worker in (0, 1))  # both had users
    for report in step.intervals:
        parts = [r for _, r in seen if r.step == report.step and r.interval == report.interval]
        assert len(parts) == 2
        assert report.total("commits") == sum(p.total("commits") for p in parts)
        for name in report.txns:
            assert report.histogram(name) == merged(p.histogram(name) for p in parts)
        assert report.histogram().count() == sum(p.histogram().count() for p in parts)


@pytest.mark.slow
def test_tpcc_on_two_dask_workers_merges_exactly_and_stores_every_host(cluster: Any, tpcc_pg: str, tmp_path: Path,
                                                                          seen: list[tuple[int, IntervalReport]]
                                                                          ) -> None:
    record = on_cluster(cluster, "tpcc", tpcc_pg, tmp_path)
    assert record.status == "completed" and record.honesty["match"] is True, record.honesty
    assert record.outcome.steps[0].problems == []
    merged_exactly(record, seen)
    data = record.store.load_run(record.run_id)
    facts = data.run.config["cluster"]
    assert facts["scheduler"] == cluster.scheduler.address and len(facts["workers"]) == 2
    for worker in facts["workers"]:  # one host, one clock: the true offset is 0, within the bound measured
        assert worker["host"] == HOST and abs(worker["offset_s"]) <= worker["bound_s"] + 1e-3
    here = data.readings(1)[f"host_cpu@{HOST}"]
    assert set(here) == {"user", "system", "iowait", "idle", "steal", "driver", "driver_peak"}
    assert 0 < here["driver"] <= 100 and 0 < here["driver_peak"] <= 100 * os.cpu_count()
    assert 99 <= sum(here[k] for k in ("user", "system", "iowait", "idle", "steal")) <= 101
    steady = [r.interval for r in record.outcome.steps[0].intervals if r.steady]
    assert all(f"host_cpu@{HOST}" in data.readings(1, i) for i in steady)
    lines = render([data], "csv").splitlines()  # and the report shows the host's figures
    assert any(line.endswith(f",Worker host {HOST} CPU busy (%),{100.0 - here['idle']:.1f}") for line in lines), lines
    assert any(line.endswith(f",Worker host {HOST} driver CPU (%),{here['driver']:.1f}") for line in lines), lines


@pytest.mark.slow
def test_sysbench_on_two_dask_workers(cluster: Any, sysbench_pg: str, tmp_path: Path,
                                      seen: list[tuple[int, IntervalReport]]) -> None:
    record = on_cluster(cluster, "sysbench", sysbench_pg, tmp_path, options={"mode": "oltp_insert"})
    assert record.status == "completed" and record.honesty["match"] is True, record.honesty
    total = record.outcome.steps[0].total()
    assert total is not None and record.honesty["expected"]["rows"] == total.total("commits") > 0
    merged_exactly(record, seen)


@pytest.mark.slow
def test_a_killed_dask_worker_is_a_problem_of_the_step_which_completes(cluster: Any, tpcc_pg: str,
                                                                      tmp_path: Path) -> None:
    pids = cluster.run(os.getpid)
    victim = min(pids)
    killed: list[float] = []

    def live(line: str) -> None:
        if "step 1/2" in line and "ramp-up" not in line and not killed:
            os.kill(pids[victim], signal.SIGKILL)
            killed.append(time.monotonic())

    record = on_cluster(cluster, "tpcc", tpcc_pg, tmp_path, users=[4, 4], duration_s=3.0, live=live)
    step, again = record.outcome.steps
    assert killed and record.status == "completed" and step.summary is not None
    # the next step starts the lost worker again: on its Dask worker once its nanny restarted it, else beside the other
    assert again.problems == [] and again.summary is not None and again.summary.commits > 0
    (problem,) = step.problems
    assert f"Dask worker {victim}" in problem and "lost its connection" in problem and "during step 1" in problem
    assert step.summary.commits > 0 and not all(r.steady for r in step.intervals)
    report = render([record.store.load_run(record.run_id)])
    assert "PROBLEM" in report and "lost its connection" in report
    deadline = time.monotonic() + 10
    while backends(tpcc_pg) and time.monotonic() < deadline:  # the dead worker's users went with it
        time.sleep(0.2)
    assert backends(tpcc_pg) == 0
    cluster.wait_for_workers(2, timeout=60)  # its nanny starts it again, for the tests after this one


@pytest.mark.slow
def test_ctrl_c_ends_a_cluster_run_within_5_s_keeping_its_intervals(cluster: Any, tpcc_pg: str, tmp_path: Path,
                                                                     deliverable_sigint: None) -> None:
    cluster.wait_for_workers(2, timeout=60)
    results = f"sqlite:///{tmp_path}/r.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    args = ["--db", tpcc_pg, "--users", "4", "--rampup", "1s", "--duration", "60s", "--interval", "1s",
            "--processes", "2", "--results", results]
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "run", "tpcc", *args],
                            env=env | {"TPSBENCH_CLUSTER": cluster.scheduler.address},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said, steady = [], 0
        timer = threading.Timer(90, proc.kill)  # a hang fails the test, not the suite
        timer.start()
        assert proc.stderr is not None
        while steady < 2 and (line := proc.stderr.readline()):
            said.append(line)
            steady += "step 1/1" in line and "ramp-up" not in line
        assert steady == 2, "".join(said)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        timer.cancel()
    finally:
        proc.kill()
    assert proc.returncode == 130 and took <= 5.0, (took, err)
    data = ResultsStore(results).load_run(1)
    assert data.run.status == "interrupted" and len([i for i in data.intervals if i.steady]) >= 2
    deadline = time.monotonic() + 10
    while (any(cluster.processing().values()) or backends(tpcc_pg)) and time.monotonic() < deadline:
        time.sleep(0.2)  # every remote task ended, and its users with it
    assert not any(cluster.processing().values()) and backends(tpcc_pg) == 0


def cli(args: list[str], cluster: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    return subprocess.run([sys.executable, "-m", "tpsbench", "run", "tpcc", *args, "--cluster", cluster],
                          env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_clusters_that_cannot_run_are_refused_in_one_line_before_anything_is_stored(tpcc_pg: str,
                                                                                    tmp_path: Path) -> None:
    with pytest.raises(TpsbenchError, match=r"^cannot reach a Dask scheduler at tcp://127\.0\.0\.1:9 ") as unreachable:
        connect("tcp://127.0.0.1:9", [], tpcc_pg, timeout_s=1)
    assert "\n" not in str(unreachable.value)
    fake = tmp_path / "other" / "tpsbench"  # a worker whose tpsbench is another version
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "0.0.1-other"\n')
    results = tmp_path / "r.db"
    args = ["--db", tpcc_pg, "--users", "2", "--results", f"sqlite:///{results}"]
    with distributed.LocalCluster(n_workers=0, dashboard_address=":0") as bare:
        address = bare.scheduler_address
        empty = cli(args, address)
        assert empty.returncode != 0 and empty.stderr.strip().splitlines() == [
            (f"tpsbench: error: the Dask cluster at {address} has no workers: start them on the client machines "
             f"with `dask worker {address}`")]
        worker = subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nthreads", "1",
                                   "--name", "other", "--no-nanny"],
                                  env=dict(os.environ, PYTHONPATH=str(fake.parent)), stderr=subprocess.DEVNULL)
        try:
            with distributed.Client(address) as client:
                client.wait_for_workers(1, timeout=60)
            other = cli(args, address)
            unnamed = cli([*args, "--cluster-workers", "nosuch"], address)
        finally:
            worker.terminate()
            worker.wait(30)
    (line,) = other.stderr.strip().splitlines()
    assert line.startswith("tpsbench: error: Dask worker tcp://") and " runs tpsbench 0.0.1-other, this host " in line
    (line,) = unnamed.stderr.strip().splitlines()
    assert "--cluster-workers names 'nosuch', which is no worker name, address or host" in line and "other (" in line
    assert not results.exists()  # refused before the results store was even opened


@pytest.mark.slow  # the only quick test on a cluster, which takes seconds to start
def test_a_clock_past_the_limit_is_refused_with_its_figure(cluster: Any, tpcc_pg: str) -> None:
    cluster.wait_for_workers(2, timeout=60)
    with pytest.raises(TpsbenchError, match=r"^the clock of Dask worker tcp://\S+ on \S+ is [+-]\d\.\d{3} s off this "
                                            r"host's \(\+-\d\.\d{3} s\), more than the 0\.0 s a run accepts"):
        connect(cluster.scheduler.address, [], tpcc_pg, max_offset_s=0.0)


class Running:
    """A Dask future whose task is still running, for a slot given its connection by hand."""

    status = "pending"

    def done(self) -> bool:
        return False

    def cancel(self) -> None:
        self.status = "cancelled"


def test_the_transport_applies_the_clock_offset_keeps_order_and_says_a_loss_last() -> None:
    transport = DaskTransport(None, "tcp://scheduler:8786", "127.0.0.1")
    try:
        ours, theirs = multiprocessing.Pipe()
        place = Place("tcp://10.0.0.7:40211", "w", "client2", 1, "3.11", __version__, offset_s=2.0, bound_s=0.001)
        transport.slots[0] = _Slot(place, "attempt", Running(), conn=ours, pid=4242)
        assert transport.send(0, WorkerStep(1, [0], 1, 0.0, 1.0, 0.5, start_at=1000.0))
        assert theirs.recv().start_at == 1002.0  # the step's start in the worker's clock, 2 s ahead of ours
        for n in range(3):
            theirs.send(IntervalReport(1, n, 1002.0 + n, 1002.5 + n, True))
        theirs.close()
        got: list[tuple[int, object]] = []
        deadline = time.monotonic() + 10
        while not any(isinstance(m, WorkerLost) for _, m in got) and time.monotonic() < deadline:
            got += transport.receive(0.5)
        *reports, lost = got
        assert [(r.interval, r.t_start, r.t_end) for _, r in reports] == [  # type: ignore[attr-defined]  # all but the last message are IntervalReports; receive() types them object
            (0, 1000.0, 1000.5), (1, 1001.0, 1001.5), (2, 1002.0, 1002.5)]  # in our clock, in order
        assert lost == (0, WorkerLost(0, "worker 0 (pid 4242 on client2, Dask worker tcp://10.0.0.7:40211) lost "
                                         "its connection: the worker process or its Dask worker ended, or its host "
                                         "was cut off"))
        assert not transport.alive(0) and not transport.send(0, WorkerStep(2, [0], 1, 0.0, 1.0, 0.5, 0.0))
        began = time.monotonic()
        assert transport.receive(0.2) == [] and time.monotonic() - began < 1.0  # within its timeout
    finally:
        transport.server.close()


def test_workers_sharing_a_host_count_its_driver_share_once_per_process() -> None:
    def report(pid: int, driver: float, peak: float) -> IntervalReport:
        # the split of the coordinator's host_cpu stays home: only the driver's figures travel per tree
        figures = {"user": 50.0, "idle": 40.0, "driver": driver, "driver_peak": peak, "others": 3.0,
                   "busy_allowed": 60.0, "io_pressure": 1.0}
        return IntervalReport(1, 0, 0.0, 1.0, True, hosts=on_worker_host(figures, "client2", pid))

    merged_report = report(11, 10.0, 20.0)
    merged_report.merge(report(12, 5.0, 9.0))  # another Dask worker process on the host
    merged_report.merge(report(11, 10.0, 20.0))  # a second worker in the first one's process: counted there already
    assert worker_hosts(merged_report.hosts) == {
        "host_cpu@client2": {"user": 50.0, "idle": 40.0, "driver": 15.0, "driver_peak": 20.0}}


def test_offsets_and_urls_that_only_mean_this_host() -> None:
    assert offset_of(100.0, 103.5, 101.0) == (3.0, 0.5)  # read at our 100.5, within +-0.5
    assert local_only("postgresql://postgres@127.0.0.1/tpcc") == "127.0.0.1"
    assert local_only("postgresql://postgres@localhost/tpcc") == "localhost"
    assert local_only("postgresql://postgres@[::1]/tpcc") == "::1"
    assert local_only("postgresql://postgres@/tpcc?host=/var/run/postgresql").startswith("no host")
    assert local_only("sqlite:///tpsbench.db").startswith("no host")
    assert local_only("postgresql://postgres@10.0.0.5/tpcc") == local_only("mysql://root@db.example/x") == ""


def test_tpsbench_without_a_cluster_never_imports_dask(tmp_path: Path) -> None:
    code = ("import sys; import tpsbench.cli.main, tpsbench.commands.run, tpsbench.engine.coordinator;"
            " print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
