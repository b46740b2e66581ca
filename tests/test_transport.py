"""The transport seam: the coordinator runs its workers through any Transport.

Two implementations meet the same coordinator here: the shipped one (local processes
and pipes), and a second one written in this file that runs each worker on a thread of
this process with queues for lines. That the coordinator's results, counts included,
come out right through the second is what shows the coordinator depends on the
interface alone (workers on Dask will be one more implementation).
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from pathlib import Path

from test_engine import CounterWorkload, commits, evidence, make_table

from tpsbench.core.session import RunContext
from tpsbench.core.workload import Workload
from tpsbench.engine.coordinator import RunStatus, plan_run, run_plan
from tpsbench.engine.local import LocalProcesses
from tpsbench.engine.protocol import Stop, WorkerFailed, WorkerLost, WorkerReady
from tpsbench.engine.steps import LoadStep
from tpsbench.engine.transport import Transport, WorkerLink
from tpsbench.engine.worker import Worker


class QueueLink(WorkerLink):
    def __init__(self, index: int, inbox: queue.Queue[object], outbox: queue.Queue[tuple[int, object]]) -> None:
        self.index, self.inbox, self.outbox = index, inbox, outbox

    def send(self, message: object) -> None:
        self.outbox.put((self.index, message))

    def poll(self, timeout: float | None) -> object | None:
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None


class ThreadTransport(Transport):
    """Workers as threads of this process, one inbox each and one shared outbox."""

    def __init__(self, count: int) -> None:
        self.outbox: queue.Queue[tuple[int, object]] = queue.Queue()
        self.inboxes: list[queue.Queue[object]] = [queue.Queue() for _ in range(count)]
        self.threads: list[threading.Thread | None] = [None] * count
        self.lost: set[int] = set()

    def start(self, worker: int, workload: Workload, ctx: RunContext) -> None:
        def serve() -> None:
            try:
                Worker(worker, QueueLink(worker, self.inboxes[worker], self.outbox), workload, ctx).serve()
            except Exception as exc:  # noqa: BLE001 - told as the process transport tells it
                self.outbox.put((worker, WorkerFailed(worker, str(exc))))
            self.outbox.put((worker, WorkerLost(worker, f"thread worker {worker} ended")))

        self.lost.discard(worker)
        thread = self.threads[worker] = threading.Thread(target=serve, daemon=True)
        thread.start()

    def alive(self, worker: int) -> bool:
        thread = self.threads[worker]
        return thread is not None and thread.is_alive() and worker not in self.lost

    def send(self, worker: int, message: object) -> bool:
        self.inboxes[worker].put(message)
        return self.alive(worker)

    def receive(self, timeout: float) -> list[tuple[int, object]]:
        out = []
        try:
            out.append(self.outbox.get(timeout=timeout))
            while True:
                out.append(self.outbox.get_nowait())
        except queue.Empty:
            pass
        for index, message in out:
            if isinstance(message, WorkerLost):
                self.lost.add(index)
        return out

    def kill(self, worker: int) -> None:
        self.inboxes[worker].put(Stop())
        self.lost.add(worker)

    def describe(self, worker: int) -> str:
        return f"thread worker {worker}"

    def pids(self) -> list[int]:
        return []

    def close(self, grace_s: float) -> None:
        for inbox in self.inboxes:
            inbox.put(Stop())
        for thread in self.threads:
            if thread is not None:
                thread.join(grace_s)


def test_the_coordinator_runs_workers_through_another_transport(tmp_path: Path) -> None:
    ctx = make_table(f"sqlite:///{tmp_path / 'counter.db'}")
    steps = [LoadStep(users=2, duration_s=1.0, rampup_s=0.3, interval_s=0.5),
             LoadStep(users=4, duration_s=1.0, rampup_s=0.3, interval_s=0.5)]
    transport = ThreadTransport(2)
    outcome = run_plan(plan_run(ctx, CounterWorkload(), steps, processes=2), transport=transport, live=None)
    assert outcome.status is RunStatus.COMPLETED and [s.users for s in outcome.steps] == [2, 4]
    assert all(s.problems == [] and s.summary is not None and s.summary.intervals == 2 for s in outcome.steps)
    assert commits(outcome) == evidence(ctx.url) > 0
    assert all(t is not None and not t.is_alive() for t in transport.threads)  # used, and ended


def test_local_processes_report_a_killed_worker_after_what_it_sent(tmp_path: Path) -> None:
    ctx = make_table(f"sqlite:///{tmp_path / 'counter.db'}")
    transport = LocalProcesses(1)
    try:
        transport.start(0, CounterWorkload(), ctx)
        got: list[object] = []
        deadline = time.monotonic() + 60
        while not any(isinstance(m, WorkerReady) for _, m in got) and time.monotonic() < deadline:
            got += transport.receive(0.5)
        (ready,) = [m for _, m in got if isinstance(m, WorkerReady)]
        assert transport.alive(0) and transport.pids() == [ready.pid]
        os.kill(ready.pid, signal.SIGKILL)
        events: list[tuple[int, object]] = []
        while not events and time.monotonic() < deadline:
            events = transport.receive(0.5)
        assert events == [(0, WorkerLost(0, f"worker 0 (pid {ready.pid}) was killed by signal 9"))]
        assert not transport.alive(0) and not transport.send(0, Stop()) and transport.receive(0.1) == []
    finally:
        transport.close(1.0)


def test_a_stopped_local_worker_exits_on_its_own_within_the_grace(tmp_path: Path) -> None:
    """Ctrl-C's budget (tpsbench.engine.coordinator.STOP_WAIT_S) counts on a worker told to
    stop being gone within close()'s grace, not killed at its end: it must not wait for its
    interpreter to tear every loaded module down."""
    ctx = make_table(f"sqlite:///{tmp_path / 'counter.db'}")
    transport = LocalProcesses(1)
    transport.start(0, CounterWorkload(), ctx)
    deadline = time.monotonic() + 60
    while not any(isinstance(m, WorkerReady) for _, m in transport.receive(0.5)):
        assert time.monotonic() < deadline, "the worker did not start"
    entry = transport.workers[0]
    assert entry is not None
    transport.close(1.0)
    assert entry.process.exitcode == 0  # -9: close() had to kill it
