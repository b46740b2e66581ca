"""Device I/O per interval: iostat -x's figures from /proc/diskstats.

Exact arithmetic on the recorded trees (tests/fixtures/sysfs, see tests/test_devices.py)
with counter deltas chosen here; and a real loop device written and read with O_DIRECT,
measured over one window by the observer, by /proc/diskstats read apart, and by iostat.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from test_devices import LVM, RAID, Require, attached_loop

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.devices import block_device
from tpsbench.measure.disk_io import FIGURES, DiskIo
from tpsbench.measure.procfs import diskstats

#: counter deltas over 2 s in /proc/diskstats order (reads, merged, sectors, ms; writes ...;
#: in flight, busy ms, weighted ms): md0 and its four disks
RAID_DELTAS: dict[str, tuple[int, ...]] = {
    "md0": (1000, 0, 16000, 5000, 400, 0, 6400, 800, 0, 1500, 5800),
    **{disk: (250, 3, 2000, 2500, 200, 0, 3200, 1000, 0, busy, 3600)
       for disk, busy in (("sda", 1000), ("sdb", 1200), ("sdc", 1900), ("sdd", 1100))},
}


def write_stats(root: Path, stats: dict[str, tuple[int, ...]]) -> str:
    """A /proc/diskstats under ``root`` (major and minor are not read)."""
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "diskstats").write_text(
        "".join(f"   8       0 {name} {' '.join(map(str, values))}\n" for name, values in stats.items()))
    return str(root)


def shifted(tree: str, deltas: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """The tree's /proc/diskstats with ``deltas`` added (devices not in them unchanged)."""
    stats = diskstats(tree)
    return {name: tuple(v + d for v, d in zip(values, deltas.get(name, ()) + (0,) * len(values)))
            for name, values in stats.items()}


def reading(tmp_path: Path, tree: str, listed: list[str], total: str, after: dict[str, tuple[int, ...]],
            seconds: float = 2.0) -> dict[str, float]:
    """The observer's reading of ``listed`` in ``tree`` from its diskstats to ``after``."""
    observer = DiskIo([block_device(name, tree) for name in listed], total, root=tree)
    before = observer.sample()
    observer.root = write_stats(tmp_path, after)  # the recorded machine, ``seconds`` later
    return observer.reading(before, observer.sample(), seconds)


def raid(tmp_path: Path, total: str) -> dict[str, float]:
    return reading(tmp_path, RAID, ["md0"], total, shifted(RAID, RAID_DELTAS))


def test_figures_follow_iostat_definitions(tmp_path: Path) -> None:
    figures = raid(tmp_path, "top")
    md0 = {figure: figures[f"md0.{figure}"] for figure in FIGURES}
    assert md0 == {"r_s": 500.0, "w_s": 200.0, "r_kB_s": 4000.0, "w_kB_s": 1600.0, "r_await_ms": 5.0,
                   "w_await_ms": 2.0, "aqu_sz": 2.9, "util_pct": 75.0}
    assert {figure: figures[f"sdc.{figure}"] for figure in FIGURES} == {
        "r_s": 125.0, "w_s": 100.0, "r_kB_s": 500.0, "w_kB_s": 800.0, "r_await_ms": 10.0, "w_await_ms": 5.0,
        "aqu_sz": 1.8, "util_pct": 95.0}
    assert {figure: figures[f"total.{figure}"] for figure in FIGURES} == md0  # the array itself
    assert set(figures) == {f"{d}.{f}" for d in ("md0", "sda", "sdb", "sdc", "sdd", "total") for f in FIGURES}


def test_the_physical_total_sums_the_disks_and_takes_the_busiest(tmp_path: Path) -> None:
    figures = raid(tmp_path, "physical")
    assert {figure: figures[f"total.{figure}"] for figure in FIGURES} == {
        "r_s": 500.0, "w_s": 400.0, "r_kB_s": 2000.0, "w_kB_s": 3200.0, "r_await_ms": 10.0, "w_await_ms": 5.0,
        "aqu_sz": 7.2, "util_pct": 95.0}


def test_util_is_capped_at_100_when_the_busy_time_outruns_the_samples_clock(tmp_path: Path) -> None:
    figures = reading(tmp_path, RAID, ["md0"], "top", shifted(RAID, RAID_DELTAS), seconds=1.0)  # busy 1.5 s
    assert (figures["md0.util_pct"], figures["total.util_pct"], figures["md0.r_s"]) == (100.0, 100.0, 1000.0)


def test_fewer_ios_in_flight_is_no_reset(tmp_path: Path) -> None:
    """Field 9 is a gauge: lower at the end than at the start is not a re-created device."""
    after = shifted(RAID, RAID_DELTAS)
    after["md0"] = after["md0"][:8] + (-7,) + after["md0"][9:]  # 7 fewer in flight than in the recording
    assert reading(tmp_path, RAID, ["md0"], "top", after)["md0.r_s"] == 500.0


@pytest.mark.parametrize("listed, total, summed", [
    (["nvme0n1p2", "nvme0n1"], "top", ["nvme0n1"]),  # a partition and its disk: the disk holds both
    (["loop0", "dm-0"], "top", ["dm-0"]),  # a loop file on the volume: the volume holds what it wrote
    (["dm-0", "dm-0"], "top", ["dm-0"]),  # a data directory and a tablespace on one volume
    (["loop0", "dm-0"], "physical", ["sda", "sdb"]),  # the disks beneath both, once each
    (["sda2"], "physical", ["sda"]),
])
def test_the_total_counts_each_device_once(tmp_path: Path, listed: list[str], total: str,
                                           summed: list[str]) -> None:
    deltas = {name: (100 * 2 ** i,) for i, name in enumerate(diskstats(LVM))}  # reads: no two sums alike
    figures = reading(tmp_path, LVM, listed, total, shifted(LVM, deltas), seconds=1.0)
    assert figures["total.r_s"] == sum(figures[f"{name}.r_s"] for name in summed) == sum(
        deltas[name][0] for name in summed)


def test_a_window_where_nothing_happened_is_all_zeros(tmp_path: Path) -> None:
    figures = reading(tmp_path, LVM, ["dm-0"], "physical", diskstats(LVM), seconds=5.0)
    assert len(figures) == 6 * len(FIGURES) and set(figures.values()) == {0.0}  # dm-0, 2 partitions, 2 disks, total
    observer = DiskIo([block_device("dm-0", LVM)], root=LVM)
    assert observer.reading(observer.sample(), observer.sample(), 0.0) == {}


def test_a_vanished_or_recreated_device_is_left_out(tmp_path: Path) -> None:
    after = shifted(RAID, RAID_DELTAS)
    del after["sdd"]  # pulled
    after["sdc"] = (0,) * len(after["sdc"])  # re-created: counting from 0 again
    figures = reading(tmp_path, RAID, ["md0"], "physical", after)
    assert {name.split(".")[0] for name in figures} == {"md0", "sda", "sdb", "total"}
    assert figures["total.r_s"] == 250.0 and figures["total.util_pct"] == 60.0  # sda and sdb alone
    assert DiskIo([]).reading({}, {}, 1.0) == {}  # a database on tmpfs: nothing to say, not zeros


def test_an_unknown_total_level_is_refused() -> None:
    with pytest.raises(TpsbenchError, match="disk I/O total must be one of top, physical, not 'disks'"):
        DiskIo([], "disks")


WINDOW_S = 3
WRITES, READS = 2000, 500


def counts(name: str) -> tuple[int, int, int, int]:
    """(reads, sectors read, writes, sectors written) of ``name``, read from /proc/diskstats here."""
    for line in Path("/proc/diskstats").read_text().splitlines():
        fields = line.split()
        if fields[2] == name:
            return int(fields[3]), int(fields[5]), int(fields[7]), int(fields[9])
    raise AssertionError(f"{name} is not in /proc/diskstats")


def iostat_figures(output: str, name: str) -> dict[str, float]:
    lines = [line.split() for line in output.splitlines() if line.strip()]
    header = next(line for line in lines if line[0].startswith("Device"))
    row = next(line for line in lines if line[0] == name)
    return dict(zip(header[1:], map(float, row[1:])))


@pytest.mark.slow  # a loop device written for seconds
def test_a_loop_devices_iops_agree_with_diskstats_and_iostat(tmp_path: Path, require: Require) -> None:
    iostat = shutil.which("iostat")
    with attached_loop(tmp_path / "disk.img", require) as loop:
        name = os.path.basename(loop)
        device = block_device(name)
        observer = DiskIo([device])
        raw0, before, start = counts(name), observer.sample(), time.monotonic()
        watch = subprocess.Popen([iostat, "-x", "-d", "-y", name, str(WINDOW_S), "1"], stdout=subprocess.PIPE,
                                 text=True, env=dict(os.environ, LC_ALL="C")) if iostat else None
        time.sleep(0.5)  # well inside iostat's window, which opens once it has started
        dd = ["dd", "bs=4k", "status=none"]
        subprocess.run([*dd, "if=/dev/zero", f"of={loop}", f"count={WRITES}", "oflag=direct"], check=True)
        subprocess.run([*dd, f"if={loop}", "of=/dev/null", f"count={READS}", "iflag=direct"], check=True)
        if watch is None:
            output = None
            time.sleep(WINDOW_S - 0.5)
        else:
            output = watch.communicate(timeout=WINDOW_S + 30)[0]
        after, seconds, raw1 = observer.sample(), time.monotonic() - start, counts(name)
    figures = observer.reading(before, after, seconds)
    # all of dd's I/Os and little else (a probe reading the new device): rates are rounded to 0.01/s
    assert WRITES - 0.01 * seconds <= figures[f"{name}.w_s"] * seconds <= WRITES * 1.02
    assert READS - 0.01 * seconds <= figures[f"{name}.r_s"] * seconds <= READS * 1.02
    assert figures[f"{name}.w_kB_s"] * seconds == pytest.approx(WRITES * 4, rel=0.02)
    assert figures["total.w_s"] == figures[f"{name}.w_s"]  # the loop device, not the disk beneath too
    assert {key.split(".")[0] for key in figures} == {d.name for d in device.walk()} | {"total"}
    direct = [(b - a) / seconds * per for a, b, per in zip(raw0, raw1, (1, 0.5, 1, 0.5))]  # 2 sectors a kB
    for figure, value in zip(("r_s", "r_kB_s", "w_s", "w_kB_s"), direct):
        assert figures[f"{name}.{figure}"] == pytest.approx(value, rel=0.02), figure
    if output is None:
        require("iostat (sysstat)", "not on PATH")
    seen = iostat_figures(output, name)
    for figure, column in (("r_s", "r/s"), ("w_s", "w/s"), ("r_kB_s", "rkB/s"), ("w_kB_s", "wkB/s")):
        assert figures[f"{name}.{figure}"] == pytest.approx(seen[column], rel=0.05), (figure, seen)

