"""The bottleneck verdict on real runs whose limit is known by construction: a throttled
loop device (storage), a paced run far below capacity (the rate), a hot table locked by
another session (locks), one driver process sharing a core with its server (driver or
server CPU) and a server reached as remote (undetermined). Each test asserts the verdict
stored with the run (tpsbench.report.limits.run_verdicts) and the live line that said it
at the end of each step."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import scratch_pg_database, unavailable
from throttled_pool import ThrottledPg, throttled_pg  # noqa: F401  (the fixture; puts bench/ on the path)

# isort: split
# bench/record_readings.py, on the path once throttled_pool is imported: its lock holder and pinned cluster
import record_readings

import tpsbench
from tpsbench.commands.run import RunConfig, run
from tpsbench.measure.step_context import Verdict
from tpsbench.report.limits import run_verdicts

#: short steps, as bench/record_readings.py's (its lock holder is timed to them)
STEP = record_readings.STEP
LIVE = re.compile(r"^step (\d+) limited by: (.*)$")

#: each a real run of 4 s steps or more (the throttled pool's and the pinned cluster's some 30 s)
pytestmark = pytest.mark.slow


def judged(config: RunConfig) -> tuple[dict[int, Verdict], dict[int, str], Any]:
    """Run ``config``: the stored verdicts, the live lines' verdicts (step -> text) and the run's data."""
    lines: list[str] = []
    outcome = run(config, live=lines.append)
    data = outcome.store.load_run(outcome.run_id)
    said = [m.groups() for m in map(LIVE.match, lines) if m]
    assert len(said) == len({n for n, _ in said}) == len(data.steps), lines  # one line per step
    return run_verdicts(data), {int(n): text for n, text in said}, data


def sysbench(url: str, mode: str, users: list[int], folder: Path, **extra: Any) -> RunConfig:
    return RunConfig("sysbench", url, users=users, options={"mode": mode}, seed=1,
                     results_url=f"sqlite:///{folder / 'results.db'}", **STEP, **extra)


@pytest.fixture(scope="module")
def sbtest() -> Iterator[str]:
    """A sysbench database of one small table on the shared PostgreSQL server."""
    with scratch_pg_database() as url:
        tpsbench.build("sysbench", 1, url, show_progress=False, options={"table_size": "1000"})
        yield url


def test_a_throttled_loop_device_is_storage_naming_it_at_every_step(throttled_pg: ThrottledPg,  # noqa: F811 - the fixture imported above
                                                                      tmp_path: Path) -> None:
    verdicts, live, data = judged(sysbench(throttled_pg.url, "oltp_update_non_index", [1, 8], tmp_path))
    for step, found in verdicts.items():
        assert found.kind == "storage" and found.subject == throttled_pg.device, (step, found)
        assert found.text.startswith(f"storage: {throttled_pg.device}, "), found.text
        assert live[step] == found.text
        print(f"step {step}: {found.text}")
    assert [s.users for s in data.steps] == [1, 8]

@pytest.mark.alone  # the verdict reads the host's CPU: a neighbour's would be other processes'

def test_a_paced_run_far_below_capacity_is_limited_by_its_rate(sbtest: str, tmp_path: Path) -> None:
    verdicts, live, _ = judged(sysbench(sbtest, "oltp_point_select", [4], tmp_path, rates=[20.0]))
    assert verdicts[1].kind == "rate", verdicts[1]
    assert live[1] == verdicts[1].text and live[1].startswith("the paced rate: the database kept up")
    print(live[1])


def test_a_hot_table_locked_by_another_session_is_locks_naming_it(sbtest: str, tmp_path: Path) -> None:
    holder = record_readings.Holder(sbtest, lambda cur: cur.execute("LOCK TABLE sbtest1 IN EXCLUSIVE MODE"))
    lines: list[str] = []
    outcome = record_readings.run_holding(sysbench(sbtest, "oltp_update_non_index", [4], tmp_path), holder,
                                          lines.append)
    verdicts = run_verdicts(outcome.store.load_run(outcome.run_id))
    assert verdicts[1].kind == "locks" and verdicts[1].subject == "sbtest1", verdicts[1]
    assert verdicts[1].text.startswith("lock waits on sbtest1: ")
    assert f"step 1 limited by: {verdicts[1].text}" in lines
    print(verdicts[1].text)

@pytest.mark.alone  # the verdict reads the host's CPU: a neighbour's would be other processes'

def test_point_selects_from_one_driver_process_on_the_server_s_core_are_cpu(tmp_path: Path) -> None:
    with record_readings.pinned_cluster() as port:
        if port is None:
            unavailable("a private PostgreSQL cluster pinned to CPU 0",
                        "needs root, pg_createcluster, taskset and a free port "
                        f"{record_readings.PRIVATE_PORT}")
        with record_readings.pg_database("tpsb_verdict_cpu", port) as url:
            tpsbench.build("sysbench", 1, url, show_progress=False, options={"table_size": "1000"})
            pinned = record_readings.run_pinned(sysbench(url, "oltp_point_select", [8], tmp_path, processes=1))
    data = pinned.store.load_run(pinned.run_id)
    verdicts = run_verdicts(data)
    live = {int(n): text for n, text in (m.groups() for m in map(LIVE.match, pinned.lines) if m)}
    assert data.readings(1)["host_cpu"]["allowed_pct"] < 100.0 or os.cpu_count() == 1  # both pinned: one CPU
    # which of the two is the larger share on one core moves with the load others put on this host
    assert verdicts[1].kind in ("driver_cpu", "server_cpu"), verdicts[1]
    assert live[1] == verdicts[1].text
    print(live[1])


def test_a_remote_server_is_undetermined_in_one_line_and_the_run_records_what_it_can(sbtest: str,
                                                                                      tmp_path: Path) -> None:
    """127.1 is the loopback address, but tpsbench takes only localhost, 127.0.0.1 and ::1
    as this host: the server's CPU and devices are not read."""
    remote = sbtest.replace("@127.0.0.1:", "@127.1:").replace("@localhost:", "@127.1:")
    assert "@127.1:" in remote
    verdicts, live, data = judged(sysbench(remote, "oltp_point_select", [2], tmp_path))
    readings = data.readings(1)
    # nothing of the server's is read, so nothing of the server's is named: undetermined,
    # unless this host's CPUs were saturated with the driver the largest share of them (the
    # "remote" server runs here, so its CPU counts as others': on a busy host either way)
    cpu = readings["host_cpu"]
    driver_largest = cpu["driver"] >= cpu.get("others", 0.0) and 100.0 - cpu["idle"] - cpu["iowait"] >= 90.0
    assert verdicts[1].kind == ("driver_cpu" if driver_largest and verdicts[1].kind == "driver_cpu"
                                else "undetermined"), (verdicts[1], cpu)
    assert live[1] == verdicts[1].text
    assert verdicts[1].kind == "driver_cpu" or live[1].startswith("undetermined: the server is remote (127.1)")
    step = data.steps[0]
    assert step.summary is not None and step.summary.tps > 0
    assert readings["host_cpu"]["driver"] >= 0 and "server" not in readings["host_cpu"]
    assert readings["db_waits"]["active"] >= 0  # the server's own view of its sessions still read
    report = subprocess.run([sys.executable, "-m", "tpsbench", "report", str(data.run.id), "--results",
                             f"sqlite:///{tmp_path / 'results.db'}", "--format", "json"],
                            capture_output=True, text=True, check=True, timeout=120)
    (exported,) = json.loads(report.stdout)["runs"]
    assert exported["config"]["storage"]["detected"] == {"remote": True, "host": "127.1"}
    assert exported["steps"][0]["verdict"]["text"] == live[1]
    print(live[1])
