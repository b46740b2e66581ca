"""The emulated storage of bench/pools.py: a blkio throttle holds a cluster's loop device
to its IOPS, which the same run without it exceeds (so a storage-limited run can be made
on this machine, for the bottleneck verdict's tests and bench/storage_sensitivity.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from throttled_pool import BENCH, ThrottledPg, require_pools, throttled_pg  # noqa: F401  (the fixture)

from tpsbench.commands.run import RunConfig, run

pytestmark = pytest.mark.slow  # a cluster of its own, built, and two runs: some 30 s


def device_iops(url: str, device: str, folder: Path) -> tuple[float, float, float]:
    """A short sysbench update run: the loop device's reads and writes per second over its
    steady window, and its TPS."""
    folder.mkdir()
    config = RunConfig("sysbench", url, users=[4], rampup_s=0.5, duration_s=3.0, interval_s=1.0, seed=1,
                       results_url=f"sqlite:///{folder / 'results.db'}",
                       options={"mode": "oltp_update_non_index"})
    record = run(config, live=None)
    data = record.store.load_run(record.run_id)
    io = data.readings(1)["disk_io"]
    (step,) = data.steps
    assert step.summary is not None
    return io[f"{device}.r_s"], io[f"{device}.w_s"], step.summary.tps


def test_the_throttle_holds_the_loop_device_to_its_iops_which_the_run_exceeds_without_it(
        throttled_pg: ThrottledPg, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    reads, writes, tps = device_iops(throttled_pg.url, throttled_pg.device, tmp_path / "throttled")
    with throttled_pg.unthrottled():
        free_reads, free_writes, free_tps = device_iops(throttled_pg.url, throttled_pg.device, tmp_path / "free")
    limit = throttled_pg.iops * 1.1
    # reads and the WAL's flushes are the cluster's own I/O, throttled; the kernel's
    # background writeback and ext4's journal run outside its cgroup, so writes may pass the
    # throttle a little, but stay far below what the same run writes unthrottled
    assert reads <= limit, (reads, throttled_pg.iops)
    assert 0 < writes < free_writes / 2, (writes, free_writes, throttled_pg.iops)
    assert free_writes > limit, (free_writes, throttled_pg.iops)
    assert free_tps > tps


SET_UP_AND_WAIT = """
import sys, time
sys.path[:0] = [{bench!r}]
import pools
with pools.signals_raise(), pools.workspace() as base, pools.loop_pool(base, "a", 64) as loop, \\
        pools.tmpfs_pool(base, "b", 64), pools.cgroups("test_term", 128) as groups, \\
        pools.cluster(loop, "test_term", 5458) as cluster:
    cluster.start(groups)
    groups.throttle(loop.majmin, 100)
    print(base, loop.device, flush=True)
    time.sleep(60)
"""


def test_sigterm_takes_down_every_pool_cgroup_and_cluster() -> None:
    require_pools()
    proc = subprocess.Popen([sys.executable, "-c", SET_UP_AND_WAIT.format(bench=BENCH)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    base, device = proc.stdout.readline().split()
    assert Path("/etc/postgresql/15/tpsb_test_term").exists() and Path("/sys/fs/cgroup/blkio/tpsb_test_term").exists()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    assert not Path(base).exists()
    assert not Path("/etc/postgresql/15/tpsb_test_term").exists()
    assert not any(Path(f"/sys/fs/cgroup/{c}/tpsb_test_term").exists() for c in ("blkio", "memory"))
    assert base not in Path("/proc/mounts").read_text()
    assert not Path(f"/sys/class/block/{device}/loop/backing_file").exists()
