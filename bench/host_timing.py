"""What this host's timers and a driver process's pacing schedule can keep: the figures
behind the limits ``tpsbench run`` states when it refuses a rate, a gap or an interval.

Three measurements, each the median of several rounds:

- a user thread's timed wait (``threading.Event.wait``, what a paced user waits on)
  asked for 10 us to 10 ms: how late it wakes;
- one driver process's pacing schedule (``engine.pacing.Schedule``), poisson and fixed:
  how many arrivals a second it draws with nothing else to do (a rate above it
  queues faster than it can be counted);
- the live line of a real run (sysbench on SQLite, 2 users, 4 s measured) at intervals
  of 1 s down to 20 ms: whether the lines keep their pace (first to last, against plan).

Run: ``PYTHONPATH=src python bench/host_timing.py | tee -a bench/results/host_timing.txt``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from tpsbench.engine.pacing import Schedule


def wait_lateness(asked_s: float, rounds: int = 200) -> float:
    """Median lateness in seconds of an Event.wait of ``asked_s``."""
    event, late = threading.Event(), []
    for _ in range(rounds):
        start = time.perf_counter()
        event.wait(asked_s)
        late.append(time.perf_counter() - start - asked_s)
    return statistics.median(late)


def draws_per_second(kind: str, count: int = 1_000_000) -> float:
    """Arrivals a second one schedule draws: ``count`` of them at 1,000 a second, timed."""
    start_ns = time.monotonic_ns()
    schedule = Schedule.at_rate(1000.0, kind, start_ns, seed=1)
    began = time.perf_counter()
    drawn = schedule.count_until(start_ns + count * 1_000_000)
    return drawn / (time.perf_counter() - began)


def live_lines(interval: str, folder: str) -> str:
    """A real run's live lines at ``interval``: how many, first to last against the plan."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")},
           "TPSBENCH_DB": f"sqlite:///{folder}/db.sqlite", "TPSBENCH_RESULTS": f"sqlite:///{folder}/r{interval}.db"}
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "run", "sysbench", "--users", "2", "--rampup", "0s",
                             "--duration", "4s", "--interval", interval], env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    times = [time.monotonic() for line in proc.stderr if "step 1/1" in line]
    proc.wait()
    planned = 4.0 - float(interval.rstrip("s"))
    return f"{len(times)} lines, first to last {times[-1] - times[0]:.2f} s (planned {planned:.2f} s)"


def main() -> None:
    print(f"== {time.strftime('%Y-%m-%d %H:%M')} on {os.uname().nodename}, {len(os.sched_getaffinity(0))} cores")
    for asked in (1e-5, 1e-4, 1e-3, 1e-2):
        late = statistics.median(wait_lateness(asked) for _ in range(3))
        print(f"Event.wait({asked * 1e6:>6.0f} us): median {late * 1e6:7.1f} us late")
    for kind in ("poisson", "fixed"):
        rate = statistics.median(draws_per_second(kind) for _ in range(3))
        print(f"Schedule draws ({kind}): {rate:,.0f} arrivals/s in one process")
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "TPSBENCH_DB": f"sqlite:///{folder}/db.sqlite"}
        subprocess.run([sys.executable, "-m", "tpsbench", "build", "sysbench", "--tables", "1", "--table-size", "1000"],
                       env=env, check=True, capture_output=True)
        for interval in ("1s", "0.25s", "0.1s", "0.05s", "0.02s"):
            print(f"live line every {interval}: {live_lines(interval, folder)}")


if __name__ == "__main__":
    main()
