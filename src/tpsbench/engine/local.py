"""Workers as local processes, one duplex pipe each: the first :class:`Transport`.

Processes are started with "spawn", so that nothing of the coordinator's state, threads
or connections leaks into them. One pipe per worker (rather than one shared queue)
means a worker killed while writing cannot block the others' writes. A worker's death
is seen through its process sentinel, and reported (WorkerLost) only once everything it
wrote before dying has been read.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
import time
from multiprocessing.connection import Connection, wait
from typing import Any

from tpsbench.core.session import RunContext
from tpsbench.core.signals import held
from tpsbench.core.workload import Workload
from tpsbench.engine.protocol import Stop, WorkerLost
from tpsbench.engine.transport import Transport, WorkerLink
from tpsbench.engine.worker import worker_main


class PipeLink(WorkerLink):
    """A worker's end of its pipe."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def send(self, message: object) -> None:
        self.conn.send(message)

    def poll(self, timeout: float | None) -> object | None:
        if self.conn.poll(timeout):
            return self.conn.recv()  # type: ignore[no-any-return]  # multiprocessing types recv() as Any
        return None


def _local_worker(index: int, conn: Connection, workload: Workload, ctx: RunContext) -> None:
    """A worker process, which exits as soon as it served: its connections are closed and
    its last message sent, so the interpreter's finalization (collecting every loaded
    module's objects) has nothing left to do but keep the coordinator waiting, which on a
    loaded host outlasts the grace of :meth:`LocalProcesses.close` and delays a Ctrl-C."""
    worker_main(index, PipeLink(conn), workload, ctx)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


class _Process:
    def __init__(self, process: Any, pipe: Connection) -> None:
        self.process, self.pipe = process, pipe
        self.pid: int = process.pid
        self.lost = False


class LocalProcesses(Transport):
    """Worker processes on this host (see the module docstring)."""

    def __init__(self, count: int) -> None:
        self.mp = mp.get_context("spawn")
        self.workers: list[_Process | None] = [None] * count

    def start(self, worker: int, workload: Workload, ctx: RunContext) -> None:
        old = self.workers[worker]
        if old is not None:
            old.pipe.close()
        ours, theirs = self.mp.Pipe(duplex=True)
        process = self.mp.Process(target=_local_worker, args=(worker, theirs, workload, ctx),
                                  name=f"tpsbench-worker-{worker}", daemon=True)
        # a signal to the whole group must not end a worker still importing (see
        # tpsbench.core.signals; worker_main ignores them); blocked rather than ignored
        # here, so that one meant for the coordinator is delivered to it, not lost
        with held():
            process.start()
        theirs.close()  # so that the worker's death reads as EOF here
        self.workers[worker] = _Process(process, ours)

    def alive(self, worker: int) -> bool:
        entry = self.workers[worker]
        return entry is not None and not entry.lost and entry.process.is_alive()

    def send(self, worker: int, message: object) -> bool:
        entry = self.workers[worker]
        if entry is None or entry.lost:
            return False
        try:
            entry.pipe.send(message)
            return True
        except (OSError, EOFError):
            return False

    def receive(self, timeout: float) -> list[tuple[int, object]]:
        live = {i: w for i, w in enumerate(self.workers) if w is not None and not w.lost}
        handles: dict[Any, int] = {}
        for index, entry in live.items():
            handles[entry.pipe] = index
            handles[entry.process.sentinel] = index
        out: list[tuple[int, object]] = []
        if not handles:
            return out
        for index in sorted({handles[item] for item in wait(list(handles), timeout=timeout)}):
            out.extend(self._drain(index, live[index]))
        return out

    def _drain(self, index: int, entry: _Process) -> list[tuple[int, object]]:
        """Everything the worker sent; then, if it is gone, WorkerLost."""
        out: list[tuple[int, object]] = []
        try:
            while entry.pipe.poll():
                out.append((index, entry.pipe.recv()))
            if entry.process.exitcode is None:
                return out
        except (EOFError, OSError):
            pass  # the pipe reads as closed once the worker is gone
        entry.process.join(1.0)
        entry.lost = True
        out.append((index, WorkerLost(index, self._exit_text(index))))
        return out

    def kill(self, worker: int) -> None:
        entry = self.workers[worker]
        if entry is not None:
            entry.process.kill()
            entry.process.join(1.0)
            entry.lost = True

    def describe(self, worker: int) -> str:
        entry = self.workers[worker]
        return f"worker {worker} (pid {entry.pid})" if entry is not None else f"worker {worker}"

    def _exit_text(self, worker: int) -> str:
        entry = self.workers[worker]
        code = entry.process.exitcode if entry is not None else None
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return f"{self.describe(worker)} {how}"

    def pids(self) -> list[int]:
        return [w.pid for w in self.workers if w is not None and not w.lost]

    def close(self, grace_s: float) -> None:
        for index in range(len(self.workers)):
            self.send(index, Stop())
        deadline = time.monotonic() + grace_s
        for entry in self.workers:
            if entry is None:
                continue
            entry.process.join(max(0.0, deadline - time.monotonic()))
            if entry.process.is_alive():
                entry.process.kill()
                entry.process.join(1.0)
            entry.pipe.close()
