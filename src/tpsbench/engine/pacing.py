"""Paced (open-loop) steps: arrivals on a schedule of their own, latency from when each
transaction should have started.

Why: a closed loop (each user sends its next transaction when the last one answered)
slows its own arrivals whenever the database stalls, so the stall shows in a handful of
slow transactions and disappears from the percentiles: coordinated omission. A paced
step schedules arrivals at ``--rate`` independently of completions (Poisson or evenly
spaced), hands each to a free user, and measures its latency from its scheduled start:
the time it waited for a free user (the schedule lag, as pgbench reports it) plus its
service time. Both parts are kept apart as timings, so the same run shows what a
closed-loop tool at that rate would have reported (``service_time``) beside the honest
figure.

Each worker runs its share of the rate on its own schedule (a superposition of Poisson
streams is a Poisson stream; evenly spaced ones are offset by a phase so that together
they are evenly spaced too), seeded by the run's seed, step and worker, so that a
repeated run offers the same arrivals. The schedule starts when the step's last user
reaches its ramp-up slot: ramp-up connects users, and the load does not wait for them.

What a step offered and what it achieved travel as the figures of a pseudo-observer,
``pacing``, in the readings every interval and step already carry, so the results
store keeps them without a table of their own.
"""

from __future__ import annotations

import bisect
import math
import random
import threading
from array import array
from collections.abc import Sequence

from tpsbench.core.delays import Delay
from tpsbench.core.errors import TpsbenchError

#: how arrivals are spaced: exponential gaps (a Poisson process) or all alike
ARRIVALS = ("poisson", "fixed")
#: the readings' observer name of the pacing figures
PACING = "pacing"
#: the timings of a paced step: waiting for a free user, then being served
LAG, SERVICE = "schedule_lag", "service_time"
TIMINGS = (LAG, SERVICE)
#: arrivals kept after they were taken: more than users can hold ahead of their time,
#: so that counting the arrivals before an interval's end never needs one let go of
KEPT_TAKEN = 200_000
#: the most arrivals a second one driver process is given: its schedule draws only a few
#: times as many with nothing else to do (bench/host_timing.py, results/host_timing.txt),
#: and a process given more falls behind its own clock and never ends its step
MAX_RATE_PER_PROCESS = 200_000


class Schedule:
    """One worker's arrivals: ``rate`` per second from ``start_ns`` (monotonic clock).

    Users take arrivals in order (:meth:`take`); the arrivals due but not taken are the
    queue (:meth:`queued`). The arrivals drawn are kept in one sorted array of 8-byte
    times (a rate no user keeps up with queues millions), and counted by bisection.
    Thread-safe: every user of the worker takes from it.
    """

    def __init__(self, gaps: Delay, start_ns: int, seed: int, phase: float = 0.0) -> None:
        """Arrivals ``gaps`` apart (tpsbench.core.delays: negexp for a Poisson stream, fixed,
        uniform), the first a gap after ``start_ns`` plus ``phase`` of a mean gap."""
        if not gaps.mean > 0:
            raise ValueError(f"a schedule needs gaps above 0 s on average, not {gaps}")
        self.gaps = gaps
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        #: the arrivals drawn, in order: ``times[head:]`` are not taken yet; ``dropped``
        #: were taken long ago and let go of (all but the last KEPT_TAKEN)
        self.times = array("q")
        self.head = 0
        self.dropped = 0
        self.next_ns = float(start_ns) + (phase * gaps.mean + gaps.draw(self.rng)) * 1e9

    @classmethod
    def at_rate(cls, rate: float, kind: str, start_ns: int, seed: int, phase: float = 0.0) -> Schedule:
        """``rate`` arrivals a second, ``kind`` "poisson" (exponential gaps) or "fixed"."""
        if not rate > 0:
            raise ValueError(f"a schedule needs a rate above 0, not {rate}")
        if kind not in ARRIVALS:
            raise ValueError(f"arrivals must be one of {', '.join(ARRIVALS)}, not {kind!r}")
        gaps = Delay("negexp", mean=1 / rate, cap=math.inf) if kind == "poisson" else Delay("fixed", mean=1 / rate)
        return cls(gaps, start_ns, seed, phase)

    def _draw(self) -> None:
        """One more arrival at the end (caller holds the lock)."""
        self.times.append(int(self.next_ns))
        self.next_ns += self.gaps.draw(self.rng) * 1e9

    def take(self) -> int:
        """The intended start (ns, monotonic) of the next arrival nobody serves yet."""
        with self.lock:
            if self.head == len(self.times):
                self._draw()
            at = self.times[self.head]
            self.head += 1
            if self.head > 2 * KEPT_TAKEN:  # let go of what no count needs any more
                cut = self.head - KEPT_TAKEN
                del self.times[:cut]
                self.head -= cut
                self.dropped += cut
            return at

    def _until(self, t_ns: int) -> None:
        while self.next_ns <= t_ns:
            self._draw()

    def queued(self, now_ns: int) -> int:
        """Arrivals due by ``now_ns`` that no user has started: the queue."""
        with self.lock:
            self._until(now_ns)
            return max(0, bisect.bisect_right(self.times, now_ns, self.head) - self.head)

    def count_until(self, t_ns: int) -> int:
        """How many arrivals were scheduled before ``t_ns`` since the schedule began, taken
        or not (``t_ns`` no earlier than an arrival taken KEPT_TAKEN takes ago)."""
        with self.lock:
            self._until(t_ns)
            return self.dropped + bisect.bisect_left(self.times, t_ns)


def share(rate: float, users: int, users_in_step: int) -> float:
    """A worker's part of a step's rate: in proportion to the users it hosts."""
    return rate * users / users_in_step if users_in_step else 0.0


def refuse_rate(rate: float, users: int, processes: int) -> None:
    """Refuse, in one line naming --rate, a step rate whose busiest of ``processes``
    driver processes (hosting ``users`` between them) would get more than
    MAX_RATE_PER_PROCESS arrivals a second."""
    used = max(1, min(processes, users))
    busiest = share(rate, -(-users // used), users)
    if busiest > MAX_RATE_PER_PROCESS:
        raise TpsbenchError(f"--rate {rate:,.15g} gives a driver process {busiest:,.0f} arrivals a second"
                            f" ({users} users over {used} process(es)); one process keeps at most"
                            f" {MAX_RATE_PER_PROCESS:,} a second: give a lower --rate, or more --processes")


def step_figures(intervals: Sequence[tuple[float, int, int, int]]) -> dict[str, float]:
    """The steady window's pacing figures from its intervals' (seconds, arrivals,
    completed, queue at the end): offered and achieved rates, the largest and the last queue."""
    seconds = sum(i[0] for i in intervals)
    if not seconds:
        return {}
    return {"offered_per_s": sum(i[1] for i in intervals) / seconds,
            "achieved_per_s": sum(i[2] for i in intervals) / seconds,
            "queue_max": float(max(i[3] for i in intervals)), "queue_end": float(intervals[-1][3])}
