"""A trace replay's intervals, cut while it runs: each statement into the interval it
ended in, a live line per interval as ``tpsbench run`` prints, and on Ctrl-C every
statement answered so far in its interval.

Why on a thread of its own, once per interval: the player's hot path (one thread
multiplexing every session) only appends each statement's start and latency to its
session's lists; reading them an interval at a time costs that thread nothing per
statement. A session's statements are answered in order, so each interval takes, session
by session, the answers appended since the last one that ended before its bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tpsbench.measure.observers import Observers
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.reports import IntervalReport, clock, live_line
from tpsbench.workloads.replay.player import Played

#: how long after an interval's bound its answers are read (one appended just before it)
GRACE_S = 0.05


class LiveCut:
    """The replay's intervals (``bounds``, relative to the player's start), each taken
    once its bound has passed (:meth:`begin` starts that), the last one at :meth:`end`."""

    def __init__(self, played: Callable[[], list[Played]], names: list[list[str]], speed: float,
                 bounds: list[tuple[float, float, bool]], observers: Observers,
                 live: Callable[[str], None] | None) -> None:
        self.played, self.names, self.speed, self.bounds = played, names, speed, bounds
        self.observers, self.live = observers, live
        self.recorder = IntervalRecorder(sorted({n for session in names for n in session}))
        self.taken = [0] * len(names)
        self.reports: list[IntervalReport] = []
        self.start = self.wall = 0.0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def begin(self, start: float, wall: float) -> None:
        """The replay starts at ``start`` (perf_counter), ``wall`` in epoch seconds: every
        interval but the last is taken on this thread as its bound passes."""
        self.start, self.wall = start, wall
        self.thread = threading.Thread(target=self._tick, daemon=True, name="replay-intervals")
        self.thread.start()

    def _tick(self) -> None:
        for k, (_, b1, _) in enumerate(self.bounds[:-1]):
            if self.stop.wait(max(0.0, self.start + b1 + GRACE_S - time.perf_counter())):
                return
            with self.lock:
                if self.stop.is_set():
                    return
                self._take(k, b1, b1)

    def end(self, elapsed: float) -> list[IntervalReport]:
        """Every interval begun by ``elapsed`` (the replay's end, or a Ctrl-C), the last one
        holding every answer still to come after the last bound; a statement sent and not
        answered (in flight at a Ctrl-C) is counted in doubt there, its outcome unknown."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        with self.lock:
            kept = [b for b in self.bounds if b[0] < elapsed] or self.bounds[:1]
            if not self.start:
                return []
            for k in range(len(self.reports), len(kept)):
                last = k == len(kept) - 1
                self._take(k, None if last else kept[k][1], elapsed if last else kept[k][1], doubt=last)
            return self.reports

    def _take(self, k: int, upto: float | None, t1: float, doubt: bool = False) -> None:
        """Record the answers that ended before ``upto`` (None: all) and take interval ``k``."""
        rec, start, speed = self.recorder, self.start, self.speed
        for j, p in enumerate(self.played()):
            names, statements, latencies = self.names[j], p.session.statements, p.latency_s
            i, n = self.taken[j], len(latencies)
            while i < n:
                latency = latencies[i]
                at = p.failed_at[i] - start if latency is None else statements[i].offset / speed + latency
                if upto is not None and at >= upto:
                    break
                if latency is None:
                    if i in p.in_doubt:  # sent on a connection lost before its answer
                        rec.add(names[i], "in_doubt")
                    else:
                        rec.error(names[i], p.errors[i])
                else:
                    rec.record(names[i], latency * 1e6, True)
                i += 1
            self.taken[j] = i
            if doubt:
                for at in range(i, len(p.started)):
                    rec.add(names[at], "in_doubt")
        b0 = self.bounds[k][0]
        report = rec.take(1, k, self.wall + b0, self.wall + t1, steady=True)
        report.observations = self.observers.interval(k)
        self.reports.append(report)
        if self.live is not None:
            left = max(0.0, self.bounds[-1][1] - t1)
            self.live(live_line(report, len(self.names), t1, "1/1", (f"{clock(left)} left",)))
