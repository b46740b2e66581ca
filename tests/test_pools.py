"""The emulated storage of bench/pools.py: a blkio throttle holds a cluster's loop device
to its IOPS, which the same run without it exceeds (so a storage-limited run can be made
on this machine, for the bottleneck verdict's tests and bench/storage_sensitivity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from throttled_pool import ThrottledPg, throttled_pg  # noqa: F401  (the fixture)

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
        throttled_pg: ThrottledPg, tmp_path: Path) -> None:  # noqa: F811
    reads, writes, tps = device_iops(throttled_pg.url, throttled_pg.device, tmp_path / "throttled")
    with throttled_pg.unthrottled():
        free_reads, free_writes, free_tps = device_iops(throttled_pg.url, throttled_pg.device, tmp_path / "free")
    limit = throttled_pg.iops * 1.1
    assert reads <= limit and writes <= limit, (reads, writes, throttled_pg.iops)
    assert writes > 0  # every commit's WAL still reached the device, just more slowly
    assert free_writes > limit, (free_writes, throttled_pg.iops)
    assert free_tps > tps
