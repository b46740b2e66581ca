"""The bottleneck verdict (tpsbench.measure.bottleneck) on readings of each kind of limit.

Each case is one step's steady readings as the observers store them (observer -> figure
-> value) and the verdict it must give, with every threshold tried on both sides of its
edge; then the I/O per transaction (tpsbench.measure.io_per_txn) on the same readings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tpsbench.measure import bottleneck as b
from tpsbench.measure.bottleneck import verdict
from tpsbench.measure.io_per_txn import io_per_txn
from tpsbench.measure.step_context import KINDS, StepContext, Verdict, kept_up, unloaded_awaits
from tpsbench.report.limits import context_of

LOCAL = StepContext(users=8, devices=("loop1",), unloaded={"loop1.r_await_ms": 0.3, "loop1.w_await_ms": 0.5})
#: a host with room everywhere: 40 % busy, the device 12 % busy, few lock waits
IDLE: dict[str, dict[str, float]] = {
    "host_cpu": {"user": 30.0, "system": 11.0, "iowait": 1.0, "idle": 58.0, "steal": 0.0, "driver": 15.0,
                 "server": 20.0, "others": 6.0, "driver_peak": 30.0, "busy_allowed": 41.0, "io_pressure": 2.0},
    "disk_io": {"loop1.r_s": 50.0, "loop1.w_s": 150.0, "loop1.r_await_ms": 0.3, "loop1.w_await_ms": 0.5,
                "loop1.aqu_sz": 0.1, "loop1.util_pct": 12.0, "total.util_pct": 12.0},
    "db_waits": {"active": 2.0, "cpu_pct": 80.0, "lock_pct": 3.0, "lwlock_pct": 1.0, "io_pct": 10.0,
                 "client_pct": 6.0},
}


def readings(**changes: dict[str, float]) -> dict[str, dict[str, float]]:
    """IDLE with some observers' figures changed (an observer given as {} is left out)."""
    out = {name: dict(figures) for name, figures in IDLE.items()}
    for name, figures in changes.items():
        if figures:
            out.setdefault(name, {}).update(figures)
        else:
            out.pop(name, None)
    return out


def judge(context: StepContext = LOCAL, **changes: dict[str, float]) -> Verdict:
    found = verdict(readings(**changes), context)
    assert found.kind in KINDS and found.figures, found
    return found


def paced(offered: float, achieved: float) -> StepContext:
    return StepContext(users=8, offered_per_s=offered, achieved_per_s=achieved, devices=("loop1",))


def test_the_paced_rate_when_the_users_kept_up_and_not_below_the_edge() -> None:
    kept = judge(paced(50.0, 49.5))
    assert kept.kind == "rate" and kept.text == ("the paced rate: the database kept up, offered 50.0/s "
                                                 "achieved 49.5/s")
    assert kept.figures["pacing.offered_per_s"] == 50.0
    assert judge(paced(50.0, 49.4)).kind == "undetermined"  # below 99 %: not kept up, nothing saturated


def test_driver_cpu_by_its_busiest_worker_at_the_edge() -> None:
    found = judge(host_cpu={"driver_peak": 90.0})
    assert found.kind == "driver_cpu"
    assert found.text == ("driver CPU: the load generator, not the database, was the limit (busiest worker 90 % "
                          "of a core)")
    assert found.figures["host_cpu.driver_peak"] == 90.0
    assert judge(host_cpu={"driver_peak": 89.9}).kind == "undetermined"


def test_cpu_saturated_goes_to_the_largest_share() -> None:
    busy = {"busy_allowed": 90.0, "idle": 10.0}
    assert judge(host_cpu={**busy, "driver": 50.0, "server": 30.0, "others": 10.0}).kind == "driver_cpu"
    server = judge(host_cpu={**busy, "driver": 20.0, "server": 60.0, "others": 10.0})
    assert server.kind == "server_cpu" and server.text.startswith("server CPU: CPUs 90 % busy (the server 60 %")
    assert judge(host_cpu={**busy, "driver": 20.0, "server": 25.0, "others": 45.0}).kind == "host_cpu"
    assert judge(host_cpu={"busy_allowed": 89.9, "server": 80.0}).kind == "undetermined"


def test_cpu_busy_from_idle_and_iowait_where_busy_allowed_is_missing() -> None:
    """A run stored before busy_allowed and the server's share: 100 - idle - iowait, the
    rest of the driver's share counted as the server's."""
    old = {"user": 80.0, "system": 12.0, "iowait": 0.0, "idle": 8.0, "steal": 0.0, "driver": 30.0}
    found = verdict({"host_cpu": old}, LOCAL)
    assert found.kind == "server_cpu" and "the server 62 %" in found.text
    assert verdict({"host_cpu": {**old, "idle": 7.0, "iowait": 3.5}}, LOCAL).kind != "server_cpu"
    # time a hypervisor stole is not busy, as host_cpu counts busy_allowed: 95 % not idle is 75 % busy
    stolen = verdict({"host_cpu": {**old, "user": 65.0, "idle": 5.0, "steal": 20.0}}, LOCAL)
    assert stolen.kind == "undetermined" and "CPU 75 %" in stolen.text, stolen


def test_storage_by_util_and_await_against_the_unloaded_await() -> None:
    found = judge(disk_io={"loop1.util_pct": 99.0, "loop1.r_await_ms": 12.0})
    assert found.kind == "storage" and found.subject == "loop1"
    assert found.text == "storage: loop1 at 99 % util, r_await 12 ms (unloaded 0.3 ms)"
    assert found.figures["disk_io.loop1.util_pct"] == 99.0
    assert judge(disk_io={"loop1.util_pct": 90.0, "loop1.w_await_ms": 1.0}).kind == "storage"  # 2x: the edge
    assert judge(disk_io={"loop1.util_pct": 90.0, "loop1.w_await_ms": 0.99}).kind == "undetermined"
    assert judge(disk_io={"loop1.util_pct": 89.9, "loop1.r_await_ms": 12.0}).kind == "undetermined"
    queued = judge(disk_io={"loop1.util_pct": 95.0, "loop1.aqu_sz": 1.0})
    assert queued.kind == "storage" and queued.text == "storage: loop1 at 95 % util, aqu-sz 1.0"


def test_storage_by_the_sessions_io_waits_with_a_quiet_device_the_throttle_case() -> None:
    """A blkio throttle delays I/O before the device counts it: 205 IOPS at 1 % util."""
    found = judge(disk_io={"loop1.r_s": 5.0, "loop1.w_s": 200.0, "loop1.util_pct": 1.0, "loop1.w_await_ms": 0.02},
                  db_waits={"io_pct": 88.0, "cpu_pct": 10.0, "event.IO:DataFileRead": 60.0,
                            "event.IO:WALWrite": 28.0})
    assert found.kind == "storage" and found.subject == "loop1"
    assert found.text == ("storage: loop1, 205 IOPS, 88 % of the database's active time waiting on I/O "
                          "(IO:DataFileRead); the device shows 1 % util: the waits are not in its queue (a throttle or "
                          "a controller above it, or each flush's latency)")
    assert found.figures["db_waits.io_pct"] == 88.0
    assert judge(db_waits={"io_pct": 50.0}).kind == "storage"
    assert judge(db_waits={"io_pct": 49.9}).kind == "undetermined"


def test_storage_by_io_pressure_only_while_the_cpus_have_room() -> None:
    found = judge(host_cpu={"io_pressure": 50.0})
    assert found.kind == "storage" and "tasks stalled on I/O 50 % of the time" in found.text
    assert judge(host_cpu={"io_pressure": 49.9}).kind == "undetermined"
    hot = judge(host_cpu={"io_pressure": 70.0, "busy_allowed": 95.0, "server": 80.0})
    assert hot.kind == "server_cpu"


def test_lock_waits_name_the_table_or_the_internal_lock() -> None:
    found = judge(db_waits={"lock_pct": 72.0, "cpu_pct": 20.0, "lock_on.stock": 70.0, "lock_on.district": 2.0})
    assert found.kind == "locks" and found.subject == "stock"
    assert found.text == "lock waits on stock: 72 % of active time"
    assert judge(db_waits={"lock_pct": 49.9}).kind == "undetermined"
    lw = judge(db_waits={"lwlock_pct": 50.0, "event.LWLock:BufferContent": 45.0})
    assert lw.kind == "locks" and lw.text == "internal lock waits (LWLock:BufferContent): 50 % of active time"


def test_waits_on_the_wal_write_lock_are_the_storage_s() -> None:
    """Sessions queue on LWLock:WALWrite while one of them flushes the WAL: I/O, not a lock."""
    found = judge(db_waits={"lwlock_pct": 80.0, "event.LWLock:WALWrite": 75.0, "io_pct": 12.0,
                            "event.IO:WALSync": 12.0, "cpu_pct": 5.0})
    assert found.kind == "storage" and found.subject == "loop1", found
    assert "87 % of the database's active time waiting on I/O (IO:WALSync, LWLock:WALWrite)" in found.text
    assert judge(db_waits={"lwlock_pct": 50.0, "event.LWLock:WALWrite": 45.0, "io_pct": 4.9}).kind == "undetermined"


def test_of_several_saturated_the_one_the_sessions_waited_on_most_wins() -> None:
    both = {"host_cpu": {"busy_allowed": 95.0, "server": 80.0},
            "disk_io": {"loop1.util_pct": 99.0, "loop1.aqu_sz": 4.0}}
    io_bound = judge(**both, db_waits={"io_pct": 70.0, "cpu_pct": 25.0})
    assert io_bound.kind == "storage" and "also saturated: server CPU" in io_bound.text
    assert judge(**both, db_waits={"io_pct": 20.0, "cpu_pct": 75.0}).kind == "server_cpu"
    # no session waits read: the documented order, CPU before storage
    tie = judge(**both, db_waits={})
    assert tie.kind == "server_cpu" and tie.text.endswith(" (also saturated: storage)"), tie  # said all the same
    assert b.ORDER.index("server_cpu") < b.ORDER.index("storage")


def test_think_times_with_nothing_saturated_and_not_with_something() -> None:
    waits = StepContext(users=10, waits=True, devices=("loop1",))
    found = judge(waits)
    assert found.kind == "think" and "CPU 41 %" in found.text
    assert judge(waits, db_waits={"lock_pct": 80.0}).kind == "locks"


def test_undetermined_says_why() -> None:
    quiet = judge(StepContext(users=1, devices=("loop1",)))
    assert quiet.text == ("nothing saturated: CPU 41 %, loop1 12 % util, lock waits 3 %: with 1 user in a closed "
                          "loop the round trip bounds TPS")
    none = verdict({}, LOCAL)
    assert none.kind == "undetermined" and "no readings" in none.text and none.figures == {}


def test_a_remote_server_is_undetermined_unless_the_driver_or_its_own_waits_name_the_limit() -> None:
    remote = StepContext(users=8, local=False, host="db.example")
    # its CPU and devices are not read here: a busy device and CPU on this host say nothing of it
    found = judge(remote, disk_io={"loop1.util_pct": 99.0, "loop1.aqu_sz": 5.0},
                  host_cpu={"busy_allowed": 95.0, "driver": 20.0, "server": 0.0, "others": 70.0})
    assert found.kind == "undetermined" and found.text.startswith("undetermined: the server is remote (db.example)")
    assert judge(remote, host_cpu={"driver_peak": 97.0}).kind == "driver_cpu"
    assert judge(remote, db_waits={"io_pct": 80.0}).kind == "storage"


def test_unloaded_await_is_the_lowest_at_a_step_that_did_that_io() -> None:
    steps: list[Any] = [
        {"disk_io": {"loop1.r_s": 0.0, "loop1.r_await_ms": 0.0, "loop1.w_s": 10.0, "loop1.w_await_ms": 0.8}},
        {"disk_io": {"loop1.r_s": 90.0, "loop1.r_await_ms": 0.4, "loop1.w_s": 300.0, "loop1.w_await_ms": 0.5,
                     "total.r_s": 90.0, "total.r_await_ms": 0.4}},
        {"disk_io": {"loop1.r_s": 200.0, "loop1.r_await_ms": 6.0, "loop1.w_s": 900.0, "loop1.w_await_ms": 9.0}},
        {},
    ]
    assert unloaded_awaits(steps) == {"loop1.r_await_ms": 0.4, "loop1.w_await_ms": 0.5}


@pytest.mark.parametrize(("per_s", "expected"), [(100.0, {"reads": 0.5, "writes": 1.5, "read_kB": 4.0,
                                                           "written_kB": 12.0, "wal_bytes": 5000.0}),
                                                  (0.0, {})])
def test_io_per_transaction_divides_each_rate_by_the_commits_per_second(per_s: float,
                                                                        expected: dict[str, float]) -> None:
    found = io_per_txn({"disk_io": {"total.r_s": 50.0, "total.w_s": 150.0, "total.r_kB_s": 400.0,
                                    "total.w_kB_s": 1200.0, "loop1.r_s": 50.0},
                        "database": {"wal_bytes_s": 500_000.0, "commits_s": 100.0}}, per_s)
    assert found == expected


def test_an_embedded_database_s_cpu_is_the_driver_processes() -> None:
    """SQLite runs in the driver's workers: their CPU is the database's, not a load generator's."""
    embedded = StepContext(users=2, devices=("vda",), embedded=True)
    busy = {"host_cpu": {"user": 80.0, "system": 18.0, "iowait": 0.0, "idle": 2.0, "steal": 0.0, "driver": 70.0}}
    found = verdict(busy, embedded)
    assert found.kind == "server_cpu" and found.text.startswith("database CPU (embedded in the driver): CPUs 98 %")
    assert verdict({"host_cpu": {**busy["host_cpu"], "driver": 20.0}}, embedded).kind == "host_cpu"
    peak = verdict({"host_cpu": {"driver_peak": 95.0, "idle": 50.0}}, embedded)
    assert peak.kind == "server_cpu" and "busiest at 95 % of a core" in peak.text


#: steps' steady readings recorded from real runs whose limit is known by construction
#: (bench/record_readings.py), and the kinds their verdict may be
READINGS = Path(__file__).resolve().parent / "fixtures" / "readings"
RECORDED = {"storage_throttled_pg": ("storage",), "paced_pg": ("rate",), "locks_pg": ("locks",),
            "locks_mariadb": ("locks",), "cpu_shared_core_pg": ("driver_cpu", "server_cpu"),
            "idle_think_sqlite": ("think",)}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_verdict_on_readings_recorded_from_real_runs(name: str) -> None:
    document = json.loads((READINGS / f"{name}.json").read_text())
    config = {"options": document["options"], "storage": document["storage"]}
    steps = document["steps"]
    assert steps and all(s["readings"] for s in steps)
    unloaded = unloaded_awaits([s["readings"] for s in steps])
    for step in steps:
        context = context_of(config, step["users"], step["readings"], unloaded, document["server"], step["working"])
        found = verdict(step["readings"], context)
        assert found.kind in RECORDED[name], (step["users"], found)
        if name == "storage_throttled_pg":  # the loop device the throttle holds, not the disk beneath it
            assert found.subject == document["device"] and found.text.startswith(f"storage: {document['device']}, ")
        if name.startswith("locks_"):
            assert found.subject == "sbtest1", found


def test_a_paced_step_kept_up_where_only_the_window_s_edge_is_short() -> None:
    """60 arrivals at 20/s for 3 s with 2 users: 58 completed and nothing queued is the
    window's edge; a deeper shortfall, or arrivals left waiting, is a backlog."""
    assert kept_up(20.0, 60 / 3, 0.0, 2, 3.0) and kept_up(20.0, 59.5 / 3, 5.0, 2, 3.0)
    assert kept_up(20.0, 58 / 3, 0.0, 2, 3.0)
    assert not kept_up(20.0, 58 / 3, 1.0, 2, 3.0) and not kept_up(20.0, 58 / 3, None, 2, 3.0)
    assert not kept_up(20.0, 57 / 3, 0.0, 2, 3.0)
    assert not kept_up(0.0, 0.0, 0.0, 2, 3.0)
