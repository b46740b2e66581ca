"""The host's CPU beside every step: the first step observer.

Per interval and per steady window: the share of all cores' time spent in user code,
in the kernel, waiting for I/O and idle (/proc/stat), and the share the driver itself
took (this process and every process under it: the workers). Storage reviews put CPU
beside TPS because a configuration that is fast only because the host had cores to
spare is not the one they meant to measure, and a driver that takes the database's
cores is measuring itself.

Workers on other hosts (tpsbench.engine.dask_worker) read their own host with this same
observer and send its readings with their reports, as the observer ``host_cpu@<host>``
(:func:`on_worker_host`), so that the store keeps every host's CPU beside the
coordinator's ``host_cpu`` with no table of its own. Each reading names the driver's
share by the process tree it counted (``driver.<pid>``): workers sharing a host, or a
process, then add up to the host's driver share once each (:func:`worker_hosts`).
"""

from __future__ import annotations

import os
from typing import Any

from tpsbench.measure.observers import StepObserver
from tpsbench.measure.procfs import cpu_times, tree_cpu

#: the figures of a reading, in report order (percent of all cores' time)
FIGURES = ("user", "system", "iowait", "idle", "steal", "driver")
#: the results store's longest observer name
NAME_MOST = 64


class HostCpu(StepObserver):
    """CPU of the host, and of the driver's processes apart (see the module docstring)."""

    name = "host_cpu"

    def __init__(self, root_pid: int | None = None) -> None:
        #: the driver's top process; its descendants are the driver's too
        self.root = root_pid or os.getpid()

    def sample(self) -> tuple[dict[str, int], int]:
        return cpu_times(), tree_cpu(self.root)

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        (host0, driver0), (host1, driver1) = before, after
        d = {kind: host1[kind] - host0[kind] for kind in host1}
        total = sum(d.values())
        if total <= 0:
            return {}

        def share(ticks: float) -> float:
            return round(100.0 * ticks / total, 2)

        return {"user": share(d["user"] + d["nice"]), "system": share(d["system"] + d["irq"] + d["softirq"]),
                "iowait": share(d["iowait"]), "idle": share(d["idle"]), "steal": share(d["steal"]),
                "driver": share(max(driver1 - driver0, 0))}


def on_worker_host(figures: dict[str, float], host: str, root_pid: int) -> dict[str, dict[str, float]]:
    """A worker host's reading as it travels: ``host_cpu@<host>``, the driver's share as
    ``driver.<root_pid>`` (the process tree it counted)."""
    tagged = {k: v for k, v in figures.items() if k != "driver"}
    if "driver" in figures:
        tagged[f"driver.{root_pid}"] = figures["driver"]
    return {f"{HostCpu.name}@{host}"[:NAME_MOST]: tagged} if figures else {}


def worker_hosts(readings: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The worker hosts' readings as they are stored: each host's driver share the sum of
    its process trees' (see :func:`on_worker_host`)."""
    out = {}
    for name, figures in readings.items():
        driver = [v for k, v in figures.items() if k.startswith("driver.")]
        out[name] = {k: v for k, v in figures.items() if not k.startswith("driver.")}
        if driver:
            out[name]["driver"] = round(sum(driver), 2)
    return out
