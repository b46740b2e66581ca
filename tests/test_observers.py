"""Step observers: registered once, sampled at every interval boundary, stored with the run.

A test observer counts its own samples, so that what the store keeps can be checked
against the run's plan exactly; the host CPU observer, on by default, must reach the
report that `tpsbench report` prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_of

import tpsbench
from tpsbench.measure.host_cpu import FIGURES, SPLIT, HostCpu
from tpsbench.measure.observers import Observers, StepObserver
from tpsbench.measure.procfs import cpu_times, io_stall_us, tree_cpu

#: what HostCpu without a local server reads: all but ``server`` (``io_pressure`` where the kernel has PSI)
NO_SERVER = set(FIGURES) | set(SPLIT) - {"server"} - (set() if io_stall_us() is not None else {"io_pressure"})


class Clock(StepObserver):
    """Samples the wall clock: a reading is the seconds between two samples and how many
    samples this observer took before the second one."""

    name = "clock"

    def __init__(self) -> None:
        self.samples = 0
        self.steps: list[tuple[str, int]] = []

    def step_started(self, step: int, users: int) -> None:
        self.steps.append(("start", step))

    def step_ended(self, step: int) -> None:
        self.steps.append(("end", step))

    def sample(self) -> tuple[float, int]:
        self.samples += 1
        return time.time(), self.samples

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        return {"seconds": seconds, "apart": after[0] - before[0], "sample": after[1]}


@pytest.mark.slow  # a run of two steps: the quick lane runs observers in test_storage_run's
def test_a_registered_observer_has_one_reading_per_interval_in_the_store(built_tpcc_sqlite: Path,
                                                                         tmp_path: Path) -> None:
    url, results = copy_of(built_tpcc_sqlite, tmp_path), f"sqlite:///{tmp_path / 'results.db'}"
    clock = Clock()
    config = tpsbench.RunConfig("tpcc", url, users=[1, 2], rampup_s=0.5, duration_s=1.5, interval_s=0.5,
                                results_url=results, seed=3)
    record = tpsbench.run(config, live=None, observers=[clock, HostCpu()])
    assert record.status == "completed"
    data = tpsbench.ResultsStore(results).load_run(record.run_id)
    assert clock.steps == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]
    assert clock.samples == 2 * 5  # per step: its start and the ends of its 4 intervals (1 ramp-up, 3 steady)
    for step in (1, 2):
        planned = [i.interval for i in data.intervals if i.step == step and i.interval < 4]
        assert planned == [0, 1, 2, 3]
        readings = [data.readings(step, interval) for interval in planned]
        assert all(set(r) == {"clock", "host_cpu"} for r in readings)
        # consecutive samples, each interval 0.5 s long as sampled
        first = 5 * (step - 1) + 2
        assert [r["clock"]["sample"] for r in readings] == [first, first + 1, first + 2, first + 3]
        assert all(abs(r["clock"]["seconds"] - 0.5) < 0.1 for r in readings)
        assert all(set(r["host_cpu"]) == NO_SERVER for r in readings)
        steady = data.readings(step)
        assert abs(steady["clock"]["seconds"] - 1.5) < 0.1  # the steady window: intervals 1-3
        tail = [i.interval for i in data.intervals if i.step == step and i.interval >= 4]
        assert all(data.readings(step, interval) == {} for interval in tail)  # the in-flight tail: none


def test_host_cpu_shares_add_up_and_the_driver_is_counted(tmp_path: Path) -> None:
    observer = HostCpu()
    own, began, before = time.process_time(), time.monotonic(), observer.sample()
    while time.monotonic() - began < 0.5:  # this process burns CPU: the driver's share must show it
        sum(range(1000))
    after = observer.sample()
    own, took = time.process_time() - own, time.monotonic() - began
    reading = observer.reading(before, after, took)
    assert set(reading) == NO_SERVER
    assert abs(reading["user"] + reading["system"] + reading["iowait"] + reading["idle"] + reading["steal"]
               - 100.0) < 0.5
    # the CPU this process had (as much of one core as a busy host left it), in shares of all cores
    assert reading["driver"] == pytest.approx(100.0 * own / took / (os.cpu_count() or 1), abs=4.0)
    assert 0 < reading["driver"] <= 100.0 - reading["idle"] + 1.0
    assert cpu_times()["user"] > 0 and tree_cpu(os.getpid()) > 0


def test_without_observers_nothing_is_sampled() -> None:
    observers = Observers()
    observers.start_step(1, 1, time.time(), [(0.0, 0.5, True)])
    assert observers.interval(0) == {} and observers.steady() == {}
    observers.end_step(1)


@pytest.mark.slow
def test_tpsbench_report_shows_host_cpu_per_step(tmp_path: Path) -> None:
    env = dict(os.environ, TPSBENCH_DB=f"sqlite:///{tmp_path / 'tpcc.db'}",
               TPSBENCH_RESULTS=f"sqlite:///{tmp_path / 'results.db'}")
    run = [sys.executable, "-m", "tpsbench", "run", "tpcc", "--build-if-missing", "--scale", "1", "--users", "1,2",
           "--rampup", "0.5s", "--duration", "1s", "--interval", "0.5s"]
    assert subprocess.run(run, env=env, capture_output=True, text=True, timeout=300, check=False).returncode == 0
    report = subprocess.run([sys.executable, "-m", "tpsbench", "report", "--format", "markdown"], env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert report.returncode == 0, report.stderr
    rows = {line.split("|")[2].strip(): line for line in report.stdout.splitlines() if line.count("|") > 3}
    for figure in FIGURES:
        cells = [c.strip() for c in rows[f"Host CPU {figure} (%)"].split("|")[3:-1]]
        assert len(cells) == 2 and all(0.0 <= float(c) <= 100.0 for c in cells)
