"""Whether the whole database fits in memory: said before a run, stored with it.

Why: a database that fits in the server's buffer pool, or in the page cache of the host
it runs on, is read from memory once warm, so its TPS says nothing of the storage it
sits on. A storage review that does not notice publishes CPU as a storage result. The
estimate compares the database's size with the server's buffer pool and, for a server
on this host, with the memory its page cache can use: the host's available memory, or
the memory cgroup limit of the server's processes where one is lower.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target

MEMINFO = "/proc/meminfo"
CGROUP_ROOT = "/sys/fs/cgroup"
#: a cgroup v1 memory limit at or above this is "no limit" (the kernel's PAGE_COUNTER_MAX)
NO_LIMIT = 1 << 62
#: the places the whole database can fit in, and how the line names them
PLACES = {"buffer_pool": "the server's {size} buffer pool",
          "cgroup": "the {size} memory limit (cgroup) of the server's processes",
          "page_cache": "the {size} of this host's page cache"}


@dataclass(frozen=True)
class MemoryFit:
    """The sizes compared (bytes, None where unknown) and where the whole database fits
    ("buffer_pool", "cgroup", "page_cache"; "" where it does not, or cannot be told)."""

    database_bytes: int | None = None
    buffer_pool_bytes: int | None = None
    mem_total_bytes: int | None = None
    mem_available_bytes: int | None = None
    cgroup_limit_bytes: int | None = None
    fits: str = ""

    def stored(self) -> dict[str, object]:
        """For the run's stored configuration."""
        return asdict(self)

    def line(self) -> str:
        """The warning before a run ("" where the database does not fit)."""
        if not self.fits or self.database_bytes is None:
            return ""
        room = {"buffer_pool": self.buffer_pool_bytes, "cgroup": self.cgroup_limit_bytes,
                "page_cache": self.mem_available_bytes}[self.fits] or 0
        return (f"the whole database, {human_size(self.database_bytes)}, fits in "
                f"{PLACES[self.fits].format(size=human_size(room))}: reads will not reach the storage")


def memory_fit(target: Target) -> MemoryFit:
    """The database's size against the buffer pool and, on this host, the page cache."""
    try:
        sizes = target.cache_sizes()
    except TpsbenchError:  # a server that will not say: nothing is claimed
        sizes = {}
    size, pool = sizes.get("database_bytes"), sizes.get("buffer_pool_bytes")
    total = available = limit = None
    if target.is_local:
        total, available = meminfo("MemTotal"), meminfo("MemAvailable")
        pid = os.getpid() if target.embedded else target.server_pid()  # None where it is not found
        limit = None if pid is None else cgroup_memory_limit(pid)
    fits = ""
    if size is not None:
        if pool is not None and size <= pool:
            fits = "buffer_pool"
        elif limit is not None and (available is None or limit < available):
            fits = "cgroup" if size <= limit else ""
        elif available is not None and size <= available:
            fits = "page_cache"
    return MemoryFit(size, pool, total, available, limit, fits)


def meminfo(name: str, path: str = MEMINFO) -> int | None:
    """One line of /proc/meminfo in bytes; None where there is none."""
    try:
        with open(path) as file:
            for line in file:
                key, _, value = line.partition(":")
                if key == name:
                    return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cgroup_memory_limit(pid: int, root: str = CGROUP_ROOT) -> int | None:
    """The lowest memory limit on process ``pid``'s memory cgroup and its ancestors:
    cgroup v1 ``memory.limit_in_bytes``, v2 ``memory.max``; None where there is none."""
    try:
        with open(f"/proc/{pid}/cgroup") as file:
            lines = [line.rstrip("\n").split(":", 2) for line in file]
    except OSError:
        return None
    limits = []
    for _, controllers, path in (parts for parts in lines if len(parts) == 3):
        v1 = "memory" in controllers.split(",")
        if not v1 and controllers:
            continue
        base, name = (f"{root}/memory", "memory.limit_in_bytes") if v1 else (root, "memory.max")
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            try:
                with open(os.path.join(base, *parts[:depth], name)) as file:
                    text = file.read().strip()
            except OSError:
                continue
            if text.isdigit() and int(text) < NO_LIMIT:
                limits.append(int(text))
    return min(limits) if limits else None


def human_size(count: int) -> str:
    """Bytes as people read them: 950 MiB, 1.1 GiB, 24 GiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            value = count / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{count} bytes"
