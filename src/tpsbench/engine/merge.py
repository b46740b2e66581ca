"""Merging the workers' interval reports, interval by interval, in order."""

from __future__ import annotations

import copy
from collections.abc import Callable

from tpsbench.measure.reports import IntervalReport


class IntervalMerger:
    """Merges the workers' reports interval by interval, in order.

    An interval is emitted once every worker still expected has sent it. A worker that
    dies stops being expected; the intervals it did not report are kept but marked not
    steady, so that the summary covers only intervals that saw the whole load.
    """

    def __init__(self, expected: set[int], emit: Callable[[IntervalReport], None]) -> None:
        self.expected = set(expected)
        self.everyone = frozenset(expected)
        self.emit = emit
        self.parts: dict[int, dict[int, IntervalReport]] = {}
        self.out: list[IntervalReport] = []
        self.next = 0

    def add(self, worker: int, report: IntervalReport) -> None:
        self.parts.setdefault(report.interval, {})[worker] = report
        self.release()

    def done(self, worker: int) -> None:
        self.expected.discard(worker)
        self.release()

    def lost(self, worker: int) -> None:
        self.expected.discard(worker)
        self.release()

    def release(self, force: bool = False) -> None:
        while self.next in self.parts:
            parts = self.parts[self.next]
            if not force and not self.expected <= parts.keys():
                return
            del self.parts[self.next]
            self.next += 1
            reports = [parts[w] for w in sorted(parts)]
            merged = fresh_copy(reports[0])
            for report in reports[1:]:
                merged.merge(report)
            merged.steady = all(r.steady for r in reports) and parts.keys() >= self.everyone
            self.out.append(merged)
            self.emit(merged)

    def flush(self) -> list[IntervalReport]:
        self.release(force=True)
        for number in sorted(self.parts):  # gaps can only follow a lost worker
            self.next = number
            self.release(force=True)
        return self.out


def fresh_copy(report: IntervalReport) -> IntervalReport:
    """A fresh report to merge into, so that the workers' reports stay as they were sent."""
    return copy.deepcopy(report)
