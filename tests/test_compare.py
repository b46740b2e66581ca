"""Configurations against a baseline, and the warnings about figures that cannot carry a conclusion."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from test_export import record
from test_report import DRIVES, T0, run, summary

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.summary import LatencyStats
from tpsbench.report.compare import compare, summary_lines, to_text
from tpsbench.report.warnings import CV_MOST, warnings
from tpsbench.results.records import (
    Run,
    RunData,
    StoredInterval,
    StoredObservation,
    StoredStep,
)


def configuration(run_id: int, storage: str, points: dict[int, tuple[float, float | None, float]]) -> RunData:
    """A run from published figures: users -> (TPS, IOPS or None, average latency in s)."""
    data = run(run_id, storage, [summary(users, tps, latency) for users, (tps, _, latency) in points.items()])
    for step, (_, iops, _) in zip(data.steps, points.values()):
        step.summary.latency = LatencyStats(count=10_000, mean=points[step.users][2] * 1000)  # no p95 published
        if iops is not None:  # as the device I/O observer reads it: reads and writes per second
            data.observations += [StoredObservation(step.step, None, "disk_io", "total.r_s", iops * 0.75),
                                  StoredObservation(step.step, None, "disk_io", "total.w_s", iops * 0.25)]
    return data


#: a published review of RAID controller generations at 300 users (docs/examples/perc-h800-h810.toml)
H800 = configuration(1, "H800", {300: (73.8, 6_659, 0.63)})
H810 = configuration(2, "H810", {300: (119.9, 14_829, 0.41)})


def test_the_review_sentence_from_the_published_controller_figures() -> None:
    c = compare([H800, H810])
    (load,) = c.loads
    assert load.users == 300 and load.figures[1]["tps"] == 119.9 and load.figures[1]["iops"] == pytest.approx(14_829)
    assert load.ratios[1]["tps"] == pytest.approx(119.9 / 73.8)
    assert load.ratios[1]["iops"] == pytest.approx(14_829 / 6_659)
    assert load.ratios[1]["avg_ms"] == pytest.approx(0.41 / 0.63)
    assert load.ratios[1]["p95_ms"] is None and load.ratios[0]["tps"] == 1.0
    assert c.overall[1]["tps"] == pytest.approx(119.9 / 73.8)
    assert summary_lines(c) == ["H810 vs H800 at 300 users: +62% TPS, +123% IOPS, -35% avg latency"]
    assert summary_lines(compare([H800, H810], baseline=1)) == [
        "H800 vs H810 at 300 users: -38% TPS, -55% IOPS, +54% avg latency"]
    with pytest.raises(ValueError):
        compare([H800, H810], baseline=2)


def test_a_ratio_that_cannot_be_computed_is_said() -> None:
    stalled = configuration(1, "stalled", {20: (0.0, 500, 0.5)})
    working = configuration(2, "working", {20: (100.0, 1000, 0.25)})
    assert summary_lines(compare([stalled, working])) == [
        "working vs stalled at 20 users: TPS ratio not computable (the baseline's is 0), +100% IOPS, -50% avg latency"]


def test_runs_that_cannot_be_compared_are_refused_in_one_line() -> None:
    with pytest.raises(TpsbenchError, match=r"^compare needs two configurations or more, got one \(run 1\)"):
        compare([H800])
    other = replace(H810, run=replace(H810.run, workload="sysbench"))
    with pytest.raises(TpsbenchError, match=r"^runs 1 and 2 ran different workloads \(tpcc, sysbench\)"):
        compare([H800, other])
    scaled = [replace(d, run=replace(d.run, config={**d.run.config, "scale": n})) for d, n in ((H800, 1), (H810, 10))]
    with pytest.raises(TpsbenchError, match=r"^runs 1 and 2 ran tpcc at different scales \(1, 10\)"):
        compare(scaled)


def test_overall_is_the_geometric_mean_and_the_sentence_takes_the_largest_shared_load() -> None:
    base = configuration(1, "SAS", {1: (10.0, None, 0.1), 20: (100.0, None, 0.2), 50: (200.0, None, 0.4)})
    ssd = configuration(2, "SSD", {1: (20.0, None, 0.1), 20: (50.0, None, 0.1), 100: (900.0, None, 0.1)})
    c = compare([base, ssd])
    assert [load.users for load in c.loads] == [1, 20]  # 50: only the baseline; 100: only the SSD
    assert c.overall[1]["tps"] == pytest.approx(1.0)  # a doubling and a halving are even
    assert c.overall[1]["avg_ms"] == pytest.approx(math.sqrt(1.0 * 0.5))
    assert c.overall[1]["iops"] is None
    assert summary_lines(c) == ["SSD vs SAS at 20 users: -50% TPS, -50% avg latency"]  # no IOPS read: left out
    apart = configuration(3, "NVMe", {300: (1.0, None, 0.1)})
    assert summary_lines(compare([base, ssd, apart])) == ["SSD vs SAS at 20 users: -50% TPS, -50% avg latency",
                                                          "NVMe vs SAS: no user load in common"]


def test_ratio_table_reads_in_a_terminal_and_as_markdown() -> None:
    lines = to_text(compare([H800, H810, configuration(3, "H710", {300: (50.0, None, 0.9)})])).splitlines()
    assert lines[0].startswith("Ratios against H800")
    table = lines[2:]
    assert table[0].split("|")[1:-1] == [" Configuration ", " ratio       ", " 300 users ", " overall "]
    assert set(table[1]) == {"|", "-", ":"} and table[1] == "|---------------|-------------|----------:|--------:|"
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in table[2:]]
    assert rows == [["H810 vs H800", "TPS", "1.62x", "1.62x"], ["", "IOPS", "2.23x", "2.23x"],
                    ["", "avg latency", "0.65x", "0.65x"],
                    ["H710 vs H800", "TPS", "0.68x", "0.68x"], ["", "avg latency", "1.43x", "1.43x"]]
    assert len({len(line) for line in table}) == 1  # columns line up


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, built_tpcc_sqlite: Path) -> list[RunData]:
    return record(tmp_path_factory.mktemp("compare"), built_tpcc_sqlite, "A", "B")[1]


@pytest.mark.slow
def test_compare_recorded_runs_by_their_stored_figures(two_runs: list[RunData]) -> None:
    a, b = two_runs
    c = compare(two_runs)
    assert [load.users for load in c.loads] == [1, 2]
    for load, sa, sb in zip(c.loads, a.steps, b.steps):
        assert load.ratios[1]["tps"] == sb.summary.tps / sa.summary.tps
        assert load.ratios[1]["p95_ms"] == sb.summary.latency.p95 / sa.summary.latency.p95
        ra, rb = a.readings(sa.step).get("disk_io", {}), b.readings(sb.step).get("disk_io", {})
        if "total.w_s" in ra and ra["total.r_s"] + ra["total.w_s"]:  # where this host's devices could be read
            assert load.figures[0]["iops"] == ra["total.r_s"] + ra["total.w_s"]
            assert load.ratios[1]["iops"] == pytest.approx((rb["total.r_s"] + rb["total.w_s"])
                                                           / (ra["total.r_s"] + ra["total.w_s"]))
    (line,) = summary_lines(c)
    assert line.startswith("B vs A at 2 users: ") and "% TPS" in line and "% p95 latency" in line


@pytest.mark.slow
def test_warnings_of_recorded_short_runs(two_runs: list[RunData]) -> None:
    said = warnings(two_runs[:1])
    assert "A (run 1) at 1 user: only 4 steady intervals (fewer than 5)" in "\n".join(said)
    for step in two_runs[0].steps:  # 2 s of SQLite: some thousands of transactions, fewer than p99.9 needs
        at = f"A (run 1) at {step.users} user{'s' if step.users > 1 else ''}: too few transactions"
        assert any(w.startswith(at) and "p99.9 needs 10,000" in w for w in said) == (
            step.summary.latency.count < 10_000)
    assert not any("honesty" in w or "not completed" in w for w in said)


def steady_run(tps: list[list[float]], storage: str = "SSD", count: int = 20_000, errors: int = 0,
               status: str = "completed", honesty: dict | None = None) -> RunData:
    """A run whose step n (users 10 * n) had steady intervals of the TPS given, plus
    a ramp-up interval that is not counted."""
    steps, intervals = [], []
    for n, values in enumerate(tps, 1):
        intervals.append(StoredInterval(n, 0, 0.0, 10.0, False, 10 * n, 1.0, 0.1, 10, 0, 0, 0, 0))
        intervals += [StoredInterval(n, i, 10.0 * i, 10.0 * i + 10, True, 10 * n, v, 5.0, int(v * 10), 0, 0, 0, 0)
                      for i, v in enumerate(values, 1)]
        s = summary(10 * n, sum(values) / len(values), 0.01, new_orders=int(sum(values) * 10), errors=errors)
        steps.append(StoredStep(n, 10 * n, 5, 60, replace(s, intervals=len(values),
                                                              latency=replace(s.latency, count=count))))
    return RunData(run=Run(id=9, workload="tpcc", started_at=T0, ended_at=T0, status=status, storage=storage,
                           honesty={"match": True} if honesty is None else honesty), steps=steps, intervals=intervals)


CLEAN = [[100, 104, 97, 101, 99, 103], [200, 196, 205, 199, 201, 202], [300, 290, 310, 305, 295, 300]]


def test_a_clean_run_has_no_warning() -> None:
    assert warnings([steady_run(CLEAN)]) == []
    plateau = steady_run([CLEAN[0], [200.0] * 6, [196.0] * 6, [199.0] * 6])  # wiggles within 5%: saturated
    assert warnings([plateau]) == []


def test_a_step_that_was_not_steady_is_named_with_its_cv() -> None:
    wobbly = [100.0, 130.0, 70.0, 100.0, 110.0, 90.0]
    expected = statistics.stdev(wobbly) / statistics.fmean(wobbly)
    assert expected > CV_MOST
    (said,) = warnings([steady_run([CLEAN[0], wobbly, [200.0] * 6])])
    assert said.startswith("SSD (run 9) at 20 users: not steady: TPS varies by ") and f"{expected:.1%}" in said
    almost = [100.0, 109.0, 91.0, 100.0, 108.0, 92.0]
    assert statistics.stdev(almost) / statistics.fmean(almost) < CV_MOST
    assert warnings([steady_run([CLEAN[0], almost, [200.0] * 6])]) == []


def test_too_few_intervals_or_transactions_for_the_figures_shown() -> None:
    (said,) = warnings([steady_run([[100, 101, 99, 100]])])
    assert said == ("SSD (run 9) at 10 users: only 4 steady intervals (fewer than 5): too few to tell whether "
                    "the step was steady; run it longer")
    (said,) = warnings([steady_run([CLEAN[0]], count=500)])
    assert said.startswith("SSD (run 9) at 10 users: too few transactions (500) for its tail percentiles "
                           "(p99 needs 1,000, p99.9 needs 10,000")
    (said,) = warnings([steady_run([CLEAN[0]], count=9_999)])
    assert "(p99.9 needs 10,000," in said
    assert warnings([steady_run([CLEAN[0]], count=10_000)]) == []


def test_errors_beyond_one_percent_of_a_steps_transactions() -> None:
    (said,) = warnings([steady_run([CLEAN[0]], errors=200)])  # 6,040 commits + 200 errors
    assert said.startswith("SSD (run 9) at 10 users: 200 errors are 3.2% of its 6,240 transactions")
    assert warnings([steady_run([CLEAN[0]], errors=60)]) == []  # just under 1%


def test_runs_not_completed_or_not_honest() -> None:
    said = warnings([steady_run(CLEAN, status="interrupted", honesty={"match": None, "skipped": "interrupted"})])
    assert said == ["SSD (run 9): the run is interrupted, not completed: its last steps may be missing or cut short",
                    ("SSD (run 9): honesty check skipped (interrupted): the driver's counts are not confirmed by "
                     "the database's")]
    failed = {"match": False, "expected": {"count_history": 10}, "actual": {"count_history": 9}}
    (said,) = warnings([steady_run(CLEAN, honesty=failed)])
    assert said.startswith("SSD (run 9): honesty check FAILED: the database changed by")
    none = steady_run(CLEAN)
    none.run.honesty = None
    assert warnings([none]) == [("SSD (run 9): honesty check skipped (no step finished): the driver's counts are "
                                 "not confirmed by the database's")]


def test_the_published_drive_table_is_flagged_non_monotonic() -> None:
    said = warnings(DRIVES)
    assert 'ENT 10K V3 2.5" (run 1): TPS falls then rises again with users (50.9 at 20 -> 30.3 at 50 -> 39.9 at ' \
           '100 users)' in "\n".join(said)
    dips = [w for w in said if "falls then rises" in w]
    assert len(dips) == 1  # ENT 15K V4's 19.7, 119.8, 75.3, 69.2 peaks, then only falls
    assert all(w.startswith(('ENT 10K V3 2.5" (run 1)', 'ENT 15K V4 2.5" (run 2)')) for w in said)
