"""How the coordinator reaches its workers, and how a worker answers: the transport seam.

Why an interface: where the workers run is not the coordinator's business. Today they
are local processes joined by pipes (tpsbench.engine.local); workers on other hosts
(Dask) are one more implementation of the same two small classes. The coordinator
only starts workers, sends them messages (tpsbench.engine.protocol), receives theirs,
and learns that one died; the worker only sends and waits for messages.

The contract a transport keeps, because the measurement depends on it:

- a worker's messages arrive in the order it sent them;
- :class:`~tpsbench.engine.protocol.WorkerLost` for a worker comes after every message
  that worker sent, and once;
- ``receive`` returns within its timeout even when nothing arrives, so that the
  coordinator can act on Ctrl-C and deadlines.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpsbench.core.session import RunContext
    from tpsbench.core.workload import Workload


class Transport(ABC):
    """The coordinator's side: a pool of workers numbered 0..count-1."""

    @abstractmethod
    def start(self, worker: int, workload: Workload, ctx: RunContext) -> None:
        """Start worker ``worker`` (again, if it died): it answers WorkerReady, or WorkerFailed."""

    @abstractmethod
    def alive(self, worker: int) -> bool:
        """Whether the worker was started and has not been lost."""

    @abstractmethod
    def send(self, worker: int, message: object) -> bool:
        """Hand ``message`` to the worker; False when it cannot be reached."""

    @abstractmethod
    def receive(self, timeout: float) -> list[tuple[int, object]]:
        """(worker, message) pairs that arrived, in each worker's order, waiting at most
        ``timeout`` seconds for the first; WorkerLost events among them."""

    @abstractmethod
    def kill(self, worker: int) -> None:
        """End the worker now (it did not stop in time); it is then lost, with no event."""

    @abstractmethod
    def describe(self, worker: int) -> str:
        """The worker in problems and messages: "worker 1 (pid 4242)"."""

    @abstractmethod
    def pids(self) -> list[int]:
        """Process ids of the live workers on this host (the host CPU observer counts them)."""

    @abstractmethod
    def close(self, grace_s: float) -> None:
        """Stop every worker: Stop, up to ``grace_s`` seconds to exit, then kill."""


class WorkerLink(ABC):
    """The worker's side: its one line to the coordinator."""

    @abstractmethod
    def send(self, message: object) -> None:
        """Send ``message``; raises OSError or EOFError once the coordinator is gone."""

    @abstractmethod
    def poll(self, timeout: float | None) -> object | None:
        """The next message, waiting up to ``timeout`` seconds (None: until one comes);
        None if none came. Raises EOFError once the coordinator is gone."""
