"""Reading Linux's /proc: CPU time of the whole host and of processes.

Shared by the host CPU observer (tpsbench.measure.host_cpu) and the benchmarks under
bench/ that split CPU between the driver and the database's processes. Every reader
returns None (or nothing) for a process that is gone: processes come and go while a
run is watched.

Also the mount table and the block devices' I/O counters (tpsbench.measure.devices and
tpsbench.measure.disk_io), read under a root prefix so that tests can point them at
recorded trees (tests/fixtures/sysfs) instead of this machine's /proc.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

#: clock ticks per second of /proc's CPU times (USER_HZ)
TICK = os.sysconf("SC_CLK_TCK")
#: the fields of /proc/stat's "cpu" line, in order
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


class ProcStat(NamedTuple):
    """What /proc/<pid>/stat says of one process (or thread), CPU in ticks."""

    ppid: int
    #: utime + stime
    cpu: int
    #: start time, ticks after boot
    start: int
    comm: str
    #: cutime + cstime: CPU of its children that it has waited for
    children_cpu: int


def read_stat(path: str) -> ProcStat | None:
    """/proc/<pid>/stat (or .../task/<tid>/stat) parsed; None if the process is gone."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    rest = text[text.rindex(")") + 2:].split()
    return ProcStat(int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19]), comm, int(rest[13]) + int(rest[14]))


def cmdline(pid: int) -> str:
    """A process's command line, arguments separated by spaces ("" if gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def boot_time() -> float:
    """When the host booted (wall clock), to turn a process's start ticks into a time."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise RuntimeError("no btime in /proc/stat")


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def cpu_times() -> dict[str, int]:
    """The host's CPU time by kind (CPU_FIELDS), in ticks summed over all cores."""
    with open("/proc/stat") as f:
        values = f.readline().split()[1:1 + len(CPU_FIELDS)]
    return dict(zip(CPU_FIELDS, (int(v) for v in values)))


def tree_cpu(root: int) -> int:
    """CPU ticks of ``root`` and all its descendants alive now, each with the children it
    has waited for: a process that ended counts in its parent's children_cpu once reaped."""
    stats = {pid: st for pid in all_pids() if (st := read_stat(f"/proc/{pid}/stat")) is not None}
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(st.ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        st = stats.get(pid)
        if st is not None:
            total += st.cpu + st.children_cpu
        todo.extend(children.get(pid, ()))
    return total


def memory(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) in bytes summed over ``pids`` from /proc/<pid>/smaps_rollup."""
    rss = pss = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1]) * 1024
            elif line.startswith("Pss:"):
                pss += int(line.split()[1]) * 1024
    return rss, pss


def under(root: str, path: str) -> str:
    """``path`` (absolute, as the kernel names it) inside the tree at ``root``."""
    return os.path.join(root, path.lstrip("/"))


class Mount(NamedTuple):
    """One line of /proc/self/mountinfo."""

    #: (major, minor) of the file system's st_dev; major 0 is an anonymous (non-block) device
    device: tuple[int, int]
    #: the folder it is mounted on, and the folder of the file system shown there (a bind mount's)
    point: str
    fs_root: str
    fs_type: str
    #: what was mounted: /dev/nvme0n1p2, tmpfs, host:/export ...
    source: str
    #: the mount's options, then the file system's own (superblock) options
    options: str
    fs_options: str


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mountinfo(root: str = "/") -> list[Mount]:
    """This process's mounts in mount order (a later one over the same folder hides the
    earlier); empty if there is no /proc to read."""
    try:
        with open(under(root, "proc/self/mountinfo")) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    mounts = []
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, (fs_type, source, fs_options) = before.split(), after.split(" ", 2)
        major, minor = fields[2].split(":")
        mounts.append(Mount((int(major), int(minor)), _unescape(fields[4]), _unescape(fields[3]), fs_type,
                            _unescape(source), fields[5], fs_options))
    return mounts


def diskstats(root: str = "/") -> dict[str, tuple[int, ...]]:
    """/proc/diskstats: every block device's kernel name -> its counters in the kernel's
    order (reads completed, merged, sectors, ms; the same for writes; I/Os in flight, ms
    busy, weighted ms; then discards and flushes on newer kernels)."""
    with open(under(root, "proc/diskstats")) as f:
        rows = [line.split() for line in f]
    return {row[2]: tuple(int(v) for v in row[3:]) for row in rows if len(row) > 3}
