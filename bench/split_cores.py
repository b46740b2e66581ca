"""The database server pinned to cores of its own for a while (``--split-cores``), its
clients to the others, for bench/vs_sysbench.py and bench/client_paths.py.

Why apart from the CPU meter (bench/cpu_meter, whose /proc readers it uses): it
measures nothing; it changes the machine, and its care is in putting every server thread
back as it was found.
"""

from __future__ import annotations

import contextlib
import os
import signal
from types import TracebackType

from cpu_meter import SERVER_PROCESSES, procfs, server_threads  # type: ignore[import-not-found]  # bench/ is on sys.path, not a package


class SplitCores:
    """The server's threads on ``server_cpus``, this process (and so every client it
    starts from now on: affinity is inherited) on ``client_cpus``, for a ``with`` block.

    Threads and processes the server starts meanwhile (a PostgreSQL backend per
    connection, a MariaDB connection thread) inherit the pinned set; :meth:`pin` catches
    any that started before it took effect. On the way out, by error, Ctrl-C or SIGTERM
    (turned into KeyboardInterrupt while inside) alike, every thread that was there at
    the start gets back the set it had, and one started meanwhile the set its server's
    oldest thread had (the postmaster's, mariadbd's main thread's), never the pinned set
    it inherited: the servers are left as they were found.
    """

    def __init__(self, servers: list[str], server_cpus: frozenset[int], client_cpus: frozenset[int]) -> None:
        self.servers, self.server_cpus, self.client_cpus = servers, server_cpus, client_cpus
        #: (thread id, its start time: ids are reused) -> the set it had before
        self.saved: dict[tuple[int, int | None], set[int]] = {}
        self.first: dict[str, set[int]] = {}  # server -> the set of its oldest thread

    def __enter__(self) -> SplitCores:
        self.own = {int(tid): os.sched_getaffinity(int(tid)) for tid in os.listdir("/proc/self/task")}
        self.previous_term = signal.signal(signal.SIGTERM, _interrupt)
        try:
            self.pin(first=True)
            for tid in self.own:
                os.sched_setaffinity(tid, self.client_cpus)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def pin(self, first: bool = False) -> None:
        """Pin every server thread; the ``first`` time, keep the set each one had (later,
        a thread not seen before holds the pinned set it inherited, not one to restore)."""
        for server in self.servers:
            threads = server_threads(server)
            if not threads:
                raise SystemExit(f"--split-cores: no {'/'.join(SERVER_PROCESSES[server])} process on this host")
            for tid in sorted(threads):
                with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                    if first:
                        cpus = self.saved[(tid, _started(tid))] = os.sched_getaffinity(tid)
                        self.first.setdefault(server, cpus)
                    os.sched_setaffinity(tid, self.server_cpus)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            everything = os.sched_getaffinity(1)
            for server in self.servers:
                for tid in server_threads(server):
                    with contextlib.suppress(ProcessLookupError):
                        os.sched_setaffinity(tid, self.saved.get((tid, _started(tid))) or self.first.get(server)
                                             or everything)
            for tid, cpus in self.own.items():
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(tid, cpus)
        finally:
            signal.signal(signal.SIGTERM, self.previous_term)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def describe(self) -> str:
        return describe_split(self.server_cpus, self.client_cpus)


def describe_split(server_cpus: frozenset[int], client_cpus: frozenset[int]) -> str:
    """The split in words, for the output's header."""
    return f"server on CPU {cpu_text(server_cpus)}, clients on CPU {cpu_text(client_cpus)}"


def _started(tid: int) -> int | None:
    """A thread's start time (clock ticks after boot), None once it is gone."""
    st = procfs.read_stat(f"/proc/{tid}/stat")
    return None if st is None else st.start


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def cpu_text(cpus: frozenset[int]) -> str:
    """A CPU set as a list (``0,1``)."""
    return ",".join(map(str, sorted(cpus)))


def parse_cpus(text: str) -> frozenset[int]:
    """A CPU list as taskset writes one: ``0``, ``0,2``, ``0-3``."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)
