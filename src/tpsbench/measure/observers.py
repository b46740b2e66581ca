"""Step observers: what runs beside every step and reads what transactions cannot show.

Host CPU (tpsbench.measure.host_cpu), next device I/O and the database's own counters:
each is read at the same moments as the transactions are counted, so that a report can
put "TPS 4,100 at 83 % CPU, 12 % iowait" in one column. An observer registers once per
run; it is told each step's start and end, and is sampled at the step's start and at
every interval boundary (the wall-clock times the workers cut their intervals at). Its
:meth:`StepObserver.reading` turns two samples into figures, which the results store
keeps beside the step's intervals: one reading per interval, and one over the step's
steady window.

Why samples at boundaries, taken on a thread of their own: observers read cumulative
counters (/proc/stat, /proc/diskstats, pg_stat_database), for which two readings
bracket an interval exactly; a sample taken when the coordinator gets round to an
interval would be late by however long the workers took to report.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

#: how long a reading waits for the sample at its interval's end (its thread is due then)
SAMPLE_WAIT_S = 2.0

#: observer name -> figure name -> value
Readings = dict[str, dict[str, float]]


class StepObserver(ABC):
    """One thing read beside every step. Subclasses name themselves and their figures."""

    #: the observer's name in the results store ("host_cpu")
    name: ClassVar[str]
    #: database connections it holds through a step, which the run's connection check counts
    connections: ClassVar[int] = 0

    def step_started(self, step: int, users: int) -> None:  # noqa: B027 - a hook most observers leave empty
        """A step begins (called just before its first sample)."""

    def step_ended(self, step: int) -> None:  # noqa: B027 - a hook most observers leave empty
        """The step is over (after its last sample)."""

    @abstractmethod
    def sample(self) -> Any:
        """Cumulative counters as of now: cheap, as it is called at every interval boundary."""

    @abstractmethod
    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        """The figures of the ``seconds`` between two samples (rates, percentages)."""


class StepThread:
    """An observer's thread of its own through each step (outage probes, session looks):
    ``body(stop)`` runs from the step's start until ``stop`` is set at its end; a body that
    does not end within ``wait_s`` (a call the server never answers) is left to its
    daemon thread, so that a hung server never holds up the run."""

    def __init__(self, name: str, body: Callable[[threading.Event], None], wait_s: float) -> None:
        self.name, self.body, self.wait_s = name, body, wait_s
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.body, args=(self.stop,), name=self.name, daemon=True)
        self.thread.start()

    def end(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(self.wait_s)
            self.thread = None


class Observers:
    """A run's observers, sampled together at every boundary of every step."""

    def __init__(self, observers: Sequence[StepObserver] = ()) -> None:
        self.observers = list(observers)
        #: this step's samples: boundary index -> (wall-clock time, one sample per observer)
        self.samples: dict[int, tuple[float, list[Any]]] = {}
        self.boundaries: list[float] = []
        self.first_steady = 0
        self.sampled = threading.Condition()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start_step(self, step: int, users: int, start_at: float, bounds: Sequence[tuple[float, float, bool]]) -> None:
        """Sample at ``start_at`` and at each interval's end (``bounds``: offsets from it)."""
        if not self.observers:
            return
        for observer in self.observers:
            observer.step_started(step, users)
        self.samples = {}
        self.boundaries = [start_at] + [start_at + end for _, end, _ in bounds]
        self.first_steady = next((i for i, (_, _, steady) in enumerate(bounds) if steady), len(bounds))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample_all, name="observers", daemon=True)
        self.thread.start()

    def _sample_all(self) -> None:
        for index, due in enumerate(self.boundaries):
            if self.stop.wait(max(0.0, due - time.time())):
                return
            taken = (time.time(), [observer.sample() for observer in self.observers])
            with self.sampled:
                self.samples[index] = taken
                self.sampled.notify_all()

    def interval(self, index: int) -> Readings:
        """Readings over interval ``index`` of the step (none for the unplanned tail)."""
        if not self.observers or index + 1 >= len(self.boundaries):
            return {}
        with self.sampled:
            self.sampled.wait_for(lambda: index + 1 in self.samples or self.stop.is_set(), SAMPLE_WAIT_S)
        return self._between(index, index + 1)

    def steady(self) -> Readings:
        """Readings over the step's steady window (as far as it was sampled)."""
        if not self.samples:
            return {}
        return self._between(self.first_steady, max(self.samples))

    def halt(self) -> None:
        """Sample no more in this step, and let no reading wait for a sample (Ctrl-C)."""
        self.stop.set()
        with self.sampled:
            self.sampled.notify_all()

    def end_step(self, step: int) -> None:
        """Stop sampling (a stopped step ends before its last boundary)."""
        if self.thread is None:
            return
        self.halt()
        self.thread.join()
        self.thread = None
        for observer in self.observers:
            observer.step_ended(step)

    def _between(self, first: int, last: int) -> Readings:
        start, end = self.samples.get(first), self.samples.get(last)
        if start is None or end is None or last <= first:
            return {}
        seconds = end[0] - start[0]
        return {observer.name: observer.reading(before, after, seconds)
                for observer, before, after in zip(self.observers, start[1], end[1])}
