"""What virtual users record: one :class:`IntervalRecorder` per worker process.

:meth:`IntervalRecorder.record` runs once per transaction on the hot path, so it only
appends the latency to a per-transaction list (no lock: see the class); the lists go into
the histogram with numpy, up to 4096 values at a time. Every interval the worker calls
:meth:`IntervalRecorder.take`, which returns an :class:`~tpsbench.measure.reports.IntervalReport`
(picklable, histograms encoded) for the coordinator. How things are counted is stated
once, in tpsbench.measure.reports.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from tpsbench.measure import waits
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.reports import MAX_ERROR_SAMPLES, IntervalReport, TxnReport

#: latencies buffered per transaction before they go into the histogram
BATCH = 4096
#: longest error message kept
MAX_MESSAGE = 500
KINDS = ("retries", "errors", "reconnects", "in_doubt")


class IntervalRecorder:
    """Counters and latencies of one worker process's users, thread-safe, reset by take().

    Why no lock on the hot path: a lock around the append would double what record()
    costs, and a list append is atomic under the GIL without it; record() stays a small
    share of a transaction's client CPU (bench/results/client_callgrind.txt). Each
    transaction type has two lists (rolled back, committed). A list that fills up to
    BATCH, and every list at take(), is swapped for a new one under the lock and drained
    into the histogram with numpy. A user that fetched a list just before the swap may
    still append to it: swapped lists are drained again at the next take() (a straggler
    lands in the next interval) and dropped only after that, so no latency is lost.

    Timings (:meth:`record_timing`) are rare by nature (a deferred Delivery's queue time)
    and take the lock.
    """

    def __init__(self, names: Sequence[str], timings: Sequence[str] = ()) -> None:
        if not names:
            raise ValueError("IntervalRecorder needs the workload's transaction names")
        self.names = tuple(names)
        self.timing_names = tuple(timings)
        #: per transaction [rolled-back latencies, committed latencies]; indexed by the bool
        self._bufs: dict[str, list[list[float]]] = {name: [[], []] for name in self.names}
        self._lock = threading.Lock()
        self._retired: list[tuple[str, int, list[float]]] = []  # swapped since the last take()
        self._old: list[tuple[str, int, list[float]]] = []  # swapped before it: drained once more
        #: per transaction the timing names of its realised keying and think times (made
        #: once, so that recording a wait builds no string)
        self.keying_names = {name: waits.keying_name(name) for name in self.names}
        self.think_names = {name: waits.think_name(name) for name in self.names}
        self._waits: dict[str, list[float]] = {}
        self._start()

    def _start(self) -> None:
        names = self.names
        self._hists = {name: LatencyHistogram() for name in names}
        self._rollbacks = dict.fromkeys(names, 0)
        self._retries = dict.fromkeys(names, 0)
        self._errors = dict.fromkeys(names, 0)
        self._error_calls = dict.fromkeys(names, 0)
        self._in_doubt = dict.fromkeys(names, 0)
        self._reconnects = 0
        self._samples: dict[tuple[str, str], int] = {}
        self._timings: dict[str, list[float]] = {name: [] for name in self.timing_names}
        self._waits = {name: [] for name in waits.names(self.names)}

    def set_timings(self, names: Sequence[str]) -> None:
        """Record these timings from now on (a paced step adds its own, tpsbench.engine.pacing)."""
        with self._lock:
            self.timing_names = tuple(names)
            self._timings = {name: self._timings.get(name, []) for name in self.timing_names}

    def record(self, name: str, latency_us: float, committed: bool) -> None:
        """One completed transaction: its latency in microseconds, committed or rolled back."""
        try:
            buf = self._bufs[name][committed]
        except (KeyError, TypeError, IndexError):
            raise self._bad(name, committed) from None
        buf.append(latency_us)
        if len(buf) >= BATCH:
            self._flush(name, committed, buf)

    def record_timing(self, name: str, latency_us: float) -> None:
        """One span of ``name`` (one of ``timing_names``) that is not a transaction."""
        with self._lock:
            try:
                self._timings[name].append(latency_us)
            except KeyError:
                raise ValueError(f"unknown timing {name!r}; known: {', '.join(self.timing_names) or 'none'}") from None

    def record_wait(self, name: str, value_us: float) -> None:
        """A keying or think time as drawn, when drawn (``name`` from :attr:`keying_names`
        or :attr:`think_names`), or how late a user woke from one (waits.LAG): see
        tpsbench.measure.waits. No lock (as record()): a list append is atomic under the
        GIL, and take() swaps the lists under its lock; a value appended to a list just
        swapped is lost, which a wait's statistics can afford and a latency could not."""
        self._waits[name].append(value_us)

    def _flush(self, name: str, committed: bool, buf: list[float]) -> None:
        with self._lock:
            pair = self._bufs[name]
            if pair[committed] is buf:  # else another user flushed it first
                pair[committed] = []
                self._retired.append((name, int(committed), buf))
                self._drain(name, int(committed), buf)

    def _drain(self, name: str, committed: int, buf: list[float]) -> None:
        """Move what ``buf`` holds into the histogram (caller holds the lock)."""
        n = len(buf)
        if n:
            values = buf[:n]
            del buf[:n]  # one step under the GIL: appends made meanwhile stay, after n
            self._hists[name].record_many(_numbers(values))
            if not committed:
                self._rollbacks[name] += n

    def add(self, name: str, kind: str, n: int = 1) -> None:
        """Count ``n`` retries, errors, reconnects or in-doubt outcomes of transaction ``name``
        (in doubt: its connection was lost before the outcome came back, see reports)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if name not in self._bufs:
            raise self._bad(name, True)
        with self._lock:
            if kind == "reconnects":
                self._reconnects += n
            elif kind == "retries":
                self._retries[name] += n
            elif kind == "in_doubt":
                self._in_doubt[name] += n
            else:
                self._errors[name] += n

    def error(self, name: str, message: str) -> None:
        """Keep a sample of a failure's message (first line, bounded number of distinct ones).

        A call also stands for one error: the report's count is the larger of the errors
        counted with ``add(name, "errors")`` and the calls made here, so an engine that calls
        both for each failure, or only this, gets the same right number.
        """
        if name not in self._bufs:
            raise self._bad(name, True)
        key = (name, short_message(message))
        with self._lock:
            self._error_calls[name] += 1
            if key in self._samples or len(self._samples) < MAX_ERROR_SAMPLES:
                self._samples[key] = self._samples.get(key, 0) + 1

    def _bad(self, name: str, committed: object) -> ValueError:
        if name not in self._bufs:
            return ValueError(f"unknown transaction {name!r}; known: {', '.join(self.names)}")
        return ValueError(f"committed must be a bool, not {committed!r}")

    def take(self, step: int, interval: int, t0: float, t1: float, *, steady: bool = True) -> IntervalReport:
        """Everything since the last take() as a report, and start afresh.

        ``steady`` is False for intervals of the ramp-up, which summaries leave out.
        """
        with self._lock:
            for name, pair in self._bufs.items():
                for committed in (0, 1):
                    self._retired.append((name, committed, pair[committed]))
                    pair[committed] = []
            for name, committed, buf in self._old + self._retired:
                self._drain(name, committed, buf)
            self._old, self._retired = self._retired, []
            hists, rollbacks, retries, in_doubt = self._hists, self._rollbacks, self._retries, self._in_doubt
            errors = {n: max(self._errors[n], self._error_calls[n]) for n in self.names}
            reconnects, samples, timings = self._reconnects, self._samples, self._timings
            timings.update((name, values) for name, values in self._waits.items() if values)
            self._start()
        txns = {
            name: TxnReport(commits=hist.count() - rollbacks[name], rollbacks=rollbacks[name],
                            retries=retries[name], errors=errors[name], in_doubt=in_doubt[name],
                            histogram=hist.encode(),
                            clipped=hist.clipped)
            for name, hist in hists.items()
        }
        spans = {}
        for name, values in timings.items():
            hist = LatencyHistogram()
            hist.record_many(_numbers(values))
            spans[name] = hist.encode()
        return IntervalReport(step=step, interval=interval, t_start=t0, t_end=t1, steady=steady,
                              txns=txns, reconnects=reconnects, errors=list(samples),
                              error_counts=samples, timings=spans)


def _numbers(values: list[float]) -> np.ndarray:
    """Latencies as a numeric array; anything that is not a number becomes NaN, which the
    histogram counts as clipped (at one hour): a caller's bug shows, and take() still works."""
    array = np.array(values)
    if array.dtype.kind in "biuf":
        return array
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            pass
    return out


def short_message(message: object) -> str:
    """The first non-empty line of a message, shortened: samples stay small and one line."""
    for line in str(message).splitlines():
        if line.strip():
            return line.strip()[:MAX_MESSAGE]
    return str(message).strip()[:MAX_MESSAGE] or "(no message)"
