"""CPU on a machine shared by a database server and its clients: the server's CPU per
benchmark, the clients', how busy each core was, and the server pinned to cores of its
own for a while (``--split-cores``), for bench/vs_sysbench.py and the experiments beside it.

Why apart: the comparison scripts need the same meters, and each would otherwise carry
its own copy of /proc parsing and of the affinity bookkeeping that puts every server
thread back as it was found.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from tpsbench.measure.observers import StepObserver
from tpsbench.measure.procfs import tree_cpu

SERVER_PROCESSES = {"postgresql": ("postgres",), "mariadb": ("mariadbd", "mysqld")}


def _proc_cpu(pid: str) -> tuple[str, int] | None:
    """(command name, utime + stime + cutime + cstime in ticks) of a process, None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    return text[text.index("(") + 1:text.rindex(")")], sum(int(v) for v in rest[11:15])


def server_ticks(server: str, db: str) -> dict[int, int]:
    """CPU ticks so far of the server's processes serving ``db`` (PostgreSQL's backends
    whose process title names it; MariaDB: mariadbd as a whole), by process id."""
    found: dict[int, int] = {}
    marker = f" {db} ".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if server == "postgresql":
            try:
                if marker not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue
            except OSError:
                continue
        cpu = _proc_cpu(pid)
        if cpu and cpu[0] in SERVER_PROCESSES[server]:
            found[int(pid)] = cpu[1]
    return found


class ServerCpu(threading.Thread):
    """CPU seconds the server spends on the benchmark database.

    PostgreSQL: the backends whose process title names the database (``postgres: user
    tpsb_sb_bench ...``), sampled every 0.1 s until stopped, so that other databases'
    work on the same server (a shared machine) is not counted. MariaDB runs every
    connection as a thread of one process: its whole CPU is counted there.
    """

    def __init__(self, server: str, db: str) -> None:
        super().__init__(daemon=True)
        self.server, self.db, self.latest, self.stop_event = server, db, {}, threading.Event()
        self.base = self.total_ticks() if server == "mariadb" else 0

    def total_ticks(self) -> int:
        return sum(server_ticks(self.server, self.db).values())

    def run(self) -> None:
        if self.server == "mariadb":
            return
        while not self.stop_event.wait(0.1):
            self.latest.update(server_ticks(self.server, self.db))

    def seconds(self) -> float:
        self.stop_event.set()
        self.join()
        ticks = self.total_ticks() - self.base if self.server == "mariadb" else sum(self.latest.values())
        return ticks / os.sysconf("SC_CLK_TCK")


def cpu_times(cpus: frozenset[int] | None = None) -> tuple[float, float]:
    """(busy, total) jiffies from /proc/stat: of all cores, or of the cores ``cpus`` only."""
    lines = Path("/proc/stat").read_text().splitlines()
    wanted = [lines[0]] if cpus is None else [line for line in lines if line.startswith("cpu") and
                                              line[3:4].isdigit() and int(line.split()[0][3:]) in cpus]
    busy = total = 0
    for line in wanted:
        fields = [int(v) for v in line.split()[1:]]
        busy, total = busy + sum(fields) - fields[3] - fields[4], total + sum(fields)
    return busy, total


class Meter:
    """Client CPU (this process's finished children: sysbench, or the engine's workers),
    server CPU (on database ``db``) and machine load over a ``with`` block; with
    ``server_cpus`` (--split-cores) also how busy those cores were, in ``server_cores_busy``."""

    def __init__(self, server: str, db: str, server_cpus: frozenset[int] | None = None) -> None:
        self.server, self.db, self.server_cpus = server, db, server_cpus
        self.server_cores_busy: float | None = None

    def __enter__(self) -> Meter:  # noqa: PYI034 - a plain class, never subclassed
        self.server_meter = ServerCpu(self.server, self.db)
        self.server_meter.start()
        self.children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.own = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu = cpu_times()
        self.server_cores = cpu_times(self.server_cpus) if self.server_cpus else None
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.t0
        children, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        self.client_cpu = sum(getattr(children, f) - getattr(self.children, f) for f in ("ru_utime", "ru_stime"))
        self.client_cpu += sum(getattr(own, f) - getattr(self.own, f) for f in ("ru_utime", "ru_stime"))
        self.busy = _share(self.cpu, cpu_times())
        if self.server_cores is not None:
            self.server_cores_busy = _share(self.server_cores, cpu_times(self.server_cpus))
        self.server_cpu = self.server_meter.seconds()


class WindowMeter(StepObserver):
    """:class:`Meter`'s figures for a tpsbench step, over its steady window exactly: a step
    observer, sampled by the engine at the window's edges.

    Why not :class:`Meter` around the run: it would span the workers' start, the users'
    connections and the ramp-up, when the server is idle part of the time and does work
    for transactions the step does not count. Scaling its CPU to the window misplaces
    both (the server's CPU per transaction reads several percent low and its cores'
    busy share several percent low, 2026-12-02), where sysbench's own run is nearly all
    window. Read the figures from the step with :meth:`of`.
    """

    name = "bench_meter"

    def __init__(self, server: str, db: str, server_cpus: frozenset[int] | None = None) -> None:
        self.server, self.db, self.server_cpus = server, db, server_cpus

    def sample(self) -> tuple[dict[int, int], int, tuple[float, float], tuple[float, float] | None]:
        return (server_ticks(self.server, self.db), tree_cpu(os.getpid()), cpu_times(),
                cpu_times(self.server_cpus) if self.server_cpus else None)

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        tick = os.sysconf("SC_CLK_TCK")
        # a backend that started within the window counts whole; one that ended in it is lost
        server = sum(ticks - before[0].get(pid, 0) for pid, ticks in after[0].items())
        figures = {"seconds": seconds, "server_cpu_s": server / tick, "client_cpu_s": (after[1] - before[1]) / tick,
                   "machine_busy": _share(before[2], after[2])}
        if before[3] is not None:
            figures["server_cores_busy"] = _share(before[3], after[3])
        return figures

    @classmethod
    def of(cls, observations: dict[str, dict[str, float]]) -> dict[str, float]:
        """The figures of a step's steady window (its ``observations``)."""
        found = observations.get(cls.name)
        if not found:
            raise SystemExit("the run's steady window was not sampled: no server or client CPU to show")
        return found


def _share(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Busy share of the cores between two :func:`cpu_times` readings."""
    return (after[0] - before[0]) / max(after[1] - before[1], 1)


def server_threads(server: str) -> dict[int, int]:
    """Every thread of the server's processes (thread id -> its process id): PostgreSQL's
    postmaster, background processes and backends, mariadbd's connection threads."""
    threads = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        found = _proc_cpu(pid)
        if found and found[0] in SERVER_PROCESSES[server]:
            with contextlib.suppress(OSError):
                threads.update({int(tid): int(pid) for tid in os.listdir(f"/proc/{pid}/task")})
    return threads


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

    def __enter__(self) -> SplitCores:  # noqa: PYI034 - a plain class, never subclassed
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
    try:
        text = Path(f"/proc/{tid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[19])


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
