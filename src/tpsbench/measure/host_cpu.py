"""The host's CPU beside every step: the first step observer.

Per interval and per steady window: the share of all cores' time spent in user code,
in the kernel, waiting for I/O and idle (/proc/stat), and the share the driver itself
took (this process and every process under it: the workers). Storage reviews put CPU
beside TPS because a configuration that is fast only because the host had cores to
spare is not the one they meant to measure, and a driver that takes the database's
cores is measuring itself.
"""

from __future__ import annotations

import os
from typing import Any

from tpsbench.measure.observers import StepObserver
from tpsbench.measure.procfs import cpu_times, tree_cpu

#: the figures of a reading, in report order (percent of all cores' time)
FIGURES = ("user", "system", "iowait", "idle", "steal", "driver")


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
