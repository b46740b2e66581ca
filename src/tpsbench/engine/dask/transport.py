"""Workers on a Dask cluster's Dask workers: the second :class:`~tpsbench.engine.transport.Transport`.

Each worker runs on a Dask worker (worker i on the i-th of the run's Dask workers, round
robin) as a long-running task that starts a worker process (tpsbench.engine.dask.worker);
that process opens a TCP connection back to this coordinator, and everything between
the two goes over it, pickled as between local workers (multiprocessing.connection,
authenticated by the run's random key; a start's token picks the one connection taken).

Why a plain TCP connection rather than Dask's own channels: measured side by side, a
message reached the coordinator several times sooner over TCP than through a
distributed.Queue (the scheduler in between) or an actor, for a fraction of the driver's
CPU (bench/experiments/results/dask_channels.txt); distributed no longer has Pub/Sub.
And for the contract the measurement depends on, TCP needs no bookkeeping: a worker's
messages come in the order it sent them, its end comes as end-of-file after the last of
them (WorkerLost then, and only then), and a coordinator that is gone is end-of-file to
the worker, which then ends with its process, where a Queue or an actor would outlive
both ends. The cost: the Dask workers must reach this host at a port it listens on (the
check before the run tries it). A host cut off without a FIN is given up on by TCP
keepalive within about 10 s.

Clocks: each Dask worker's offset from this host's clock is measured before the run
(tpsbench.engine.dask.cluster) and applied here, so that the workers see a step's start
in their own clock and their intervals come back in this one's: intervals are aligned
by the coordinator's clock.
"""

from __future__ import annotations

import dataclasses
import pickle
import secrets
import socket
import struct
import time
from dataclasses import dataclass
from multiprocessing.connection import (
    Connection,
    answer_challenge,
    deliver_challenge,
    wait,
)
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext
from tpsbench.core.workload import Workload
from tpsbench.engine.dask.worker import Hello, Start, run_worker, tune
from tpsbench.engine.protocol import Stop, WorkerLost, WorkerStep
from tpsbench.engine.transport import Transport
from tpsbench.measure.reports import IntervalReport

#: how long a worker process that connected has to authenticate and say hello
HANDSHAKE_S = 5.0


@dataclass(frozen=True)
class Place:
    """A Dask worker of the run, as checked before it (tpsbench.engine.dask.cluster)."""

    address: str
    name: str
    host: str
    pid: int
    python: str
    tpsbench: str
    #: its clock minus this host's (seconds), within +-``bound_s`` (half the round trip)
    offset_s: float
    bound_s: float


@dataclass
class _Slot:
    """One worker: where it runs, its task, and its connection once the process called."""

    place: Place
    attempt: str
    future: Any
    conn: Connection | None = None
    pid: int = 0
    lost: bool = False


class DaskTransport(Transport):
    """Workers as processes started by Dask tasks (see the module docstring). Made and
    checked by :func:`tpsbench.engine.dask.cluster.connect`; owns the Dask client."""

    def __init__(self, client: Any, scheduler: str, host: str) -> None:
        self.client, self.scheduler = client, scheduler
        self.places: list[Place] = []
        self.server = socket.create_server(("", 0))  # every interface: the workers' route to us is theirs
        self.callback = (host, self.server.getsockname()[1])
        self.authkey = secrets.token_bytes(32)
        self.slots: dict[int, _Slot] = {}
        self.closed = False

    @property
    def capacity(self) -> int:
        return len(self.places)

    def facts(self) -> dict[str, Any]:
        """What the run stores of its cluster: the scheduler and each Dask worker as checked."""
        return {"scheduler": self.scheduler, "workers": [dataclasses.asdict(p) for p in self.places]}

    # -- Transport --------------------------------------------------------------------
    def start(self, worker: int, workload: Workload, ctx: RunContext) -> None:
        old = self.slots.pop(worker, None)
        if old is not None:
            self._drop(old)
        place = self._place(worker)
        attempt = secrets.token_hex(8)
        start = pickle.dumps(Start(worker, attempt, self.callback, self.authkey, workload, ctx))
        future = self.client.submit(run_worker, start, key=f"tpsbench-worker-{worker}-{attempt}",
                                    workers=[place.address], allow_other_workers=False, pure=False)
        self.slots[worker] = _Slot(place, attempt, future)

    def _place(self, worker: int) -> Place:
        """Worker ``worker``'s Dask worker: its own in turn, or the next of the run's that is
        still there (a Dask worker its nanny restarted keeps its name, not its address)."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        live = {str(info.get("name")): address for address, info in workers.items()}
        turn = worker % len(self.places)
        for place in self.places[turn:] + self.places[:turn]:
            if place.address in live.values():
                return place
            if place.name in live:
                return dataclasses.replace(place, address=live[place.name])
        raise TpsbenchError(f"none of the run's Dask workers is left on the cluster at {self.scheduler}")

    def alive(self, worker: int) -> bool:
        slot = self.slots.get(worker)
        return slot is not None and not slot.lost

    def send(self, worker: int, message: object) -> bool:
        slot = self.slots.get(worker)
        if slot is None or slot.lost or slot.conn is None:
            return False
        if isinstance(message, WorkerStep):  # its start in the worker's clock
            message = dataclasses.replace(message, start_at=message.start_at + slot.place.offset_s)
        try:
            slot.conn.send(message)
            return True
        except (OSError, EOFError):
            return False

    def receive(self, timeout: float) -> list[tuple[int, object]]:
        out: list[tuple[int, object]] = []
        for index, slot in sorted(self.slots.items()):
            if not slot.lost and slot.conn is None and slot.future.done():
                out.append((index, self._lose(index, self._ended_early(slot))))
        if out:
            return out
        conns: dict[Any, int] = {s.conn: i for i, s in self.slots.items() if s.conn is not None and not s.lost}
        ready: list[Any] = wait([self.server, *conns], timeout)
        if self.server in ready and (new := self._accept()) is not None:
            conns[self.slots[new].conn] = new
            ready.append(self.slots[new].conn)  # its first messages may be in already
        for index in sorted({conns[c] for c in ready if c in conns}):
            out.extend(self._drain(index, self.slots[index]))
        return out

    def _accept(self) -> int | None:
        """Take a worker process's connection: the run's key, then a start's token; None for
        one that is not (a stale start, the check before the run, a stranger)."""
        sock, _ = self.server.accept()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(HANDSHAKE_S))
        conn = Connection(sock.detach())
        try:
            deliver_challenge(conn, self.authkey)
            answer_challenge(conn, self.authkey)
            hello = conn.recv() if conn.poll(HANDSHAKE_S) else None
        except Exception:  # noqa: BLE001 - a wrong key, a stranger, a timeout: refused below
            hello = None
        for index, slot in self.slots.items():
            if isinstance(hello, Hello) and hello.attempt == slot.attempt and slot.conn is None and not slot.lost:
                tune(conn.fileno())
                _blocking(conn)
                slot.conn, slot.pid = conn, hello.pid
                return index
        conn.close()
        return None

    def _drain(self, index: int, slot: _Slot) -> list[tuple[int, object]]:
        """Everything the worker sent, in its clock turned into ours; then, at end-of-file, WorkerLost."""
        out: list[tuple[int, object]] = []
        conn = slot.conn
        try:
            while conn is not None and conn.poll():
                message = conn.recv()
                if isinstance(message, IntervalReport):
                    message.t_start -= slot.place.offset_s
                    message.t_end -= slot.place.offset_s
                out.append((index, message))
            return out
        except (EOFError, OSError):
            pass
        out.append((index, self._lose(index, f"{self.describe(index)} lost its connection: the worker process or "
                                              "its Dask worker ended, or its host was cut off")))
        return out

    def _ended_early(self, slot: _Slot) -> str:
        future = slot.future
        if future.status == "error":
            why = f"failed: {type(future.exception()).__name__}: {future.exception()}"
        elif future.status == "finished":
            why = f"exited with code {future.result()}"
        else:
            why = f"was {future.status}"
        return (f"the worker process on Dask worker {slot.place.address} ({slot.place.host}) {why} before it "
                f"connected to tpsbench at {self.callback[0]}:{self.callback[1]} (see that Dask worker's log)")

    def _lose(self, index: int, why: str) -> WorkerLost:
        self._drop(self.slots[index])
        return WorkerLost(index, why)

    def _drop(self, slot: _Slot) -> None:
        slot.lost = True
        if slot.conn is not None:
            slot.conn.close()
        if slot.future.done():
            slot.future.release()
        else:
            slot.future.cancel()  # its process ends at end-of-file: a task's thread cannot be stopped

    def kill(self, worker: int) -> None:
        slot = self.slots.get(worker)
        if slot is not None:
            self._drop(slot)

    def describe(self, worker: int) -> str:
        slot = self.slots.get(worker)
        if slot is None:
            return f"worker {worker}"
        pid = f"pid {slot.pid} " if slot.pid else ""
        return f"worker {worker} ({pid}on {slot.place.host}, Dask worker {slot.place.address})"

    def pids(self) -> list[int]:
        here = socket.gethostname()
        return [s.pid for s in self.slots.values() if s.pid and not s.lost and s.place.host == here]

    def close(self, grace_s: float) -> None:
        """Stop every worker, wait up to ``grace_s`` for their processes to hang up and their
        tasks to end, then drop the rest and the Dask client (again: nothing more)."""
        if self.closed:
            return
        self.closed = True
        for index in self.slots:
            self.send(index, Stop())
        deadline = time.monotonic() + grace_s
        while (conns := {s.conn: s for s in self.slots.values() if s.conn is not None and not s.lost}) and \
                (left := deadline - time.monotonic()) > 0:
            ready: list[Any] = wait(list(conns), left)
            for conn in ready:
                try:
                    while conn.poll():
                        conn.recv()  # too late to count: the run is over
                except (EOFError, OSError):
                    conns[conn].lost = True
                    conn.close()
        while any(not s.future.done() for s in self.slots.values()) and time.monotonic() < deadline:
            time.sleep(0.05)  # a task cancelled as it returns makes its Dask worker log a warning
        for slot in self.slots.values():
            self._drop(slot)
        self.server.close()
        self.client.close(timeout=2)


def _timeval(seconds: float) -> bytes:
    """A struct timeval for SO_RCVTIMEO."""
    return struct.pack("ll", int(seconds), int((seconds % 1) * 1e6))


def _blocking(conn: Connection) -> None:
    """No receive timeout any more: past the handshake a worker may be quiet for a whole interval."""
    sock = socket.socket(fileno=conn.fileno())
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(0))
    finally:
        sock.detach()
