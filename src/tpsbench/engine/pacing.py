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

import random
import threading
from collections import deque
from collections.abc import Sequence

#: how arrivals are spaced: exponential gaps (a Poisson process) or all alike
ARRIVALS = ("poisson", "fixed")
#: the readings' observer name of the pacing figures
PACING = "pacing"
#: the timings of a paced step: waiting for a free user, then being served
LAG, SERVICE = "schedule_lag", "service_time"
TIMINGS = (LAG, SERVICE)


class Schedule:
    """One worker's arrivals: ``rate`` per second from ``start_ns`` (monotonic clock).

    Users take arrivals in order (:meth:`take`); the arrivals due but not taken are the
    queue (:meth:`queued`). Thread-safe: every user of the worker takes from it.
    """

    def __init__(self, rate: float, kind: str, start_ns: int, seed: int, phase: float = 0.0) -> None:
        if not rate > 0:
            raise ValueError(f"a schedule needs a rate above 0, not {rate}")
        if kind not in ARRIVALS:
            raise ValueError(f"arrivals must be one of {', '.join(ARRIVALS)}, not {kind!r}")
        self.gap_ns = 1e9 / rate
        self.poisson = kind == "poisson"
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        #: the arrivals drawn and not yet taken by a user, in order
        self.pending: deque[int] = deque()
        #: the arrivals drawn and not yet counted by :meth:`count_until`, and those counted
        self.uncounted: deque[int] = deque()
        self.counted = 0
        self.next_ns = float(start_ns) + phase * self.gap_ns + self._gap()

    def _gap(self) -> float:
        return self.rng.expovariate(1.0) * self.gap_ns if self.poisson else self.gap_ns

    def _draw(self) -> None:
        """One more arrival at the end of ``pending`` (caller holds the lock)."""
        at = int(self.next_ns)
        self.pending.append(at)
        self.uncounted.append(at)
        self.next_ns += self._gap()

    def take(self) -> int:
        """The intended start (ns, monotonic) of the next arrival nobody serves yet."""
        with self.lock:
            if not self.pending:
                self._draw()
            return self.pending.popleft()

    def _until(self, t_ns: int) -> None:
        while self.next_ns <= t_ns:
            self._draw()

    def queued(self, now_ns: int) -> int:
        """Arrivals due by ``now_ns`` that no user has started: the queue."""
        with self.lock:
            self._until(now_ns)
            return sum(1 for t in self.pending if t <= now_ns)

    def count_until(self, t_ns: int) -> int:
        """How many arrivals were scheduled before ``t_ns`` since the schedule began, taken
        or not; each call's ``t_ns`` must be at least the last one's."""
        with self.lock:
            self._until(t_ns)
            while self.uncounted and self.uncounted[0] < t_ns:
                self.uncounted.popleft()
                self.counted += 1
            return self.counted


def share(rate: float, users: int, users_in_step: int) -> float:
    """A worker's part of a step's rate: in proportion to the users it hosts."""
    return rate * users / users_in_step if users_in_step else 0.0


def step_figures(intervals: Sequence[tuple[float, int, int, int]]) -> dict[str, float]:
    """The steady window's pacing figures from its intervals' (seconds, arrivals,
    completed, queue at the end): offered and achieved rates, the largest and the last queue."""
    seconds = sum(i[0] for i in intervals)
    if not seconds:
        return {}
    return {"offered_per_s": sum(i[1] for i in intervals) / seconds,
            "achieved_per_s": sum(i[2] for i in intervals) / seconds,
            "queue_max": float(max(i[3] for i in intervals)), "queue_end": float(intervals[-1][3])}
