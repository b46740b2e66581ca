"""The database's devices' I/O beside every step: what iostat -x shows, per interval.

Why: the storage reviews put the storage's IOPS beside the TPS of the same run, so that
a gain can be laid at the storage's door (TPS 119.9 at 14,829 IOPS against 73.8 at
6,659). This observer reads the devices that tpsbench.measure.devices found under the
database's data directory and tablespaces (the database's own device(s), and every
device beneath each: partitions' disks, LVM's and md's members, a loop file's disk),
and gives, per device and with iostat -x's definitions:

==============  ======================================================================
``r_s, w_s``    reads, writes completed per second (iostat r/s, w/s)
``r_kB_s``      kilobytes read per second (rkB/s; sectors are 512 bytes on every device)
``w_kB_s``      kilobytes written per second (wkB/s)
``r_await_ms``  mean ms a completed read took, queue included (r_await; 0 without reads)
``w_await_ms``  the same for writes (w_await)
``aqu_sz``      mean requests queued or in service (aqu-sz: weighted ms / 1000 / seconds)
``util_pct``    percent of the time the device had I/O in flight (%util, capped at 100)
==============  ======================================================================

as figures named ``<kernel name>.<figure>`` ("dm-0.w_s", "nvme0n1.util_pct"), and the
database's storage as a whole as ``total.<figure>``, summed over the devices of one level,
each counted once: "top", the database's own devices (a listed device that lives on another
listed one stands aside for it: sda's counters already hold sda1's, and the disk under a
loop file holds what the loop device wrote), or "physical", the distinct disks beneath.
Counts add up; awaits are those of all the I/Os together; util_pct is the busiest
device's, as a configuration is saturated when one of its devices is.

Why /proc/diskstats and not psutil: psutil.disk_io_counters drops the in-flight field and
the weighted time (field 11), without which there is no aqu-sz, and it is not a
dependency. A device that is gone at either sample (or whose counters went backwards:
it was re-created) is left out of the reading, and out of the total.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.devices import Device
from tpsbench.measure.observers import StepObserver
from tpsbench.measure.procfs import diskstats

#: the figures of each device, in report order (see the module docstring)
FIGURES = ("r_s", "w_s", "r_kB_s", "w_kB_s", "r_await_ms", "w_await_ms", "aqu_sz", "util_pct")
#: the levels the total can be summed at
LEVELS = ("top", "physical")
SECTOR = 512


class Counts(NamedTuple):
    """The cumulative counters of one device that the figures are made of (ms, sectors)."""

    reads: int
    read_sectors: int
    read_ms: int
    writes: int
    write_sectors: int
    write_ms: int
    busy_ms: int
    weighted_ms: int

    @classmethod
    def of(cls, stats: tuple[int, ...]) -> Counts:
        """From a /proc/diskstats row: fields 1, 3, 4, 5, 7, 8, 10 and 11 (9 is in flight now)."""
        return cls(*(stats[i] for i in (0, 2, 3, 4, 6, 7, 9, 10)))

    def __sub__(self, other: Counts) -> Counts:
        return Counts(*(a - b for a, b in zip(self, other)))


class DiskIo(StepObserver):
    """Reads /proc/diskstats for ``devices`` and all beneath them (see the module docstring)."""

    name = "disk_io"

    def __init__(self, devices: Sequence[Device], total: str = "top", root: str = "/") -> None:
        if total not in LEVELS:
            raise TpsbenchError(f"disk I/O total must be one of {', '.join(LEVELS)}, not {total!r}")
        self.root = root
        #: every device read, each once, the database's own first
        self.names = list(dict.fromkeys(d.name for top in devices for d in top.walk()))
        #: the devices the total sums
        self.summed = _physical(devices) if total == "physical" else _top(devices)

    def sample(self) -> dict[str, Counts]:
        stats = diskstats(self.root)
        return {name: Counts.of(stats[name]) for name in self.names if name in stats}

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        if seconds <= 0:
            return {}
        deltas = {name: after[name] - before[name] for name in self.names if name in before and name in after}
        deltas = {name: d for name, d in deltas.items() if min(d) >= 0}
        figures = {f"{name}.{figure}": value for name, d in deltas.items()
                   for figure, value in _figures(d, seconds).items()}
        summed = [name for name in self.summed if name in deltas]
        if summed:
            total = _figures(Counts(*map(sum, zip(*(deltas[name] for name in summed)))), seconds)
            total["util_pct"] = max(figures[f"{name}.util_pct"] for name in summed)
            figures.update({f"total.{figure}": value for figure, value in total.items()})
        return figures


def _figures(d: Counts, seconds: float) -> dict[str, float]:
    """iostat -x's figures of one device's counter deltas over ``seconds``."""
    def per_s(value: float) -> float:
        return round(value / seconds, 2)

    return {"r_s": per_s(d.reads), "w_s": per_s(d.writes),
            "r_kB_s": per_s(d.read_sectors * SECTOR / 1024), "w_kB_s": per_s(d.write_sectors * SECTOR / 1024),
            "r_await_ms": round(d.read_ms / d.reads, 2) if d.reads else 0.0,
            "w_await_ms": round(d.write_ms / d.writes, 2) if d.writes else 0.0,
            "aqu_sz": per_s(d.weighted_ms / 1000), "util_pct": min(100.0, per_s(d.busy_ms / 10))}


def _top(devices: Sequence[Device]) -> list[str]:
    """The listed devices, each once, but for those another listed one lives on."""
    names = list(dict.fromkeys(d.name for d in devices))
    beneath = {d.name: {lower.name for lower in d.walk()} - {d.name} for d in devices}
    return [name for name in names if not any(other in beneath[name] for other in names)]


def _physical(devices: Sequence[Device]) -> list[str]:
    return list(dict.fromkeys(d.name for top in devices for d in top.walk() if d.physical))
