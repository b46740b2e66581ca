"""The host's CPU beside every step: the first step observer.

Per interval and per steady window, in percent of all cores' time: the share spent in
user code, in the kernel, waiting for I/O, idle and stolen by a hypervisor (/proc/stat:
``user``, ``system``, ``iowait``, ``idle``, ``steal``), the share the driver itself took
(``driver``: this process and every process under it, the workers), the share of the
database server's processes when the server runs on this host (``server``: PostgreSQL's
postmaster and all its children, mariadbd; absent for a remote server and for SQLite,
whose "server" is the driver itself), and what is left busy for every other process
(``others``: 100 - idle - iowait - steal - driver - server, at least 0). Storage reviews
put CPU beside TPS because a configuration that is fast only because the host had cores
to spare is not the one they meant to measure, and a driver that takes the database's
cores is measuring itself; the split says whose CPU it was, so that a step limited by the
server's CPU, the driver's or a neighbour's can be told apart (tpsbench.measure.bottleneck).

Three more figures catch limits the shares of all cores hide:

- ``driver_peak``: the busiest single driver process's CPU in percent of ONE core. A
  Python worker cannot use much more than one core, so 95 here means the load generator
  was the limit even on an idle many-core host.
- ``busy_allowed``: percent busy (not idle, iowait or steal) of the CPUs the driver and
  the local server may run on (the union of their affinity masks, read once per step):
  both pinned to one core of two show 100 here while the host shows 50. ``allowed_pct``
  says what those CPUs are of the host's (50 for one of two), so that the driver's and
  the server's shares can be weighed against the busy time of their own CPUs rather than
  against other processes' on CPUs they may not use.
- ``io_pressure``: percent of the time at least one task was stalled on I/O (PSI,
  /proc/pressure/io "some"); absent where the kernel has no PSI. A blkio throttle delays
  I/O before the device's accounting sees it, so a throttled device can show no util
  while the database waits: the stall shows here.

Workers on other hosts (tpsbench.engine.dask.worker) read their own host with this same
observer and send its readings with their reports, as the observer ``host_cpu@<host>``
(:func:`on_worker_host`), so that the store keeps every host's CPU beside the
coordinator's ``host_cpu`` with no table of its own. Each reading names the driver's
share by the process tree it counted (``driver.<pid>``, likewise ``driver_peak.<pid>``):
workers sharing a host, or a process, then add up to the host's driver share once each
(:func:`worker_hosts`). The other figures of this split do not travel from worker hosts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

from tpsbench.measure.observers import StepObserver
from tpsbench.measure.procfs import (
    allowed_cpus,
    cpu_lines,
    descendants,
    io_stall_us,
    processes,
    tree_cpu,
)

#: the figures of every reading, in report order (percent of all cores' time)
FIGURES = ("user", "system", "iowait", "idle", "steal", "driver")
#: the figures that split the busy time by whose it was, and the limits the shares hide
SPLIT = ("server", "others", "driver_peak", "busy_allowed", "allowed_pct", "io_pressure")
#: the figures that travel from a worker host, per process tree
TRAVELLING = ("driver", "driver_peak")
#: the results store's longest observer name
NAME_MOST = 64


class CpuSample(NamedTuple):
    """One sample: /proc/stat, the driver's and the server's trees, and the I/O stall."""

    host: dict[str, int]
    #: CPU number -> (busy, total) ticks
    per_cpu: dict[int, tuple[int, int]]
    driver: int
    #: each driver process's (start, own CPU ticks), for the busiest one
    driver_processes: dict[int, tuple[int, int]]
    server: int | None
    io_stall_us: int | None


class HostCpu(StepObserver):
    """CPU of the host, and of the driver's and the server's processes apart (see the module docstring)."""

    name = "host_cpu"

    def __init__(self, root_pid: int | None = None, server_pid: int | None = None,
                 find_server: Callable[[], int | None] | None = None) -> None:
        #: the driver's top process; its descendants are the driver's too
        self.root = root_pid or os.getpid()
        #: finds the server's top process (:meth:`Target.server_pid`), again at a step's start
        #: where it is gone: a server restarted before the step (``--cache cold``) is a new process
        self.find_server = find_server
        #: the local server's top process; None where there is none here
        self.server = find_server() if server_pid is None and find_server is not None else server_pid
        #: the CPUs the driver and the server may run on, read at each step's start
        self.allowed: set[int] = set()

    def step_started(self, step: int, users: int) -> None:
        """The affinity masks, once per step: pinning is done before a run, not during it;
        the server's process found again if it is gone (restarted)."""
        stats = processes()
        if self.find_server is not None and self.server not in stats:
            self.server = self.find_server()
            stats = processes()
        pids = descendants(stats, self.root) + (descendants(stats, self.server) if self.server else [])
        self.allowed = allowed_cpus(pids)

    def sample(self) -> CpuSample:
        """/proc read once; a server whose top process is gone (restarted) has no share."""
        host, per_cpu = cpu_lines()
        stats = processes()
        mine = descendants(stats, self.root)
        return CpuSample(host, per_cpu, sum(stats[p].cpu + stats[p].children_cpu for p in mine),
                         {p: (stats[p].start, stats[p].cpu) for p in mine},
                         tree_cpu(self.server, stats) if self.server in stats else None, io_stall_us())

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        d = {kind: after.host[kind] - before.host[kind] for kind in after.host}
        total: float = sum(d.values())
        if total <= 0:
            return {}

        def share(ticks: float) -> float:
            return round(100.0 * max(ticks, 0) / total, 2)

        figures = {"user": share(d["user"] + d["nice"]), "system": share(d["system"] + d["irq"] + d["softirq"]),
                   "iowait": share(d["iowait"]), "idle": share(d["idle"]), "steal": share(d["steal"]),
                   "driver": share(after.driver - before.driver)}
        if after.server is not None and before.server is not None:
            figures["server"] = share(after.server - before.server)
        unexplained = 100.0 - sum(figures[k] for k in ("idle", "iowait", "steal", "driver")) - figures.get("server", 0)
        figures["others"] = round(max(0.0, unexplained), 2)
        one_core = total / max(len(after.per_cpu), 1)
        figures["driver_peak"] = round(100.0 * _busiest(before.driver_processes, after.driver_processes) / one_core, 2)
        busy = _busy_share(before.per_cpu, after.per_cpu, self.allowed)
        if busy is not None:
            figures["busy_allowed"] = busy
            known = [c for c in after.per_cpu if c in self.allowed] if self.allowed else list(after.per_cpu)
            figures["allowed_pct"] = round(100.0 * len(known) / max(len(after.per_cpu), 1), 2)
        if before.io_stall_us is not None and after.io_stall_us is not None and seconds > 0:
            stalled = (after.io_stall_us - before.io_stall_us) / (seconds * 1e6)
            figures["io_pressure"] = round(min(100.0, max(0.0, 100.0 * stalled)), 2)
        return figures


def _busiest(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]) -> int:
    """The most CPU ticks one process took between two samples (one that started in
    between counts from its start)."""
    most = 0
    for pid, (start, cpu) in after.items():
        earlier = before.get(pid)
        most = max(most, cpu - (earlier[1] if earlier and earlier[0] == start else 0))
    return most


def _busy_share(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]], cpus: set[int]) -> float | None:
    """Percent busy of the CPUs ``cpus`` between two samples (all of them if none is known)."""
    chosen = [c for c in after if c in before and (not cpus or c in cpus)]
    busy = sum(after[c][0] - before[c][0] for c in chosen)
    total = sum(after[c][1] - before[c][1] for c in chosen)
    return round(100.0 * busy / total, 2) if total > 0 else None


def on_worker_host(figures: dict[str, float], host: str, root_pid: int) -> dict[str, dict[str, float]]:
    """A worker host's reading as it travels: ``host_cpu@<host>``, the driver's share and
    busiest process as ``driver.<root_pid>`` and ``driver_peak.<root_pid>`` (the process
    tree it counted); the split's other figures stay home."""
    tagged = {k: v for k, v in figures.items() if k in FIGURES and k != "driver"}
    tagged |= {f"{k}.{root_pid}": figures[k] for k in TRAVELLING if k in figures}
    return {f"{HostCpu.name}@{host}"[:NAME_MOST]: tagged} if figures else {}


def worker_hosts(readings: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The worker hosts' readings as they are stored: each host's driver share the sum of
    its process trees', its busiest driver process the busiest of theirs (see
    :func:`on_worker_host`)."""
    out = {}
    for name, figures in readings.items():
        out[name] = {k: v for k, v in figures.items() if k.partition(".")[0] not in TRAVELLING}
        driver = [v for k, v in figures.items() if k.startswith("driver.")]
        peak = [v for k, v in figures.items() if k.startswith("driver_peak.")]
        if driver:
            out[name]["driver"] = round(sum(driver), 2)
        if peak:
            out[name]["driver_peak"] = max(peak)
    return out
