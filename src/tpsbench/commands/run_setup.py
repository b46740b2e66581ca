"""What a run reads and opens before its steps (tpsbench.commands.run): its cache mode and
what to say of memory, the observers that read beside every step, the Dask cluster, and
the database's own counts for the honesty check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpsbench.commands.cache import cold_refused
from tpsbench.commands.run_config import RunConfig
from tpsbench.core.target import Target
from tpsbench.core.workload import Workload
from tpsbench.measure.db_counters import DatabaseCounters
from tpsbench.measure.db_waits import DbWaits
from tpsbench.measure.devices import Device
from tpsbench.measure.disk_io import DiskIo
from tpsbench.measure.host_cpu import HostCpu
from tpsbench.measure.memory import MemoryFit, memory_fit
from tpsbench.measure.observers import StepObserver
from tpsbench.measure.reachability import Reachability

if TYPE_CHECKING:
    from tpsbench.engine.dask.transport import DaskTransport


def connect_cluster(config: RunConfig, url: str, live: Callable[[str], None] | None) -> DaskTransport | None:
    """The Dask cluster's workers, checked, when the run has one. Imported here only, so
    that tpsbench without the ``distributed`` extra never imports Dask."""
    if not config.cluster:
        return None
    from tpsbench.engine.dask.cluster import connect, describe

    cluster = connect(config.cluster, config.cluster_workers, url)
    if live is not None:
        live(describe(cluster))
    return cluster


@dataclass(frozen=True)
class MemoryNotes:
    fit: MemoryFit
    notes: list[str]


def cache_mode(asked: str, target: Target) -> tuple[str, MemoryNotes]:
    """The cache mode the run gets, and what to say of it before the run: why ``cold``
    cannot be (the run goes on warm), and whether the whole database fits in memory
    (unless a cached run is the point)."""
    notes = []
    why = cold_refused(target) if asked == "cold" else ""
    if why:
        notes.append(f"--cache cold: {why}, so the page cache and the server's buffer pool stay warm")
    cache = "warm" if why else asked
    fit = memory_fit(target)
    if cache == "warm" and fit.line():
        notes.append(fit.line())
    return cache, MemoryNotes(fit, notes)


def default_observers(target: Target, devices: Sequence[Device]) -> list[StepObserver]:
    """What reads beside every step unless told otherwise: the host's CPU (the server's
    share apart where it runs here, its process found once per run), the database's
    outages, its own counters and its sessions' waits (where it has sessions), and the
    I/O of the devices its data lives on."""
    watch: list[StepObserver] = [HostCpu(find_server=target.server_pid), Reachability(target),
                                 DatabaseCounters(target)]
    if target.wait_kinds:
        watch.append(DbWaits(target))
    return watch + [DiskIo(devices)] if devices else watch


def database_counts(wl: Workload, target: Target) -> dict[str, int]:
    with target.translate_errors("reading the database's own counters"):
        conn = target.connect()
        try:
            return wl.database_counts(conn)
        finally:
            conn.close()
