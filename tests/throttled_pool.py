"""A PostgreSQL cluster of its own on a throttled loop device, for tests that need the
storage to be the limit: ``from throttled_pool import throttled_pg`` in a test module.

The pool code is bench/pools.py's (the demonstration, bench/storage_sensitivity.py, uses
the same), put on the path here. The fixture skips, through conftest's unavailable(),
where this host cannot have the pools (not root, no cgroup v1 blkio/memory, no
postgresql-common, no free loop device), and fails instead under CI=true.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import unavailable

BENCH = str(Path(__file__).resolve().parent.parent / "bench")
if BENCH not in sys.path:
    sys.path.append(BENCH)
import pools  # noqa: E402 - from bench/, put on the path just above

#: the fixture's cluster's port (bench/storage_sensitivity.py takes 5451-5453)
PORT = 5481
#: read and write IOPS of the throttle: well below what the loop device does unthrottled
IOPS = 50
#: the sysbench database built before the throttle: small, built in a few seconds
TABLES, TABLE_SIZE = 2, 10_000


#: ``url`` (a database ``sbtest`` with sysbench's tables) on loop device ``device``, throttled
ThrottledPg = pools.Throttled


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
    with pools.throttled_sysbench("test_throttled", PORT, IOPS, TABLES, TABLE_SIZE) as made:
        yield made
