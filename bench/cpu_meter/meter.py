"""The CPU meter around a ``with`` block (:class:`Meter`) and over a tpsbench step's
steady window (:class:`WindowMeter`): client, server and machine CPU (bench/cpu_meter).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from typing import Any

from cpu_meter.readers import TICK, busy_share, cpu_times, procfs, server_ticks
from tpsbench.measure.observers import StepObserver


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
        return ticks / TICK


class Meter:
    """Client CPU (this process and its finished children: sysbench, or the engine's workers),
    server CPU (on database ``db``) and machine load over a ``with`` block; with
    ``server_cpus`` (--split-cores) also how busy those cores were, in ``server_cores_busy``."""

    def __init__(self, server: str, db: str, server_cpus: frozenset[int] | None = None) -> None:
        self.server, self.db, self.server_cpus = server, db, server_cpus
        self.server_cores_busy: float | None = None

    def __enter__(self) -> Meter:
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
        self.busy = busy_share(self.cpu, cpu_times())
        if self.server_cores is not None:
            self.server_cores_busy = busy_share(self.server_cores, cpu_times(self.server_cpus))
        self.server_cpu = self.server_meter.seconds()


class WindowMeter(StepObserver):
    """:class:`Meter`'s figures for a tpsbench step, over its steady window exactly: a step
    observer, sampled by the engine at the window's edges.

    Why not :class:`Meter` around the run: it would span the workers' start, the users'
    connections and the ramp-up, when the server is idle part of the time and does work
    for transactions the step does not count. Scaling its CPU to the window misplaces
    both (the server's CPU per transaction and its cores' busy share read low), where
    sysbench's own run is nearly all window. Read the figures from the step with :meth:`of`.
    """

    name = "bench_meter"

    def __init__(self, server: str, db: str, server_cpus: frozenset[int] | None = None) -> None:
        self.server, self.db, self.server_cpus = server, db, server_cpus

    def sample(self) -> tuple[dict[int, int], int, tuple[int, int], tuple[int, int] | None]:
        return (server_ticks(self.server, self.db), procfs.tree_cpu(os.getpid()), cpu_times(),
                cpu_times(self.server_cpus) if self.server_cpus else None)

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        # a backend that started within the window counts whole; one that ended in it is lost
        server = sum(ticks - before[0].get(pid, 0) for pid, ticks in after[0].items())
        figures = {"seconds": seconds, "server_cpu_s": server / TICK, "client_cpu_s": (after[1] - before[1]) / TICK,
                   "machine_busy": busy_share(before[2], after[2])}
        if before[3] is not None:
            figures["server_cores_busy"] = busy_share(before[3], after[3])
        return figures

    @classmethod
    def of(cls, observations: dict[str, dict[str, float]]) -> dict[str, float]:
        """The figures of a step's steady window (its ``observations``)."""
        found = observations.get(cls.name)
        if not found:
            raise SystemExit("the run's steady window was not sampled: no server or client CPU to show")
        return found


