"""A worker on a Dask worker: the long-running task, and the worker process it starts.

A run on a Dask cluster (tpsbench.engine.dask.transport) has the same workers as a local
run (tpsbench.engine.worker), one process each, started on the client machine by a
long-running Dask task, :func:`run_worker`, which secedes from its Dask worker's thread
pool (so that any number of them can share a Dask worker, and its pool stays free) and
waits for the process to end.

Why a process of its own, not the task's thread: the worker's users then do not share a
GIL with the Dask worker's event loop and heartbeats (a busy worker would starve them,
and the scheduler would take it for dead); a worker that must end ends with its process,
its user threads and connections with it, where a task's thread cannot be stopped from
outside; and the worker's main thread is its own, signals included, as at home. The
process starts in a process group of its own (a Ctrl-C at the Dask worker's terminal is
for the Dask worker) but not a session: on Linux a session is a scheduling group of its
own (autogroup), which would give it another share of a busy host's CPU than a local
worker gets; nor with the environment a Dask nanny adds for compute workers
(:func:`without_nanny_environ`). It reads what to run from its stdin, and ends when that
pipe closes: its Dask worker is gone, whether it exited or was killed.

The process connects to the coordinator over TCP (multiprocessing.connection with the
run's key; tpsbench.engine.dask.transport says why TCP), says which start of which
worker it is (:class:`Hello`), and serves as every worker does, through
:class:`HostLink`, which reads this host's CPU (tpsbench.measure.host_cpu, sampled at the
step's boundaries as the coordinator samples its own host) and sends it with every
report: the per-host CPU of every worker host is stored with the run.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Client
from typing import IO, Any

from tpsbench.core.session import RunContext
from tpsbench.core.workload import Workload
from tpsbench.engine.local import PipeLink
from tpsbench.engine.protocol import WorkerStep, WorkerStepDone, interval_bounds
from tpsbench.engine.transport import WorkerLink
from tpsbench.engine.worker import worker_main
from tpsbench.measure.host_cpu import HostCpu, on_worker_host
from tpsbench.measure.observers import Observers, Readings
from tpsbench.measure.reports import IntervalReport

#: the worker process's exit code once its Dask worker is gone (its stdin closed)
ORPHANED = 3
#: TCP keepalive (idle, interval in s, probes) and the longest unacknowledged send (ms): a
#: peer whose host is cut off, which sends no FIN, is given up on within about 10 s
KEEPALIVE = {"TCP_KEEPIDLE": 5, "TCP_KEEPINTVL": 1, "TCP_KEEPCNT": 5, "TCP_USER_TIMEOUT": 10_000}


@dataclass(frozen=True)
class Start:
    """What a worker process runs, handed to it on its stdin (pickled by the coordinator)."""

    index: int
    #: this start's token: the coordinator takes one connection per start
    attempt: str
    address: tuple[str, int]
    authkey: bytes
    workload: Workload
    ctx: RunContext


@dataclass(frozen=True)
class Hello:
    """Worker process -> coordinator, first on its connection: which start, and where it runs."""

    attempt: str
    pid: int
    host: str


def tune(fd: int) -> None:
    """Keepalive and no Nagle delay on the TCP socket of a connection, both ends (see KEEPALIVE)."""
    sock = socket.socket(fileno=os.dup(fd))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for name, value in KEEPALIVE.items():
            if hasattr(socket, name):  # Linux names; elsewhere the system's defaults stay
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
    finally:
        sock.close()


class HostLink(WorkerLink):
    """A worker's link that adds its host's CPU to its reports (see the module docstring).

    The driver's share counts ``root_pid``'s process tree: the Dask worker process and the
    worker processes it started.
    """

    def __init__(self, link: WorkerLink, host: str, root_pid: int) -> None:
        self.link, self.host, self.root = link, host, root_pid
        self.observers = Observers([HostCpu(root_pid)])

    def poll(self, timeout: float | None) -> object | None:
        message = self.link.poll(timeout)
        if isinstance(message, WorkerStep):
            bounds = interval_bounds(message.rampup_s, message.duration_s, message.interval_s)
            self.observers.start_step(message.step, len(message.users), message.start_at, bounds)
        elif message is not None:  # a Stop or an EndStep: the step's last report must not wait for a sample
            self.observers.halt()
        return message

    def send(self, message: object) -> None:
        if isinstance(message, IntervalReport):
            message.hosts = self.tagged(self.observers.interval(message.interval))
        elif isinstance(message, WorkerStepDone):
            self.observers.end_step(message.step)
            message = dataclasses.replace(message, hosts=self.tagged(self.observers.steady()))
        self.link.send(message)

    def tagged(self, readings: Readings) -> Readings:
        return on_worker_host(readings.get(HostCpu.name, {}), self.host, self.root)


def run_worker(start: bytes) -> int:
    """The long-running Dask task: start the worker process, hand it ``start`` (a pickled
    :class:`Start`), keep its stdin open while it runs, and return its exit code."""
    import dask
    from distributed import secede

    secede()
    child = subprocess.Popen([sys.executable, "-m", "tpsbench.engine.dask.worker"], stdin=subprocess.PIPE,
                             process_group=0, env=without_nanny_environ(dask.config))
    stdin: IO[bytes] = child.stdin  # type: ignore[assignment]  # not None: opened with stdin=PIPE
    try:
        stdin.write(start)
        stdin.flush()
        return child.wait()
    except BrokenPipeError:  # it ended before it read what to run
        return child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        stdin.close()


def without_nanny_environ(config: Any) -> dict[str, str]:
    """This environment less what a Dask nanny adds for its compute workers
    (``distributed.nanny.pre-spawn-environ``), which a local worker does not have: its
    MALLOC_TRIM_THRESHOLD_=65536 cost the worker process 7-11% more CPU per TPC-C
    transaction (bench/results/distributed_overhead.txt)."""
    added = config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    return {k: v for k, v in os.environ.items() if not (k in added and v == str(added[k]))}


def _orphaned(fd: int) -> None:
    """End this process once its Dask worker is gone: its task's end of our stdin closed.
    (The file descriptor, not sys.stdin: a thread blocked in a buffered read holds its lock,
    which the interpreter's exit then cannot take.)"""
    while os.read(fd, 65536):
        pass
    os._exit(ORPHANED)


def main(stdin: Any = None) -> None:
    """The worker process (``python -m tpsbench.engine.dask.worker``): connect, say hello, serve."""
    stdin = stdin or sys.stdin.buffer
    start: Start = pickle.load(stdin)  # all the task writes: nothing is left in the buffer
    threading.Thread(target=_orphaned, args=(stdin.fileno(),), name="orphaned", daemon=True).start()
    conn = Client(start.address, authkey=start.authkey)
    tune(conn.fileno())
    host = socket.gethostname()
    conn.send(Hello(start.attempt, os.getpid(), host))
    try:
        worker_main(start.index, HostLink(PipeLink(conn), host, os.getppid()), start.workload, start.ctx)
    finally:
        conn.close()


if __name__ == "__main__":
    # through the module's own name: what this process pickles (Hello) must unpickle as
    # tpsbench.engine.dask.worker's at the coordinator, not as this __main__'s
    from tpsbench.engine.dask.worker import main as serve

    serve()
