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

# a target finds its server's process with these (tpsbench.core.processes); the observers read them here
from tpsbench.core.processes import ProcStat, all_pids, listening_pid, read_stat, top_process  # noqa: F401 - re-exported

#: clock ticks per second of /proc's CPU times (USER_HZ)
TICK = os.sysconf("SC_CLK_TCK")
#: the fields of /proc/stat's "cpu" line, in order
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


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


def cpu_times() -> dict[str, int]:
    """The host's CPU time by kind (CPU_FIELDS), in ticks summed over all cores."""
    with open("/proc/stat") as f:
        values = f.readline().split()[1:1 + len(CPU_FIELDS)]
    return dict(zip(CPU_FIELDS, (int(v) for v in values)))


def cpu_lines() -> tuple[dict[str, int], dict[int, tuple[int, int]]]:
    """/proc/stat read once: the host's CPU time by kind (as :func:`cpu_times`), and each
    CPU's (busy, total) ticks, busy being all but idle, iowait and steal."""
    with open("/proc/stat") as f:
        lines = [line.split() for line in f if line.startswith("cpu")]
    host = dict(zip(CPU_FIELDS, (int(v) for v in lines[0][1:1 + len(CPU_FIELDS)])))
    per_cpu = {}
    for fields in lines[1:]:
        ticks = [int(v) for v in fields[1:1 + len(CPU_FIELDS)]]
        total = sum(ticks)
        per_cpu[int(fields[0][3:])] = (total - ticks[3] - ticks[4] - ticks[7], total)
    return host, per_cpu


def processes() -> dict[int, ProcStat]:
    """Every process alive now, by id (one read of each /proc/<pid>/stat)."""
    return {pid: st for pid in all_pids() if (st := read_stat(f"/proc/{pid}/stat")) is not None}


def descendants(stats: dict[int, ProcStat], root: int) -> list[int]:
    """``root`` and every process under it among ``stats`` (those alive)."""
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(st.ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def tree_cpu(root: int, stats: dict[int, ProcStat] | None = None) -> int:
    """CPU ticks of ``root`` and all its descendants alive now, each with the children it
    has waited for: a process that ended counts in its parent's children_cpu once reaped."""
    stats = processes() if stats is None else stats
    return sum(stats[pid].cpu + stats[pid].children_cpu for pid in descendants(stats, root))


def allowed_cpus(pids: list[int]) -> set[int]:
    """The CPUs any of ``pids`` may run on (their affinity masks' union; gone ones skipped)."""
    cpus: set[int] = set()
    for pid in pids:
        try:
            cpus |= os.sched_getaffinity(pid)
        except OSError:
            continue
    return cpus


def io_stall_us(root: str = "/") -> int | None:
    """Microseconds so far in which at least one task was stalled on I/O (PSI's "some"
    total in /proc/pressure/io); None where the kernel has no PSI."""
    try:
        with open(under(root, "proc/pressure/io")) as f:
            first = f.readline().split()
    except OSError:
        return None
    totals = [field for field in first if field.startswith("total=")]
    return int(totals[0][len("total="):]) if first[:1] == ["some"] and totals else None


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
