"""The host CPU observer's split: whose CPU it was, and the limits all cores' shares hide.

The server's share is tried on the real servers (its process found as the server says,
checked against the process listening on its port); ``busy_allowed`` and ``driver_peak``
on a driver process pinned to one CPU, against that CPU's own line of /proc/stat and the
process's own CPU clock, read independently of the observer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import unavailable

from tpsbench.measure.host_cpu import HostCpu
from tpsbench.measure.procfs import io_stall_us, listening_pid, read_stat
from tpsbench.targets import open_target

#: a driver pinned to CPU 0 that burns it for a second under the observer, and reads
#: CPU 0's line of /proc/stat and its own CPU clock around the same window by itself
PINNED = """
import json, os, time
from tpsbench.measure.host_cpu import HostCpu

def cpu0():
    line = next(l for l in open("/proc/stat") if l.startswith("cpu0 ")).split()[1:9]
    ticks = [int(v) for v in line]
    return sum(ticks) - ticks[3] - ticks[4] - ticks[7], sum(ticks)

os.sched_setaffinity(0, {0})
observer = HostCpu()
observer.step_started(1, 1)
own, wall, line, before = time.process_time(), time.monotonic(), cpu0(), observer.sample()
while time.monotonic() - wall < 1.0:
    sum(range(1000))
after, line2 = observer.sample(), cpu0()
own, wall = time.process_time() - own, time.monotonic() - wall
print(json.dumps({"reading": observer.reading(before, after, wall), "own_pct": 100 * own / wall,
                  "cpu0_pct": 100 * (line2[0] - line[0]) / (line2[1] - line[1])}))
"""


def test_a_driver_pinned_to_one_cpu_shows_it_busy_and_itself_at_one_core() -> None:
    if len(os.sched_getaffinity(0)) < 2 or 0 not in os.sched_getaffinity(0):
        unavailable("two CPUs including CPU 0 to pin a driver to one of", os.sched_getaffinity(0))
    done = subprocess.run([sys.executable, "-c", PINNED], capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(done.stdout)
    reading = out["reading"]
    assert abs(reading["busy_allowed"] - out["cpu0_pct"]) < 3.0, out  # CPU 0's busy share, not the host's
    assert reading["busy_allowed"] >= 90, out  # the pinned driver keeps its CPU busy, whoever else runs there
    assert reading["allowed_pct"] == pytest.approx(100.0 / (os.cpu_count() or 1), abs=0.01)  # one CPU of all
    assert abs(reading["driver_peak"] - out["own_pct"]) < 10.0, out  # in percent of one core
    assert reading["driver"] == pytest.approx(reading["driver_peak"] / (os.cpu_count() or 1), abs=5.0)
    assert reading["others"] >= 0


@pytest.mark.parametrize("url", [pytest.param("pg_url", marks=pytest.mark.postgresql),
                                 pytest.param("mysql_url", marks=pytest.mark.mysql)])
def test_the_local_servers_top_process_is_found(url: str, request: pytest.FixtureRequest) -> None:
    target = open_target(request.getfixturevalue(url))
    pid = target.server_pid()
    assert pid is not None
    # the process listening on the server's port is its top one (postmaster, mariadbd)
    assert pid == listening_pid(target.url.port or target.default_port)
    assert read_stat(f"/proc/{pid}/stat").comm in target.server_commands  # type: ignore[union-attr]  # the server's process is alive: read_stat is None only for one that is gone
    observer = HostCpu(server_pid=pid)
    observer.step_started(1, 1)
    conn = target.connect()
    before = observer.sample()
    cur = conn.cursor()
    began = time.monotonic()
    while time.monotonic() - began < 0.5:  # the server works for this session
        cur.execute("SELECT 1")
        cur.fetchall()
    reading = observer.reading(before, observer.sample(), time.monotonic() - began)
    conn.close()
    assert reading["server"] > 0, reading
    assert reading["others"] == pytest.approx(max(0.0, 100 - sum(reading[k] for k in (
        "idle", "iowait", "steal", "driver", "server"))), abs=0.05)


def test_no_server_share_for_sqlite_nor_a_remote_server(tmp_path: object) -> None:
    assert open_target(f"sqlite:///{tmp_path}/x.db").server_pid() is None
    # no connection is tried: the address is not this host
    assert open_target("postgresql://postgres@192.0.2.1:5432/x").server_pid() is None


def test_io_pressure_is_a_share_of_the_time_where_the_kernel_has_psi() -> None:
    observer = HostCpu()
    before = observer.sample()
    time.sleep(0.3)
    reading = observer.reading(before, observer.sample(), 0.3)
    if io_stall_us() is None:
        assert "io_pressure" not in reading
    else:
        assert 0.0 <= reading["io_pressure"] <= 100.0


def test_a_server_restarted_between_steps_is_found_again_for_its_share() -> None:
    """``--cache cold`` restarts the server before each step: a new top process, whose CPU
    is the server's share from then on (two real processes stand for the server before and
    after its restart: the first ends, the second burns CPU through the step)."""
    burn = [sys.executable, "-c", "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass"]
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    second: subprocess.Popen[bytes] | None = None
    current = [first]
    try:
        observer = HostCpu(find_server=lambda: current[0].pid)
        assert observer.server == first.pid
        first.kill()
        first.wait()
        second = subprocess.Popen(burn)
        current[0] = second
        observer.step_started(2, 1)
        assert observer.server == second.pid
        before = observer.sample()
        time.sleep(0.5)
        reading = observer.reading(before, observer.sample(), 0.5)
        assert reading["server"] > 0, reading
        current[0] = first
        observer.step_started(3, 1)  # still there: not looked for again
        assert observer.server == second.pid
    finally:
        for process in (first, second):
            if process is not None:
                process.kill()
                process.wait()
