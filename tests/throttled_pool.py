"""A PostgreSQL cluster of its own on a throttled loop device, for tests that need the
storage to be the limit: ``from throttled_pool import throttled_pg`` in a test module.

The pool code is bench/pools.py's (the demonstration, bench/storage_sensitivity.py, uses
the same), put on the path here. The fixture skips, through conftest's unavailable(),
where this host cannot have the pools (not root, no cgroup v1 blkio/memory, no
postgresql-common, no free loop device), and fails instead under CI=true.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import unavailable

BENCH = str(Path(__file__).resolve().parent.parent / "bench")
if BENCH not in sys.path:
    sys.path.append(BENCH)
import pools  # noqa: E402

#: the fixture's cluster's port (bench/storage_sensitivity.py takes 5451-5453)
PORT = 5459
#: read and write IOPS of the throttle: well below what the loop device does unthrottled
IOPS = 50
#: the sysbench database built before the throttle: small, built in a few seconds
TABLES, TABLE_SIZE = 2, 10_000


@dataclass(frozen=True)
class ThrottledPg:
    """``url`` (a database ``sbtest`` with sysbench's tables) on loop device ``device``,
    its cluster's processes throttled to ``iops`` read and ``iops`` write IOPS."""

    url: str
    device: str
    iops: int
    groups: pools.Cgroups
    majmin: str

    @contextlib.contextmanager
    def unthrottled(self) -> Iterator[None]:
        """The same cluster with the throttle lifted for a while, put back after."""
        self.groups.throttle(self.majmin, None)
        try:
            yield
        finally:
            self.groups.throttle(self.majmin, self.iops)


def require_pools() -> None:
    """Skip (fail under CI=true) where this host cannot have bench/pools.py's pools."""
    try:
        pools.check_host()
    except pools.PoolsUnavailable as exc:
        unavailable("emulated storage pools (bench/pools.py)", exc)


@pytest.fixture(scope="module")
def throttled_pg() -> Iterator[ThrottledPg]:
    """A cluster on ext4 over a loop device, sysbench built unthrottled, then throttled to
    :data:`IOPS`; cluster, cgroups, mount and loop device removed after the module."""
    require_pools()
    from tpsbench.commands.build import build

    with contextlib.ExitStack() as stack:
        base = stack.enter_context(pools.workspace())
        pool = stack.enter_context(pools.loop_pool(base, "throttled", 1024))
        cluster = stack.enter_context(pools.cluster(pool, "test_throttled", PORT))
        groups = stack.enter_context(pools.cgroups("test_throttled", None))
        cluster.start(groups)
        cluster.psql("CREATE DATABASE sbtest")
        url = cluster.url("sbtest").replace("postgresql://", "postgresql+psycopg://")
        build("sysbench", TABLES, url, show_progress=False, options={"table_size": str(TABLE_SIZE)})
        groups.throttle(pool.majmin, IOPS)
        assert pool.device is not None
        yield ThrottledPg(url, pool.device, IOPS, groups, pool.majmin)
