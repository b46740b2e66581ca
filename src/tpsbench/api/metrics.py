"""Interval metrics: what virtual users record, what workers send, what a step sums up to.

A worker process's users share one :class:`IntervalRecorder`. :meth:`IntervalRecorder.record`
runs once per transaction on the hot path, so it only appends the latency to a
per-transaction list (no lock: see the class); the lists go into the histogram with numpy,
up to 4096 values at a time. Every interval the engine calls :meth:`IntervalRecorder.take`,
which returns an :class:`IntervalReport` (picklable, histograms encoded) for the coordinator,
which merges the workers' reports of an interval (exact: HdrHistogram counters add up) and,
at the end of a step, turns its steady-state intervals into a :class:`StepSummary`.

Counting choices, stated once here:

* TPS counts committed transactions of every type; an expected rollback (TPC-C's 1%
  New-Order) is neither a commit nor an error.
* tpm of a transaction counts its commits only, so tpmC = committed New-Orders per minute.
* Latency histograms hold every completed attempt chain, committed or rolled back as
  expected (the user waited for both), measured by the engine around ``execute()``
  including its retries; failed transactions are counted as errors, not timed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from tpsbench.api.histogram import LatencyHistogram, merged

#: latencies buffered per transaction before they go into the histogram
BATCH = 4096
#: distinct (transaction, message) error samples kept per report
MAX_ERROR_SAMPLES = 20
#: longest error message kept
MAX_MESSAGE = 500
KINDS = ("retries", "errors", "reconnects")
#: percentiles of every summary, with the names used in tables and the results store
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
ALL = "*"


class IntervalRecorder:
    """Counters and latencies of one worker process's users, thread-safe, reset by take().

    Why no lock on the hot path: record() costs about 0.3 us of CPU as it is (numpy drain
    included; a bare method call is 0.05 us), and taking a lock around the append measured
    0.3 us more; a list append is atomic under the GIL without it. At the ~55 us of client
    CPU a transaction costs (bench/results), record() stays near 0.5% of a worker. Each
    transaction type has two lists (rolled back, committed). A list that fills up to
    BATCH, and every list at take(), is swapped for a new one under the lock and drained
    into the histogram with numpy. A user that fetched a list just before the swap may
    still append to it: swapped lists are drained again at the next take() (a straggler
    lands in the next interval) and dropped only after that, so no latency is lost.
    """

    def __init__(self, names: Sequence[str]) -> None:
        if not names:
            raise ValueError("IntervalRecorder needs the workload's transaction names")
        self.names = tuple(names)
        #: per transaction [rolled-back latencies, committed latencies]; indexed by the bool
        self._bufs: dict[str, list[list[float]]] = {name: [[], []] for name in self.names}
        self._lock = threading.Lock()
        self._retired: list[tuple[str, int, list[float]]] = []  # swapped since the last take()
        self._old: list[tuple[str, int, list[float]]] = []  # swapped before it: drained once more
        self._start()

    def _start(self) -> None:
        names = self.names
        self._hists = {name: LatencyHistogram() for name in names}
        self._rollbacks = dict.fromkeys(names, 0)
        self._retries = dict.fromkeys(names, 0)
        self._errors = dict.fromkeys(names, 0)
        self._error_calls = dict.fromkeys(names, 0)
        self._reconnects = 0
        self._samples: dict[tuple[str, str], int] = {}

    def record(self, name: str, latency_us: float, committed: bool) -> None:
        """One completed transaction: its latency in microseconds, committed or rolled back."""
        try:
            buf = self._bufs[name][committed]
        except (KeyError, TypeError, IndexError):
            raise self._bad(name, committed) from None
        buf.append(latency_us)
        if len(buf) >= BATCH:
            self._flush(name, committed, buf)

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
        """Count ``n`` retries, errors or reconnects of transaction ``name``."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if name not in self._bufs:
            raise self._bad(name, True)
        with self._lock:
            if kind == "reconnects":
                self._reconnects += n
            elif kind == "retries":
                self._retries[name] += n
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
            hists, rollbacks, retries = self._hists, self._rollbacks, self._retries
            errors = {n: max(self._errors[n], self._error_calls[n]) for n in self.names}
            reconnects, samples = self._reconnects, self._samples
            self._start()
        txns = {
            name: TxnReport(commits=hist.count() - rollbacks[name], rollbacks=rollbacks[name],
                            retries=retries[name], errors=errors[name], histogram=hist.encode(),
                            clipped=hist.clipped)
            for name, hist in hists.items()
        }
        return IntervalReport(step=step, interval=interval, t_start=t0, t_end=t1, steady=steady,
                              txns=txns, reconnects=reconnects, errors=list(samples),
                              error_counts=samples)


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


@dataclass
class TxnReport:
    """One transaction type in one interval (of one worker, or merged)."""

    commits: int = 0
    rollbacks: int = 0
    retries: int = 0
    errors: int = 0
    #: LatencyHistogram.encode() of the committed and rolled-back latencies
    histogram: bytes = b""
    #: latencies that were out of the histogram's range and clamped into it
    clipped: int = 0

    def decoded(self) -> LatencyHistogram:
        hist = LatencyHistogram.decode(self.histogram) if self.histogram else LatencyHistogram()
        hist.clipped = self.clipped
        return hist

    def merge(self, other: TxnReport) -> None:
        mine = self.commits + self.rollbacks or self.clipped
        theirs = other.commits + other.rollbacks or other.clipped
        self.commits += other.commits
        self.rollbacks += other.rollbacks
        self.retries += other.retries
        self.errors += other.errors
        if theirs and not mine:  # skip decoding when one side is empty
            self.histogram, self.clipped = other.histogram, other.clipped
        elif theirs:
            hist = self.decoded()
            hist.merge(other.decoded())
            self.histogram, self.clipped = hist.encode(), hist.clipped


@dataclass
class IntervalReport:
    """What a worker sends to the coordinator every interval; merge() adds two up exactly."""

    step: int
    interval: int
    t_start: float
    t_end: float
    steady: bool
    txns: dict[str, TxnReport] = field(default_factory=dict)
    reconnects: int = 0
    #: distinct (transaction, first line of message) samples, at most MAX_ERROR_SAMPLES
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: how often each sample in ``errors`` occurred
    error_counts: dict[tuple[str, str], int] = field(default_factory=dict)
    #: statements by kind (sysbench's read/write/other), for sessions that count them
    statements: dict[str, int] = field(default_factory=dict)

    def merge(self, other: IntervalReport) -> None:
        """Add ``other`` (another worker's report of the same interval) into this one."""
        if other.step != self.step:
            raise ValueError(f"cannot merge step {other.step} into step {self.step}")
        self.t_start = min(self.t_start, other.t_start)
        self.t_end = max(self.t_end, other.t_end)
        self.steady = self.steady and other.steady
        for name, txn in other.txns.items():
            if name in self.txns:
                self.txns[name].merge(txn)
            else:
                self.txns[name] = TxnReport(**asdict(txn))
        self.reconnects += other.reconnects
        add_counts(self.statements, other.statements)
        for key in other.errors:
            if key in self.error_counts:
                self.error_counts[key] += other.error_counts.get(key, 1)
            elif len(self.errors) < MAX_ERROR_SAMPLES:
                self.errors.append(key)
                self.error_counts[key] = other.error_counts.get(key, 1)

    @property
    def seconds(self) -> float:
        return max(self.t_end - self.t_start, 0.0)

    def total(self, kind: str) -> int:
        """commits, rollbacks, retries or errors summed over transactions."""
        return sum(getattr(t, kind) for t in self.txns.values())

    @property
    def tps(self) -> float:
        return self.total("commits") / self.seconds if self.seconds else 0.0

    def histogram(self, name: str = ALL) -> LatencyHistogram:
        """Latencies of one transaction, or of all (``"*"``)."""
        if name != ALL:
            return self.txns[name].decoded() if name in self.txns else LatencyHistogram()
        return merged(t.decoded() for t in self.txns.values())


@dataclass
class LatencyStats:
    """Latency figures of one histogram, in milliseconds."""

    count: int = 0
    mean: float = 0.0
    p50: float = 0.0
    p90: float = 0.0
    p95: float = 0.0
    p99: float = 0.0
    p999: float = 0.0
    max: float = 0.0

    @classmethod
    def of(cls, hist: LatencyHistogram) -> LatencyStats:
        values = hist.percentiles(PERCENTILES.values())
        ms = {key: v / 1000.0 for key, v in zip(PERCENTILES, values)}
        return cls(count=hist.count(), mean=hist.mean() / 1000.0, max=hist.max() / 1000.0, **ms)


@dataclass
class TxnSummary:
    """One transaction type over the steady state of a step."""

    name: str
    commits: int = 0
    rollbacks: int = 0
    retries: int = 0
    errors: int = 0
    clipped: int = 0
    #: commits per minute
    tpm: float = 0.0
    #: share of all completed (committed or rolled back) transactions, 0..1
    mix: float = 0.0
    latency: LatencyStats = field(default_factory=LatencyStats)


@dataclass
class StepSummary:
    """The steady-state intervals of one step, merged: the figures a report shows."""

    step: int
    users: int
    #: measured seconds (the sum of the steady intervals' lengths)
    seconds: float = 0.0
    intervals: int = 0
    #: committed transactions of every type per second
    tps: float = 0.0
    reconnects: int = 0
    latency: LatencyStats = field(default_factory=LatencyStats)
    txns: dict[str, TxnSummary] = field(default_factory=dict)
    #: statements by kind over the steady state (empty when the sessions do not count them)
    statements: dict[str, int] = field(default_factory=dict)
    #: merged histograms, per transaction and "*"; not compared, not stored with the figures
    histograms: dict[str, LatencyHistogram] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_reports(cls, reports: Iterable[IntervalReport], users: int, step: int | None = None) -> StepSummary:
        """Sum up the steady reports of a step: workers' reports or merged ones, any order.

        Each histogram is decoded once and added up; an interval's length is taken from the
        earliest start to the latest end of its reports, so per-worker reports count once.
        """
        spans: dict[int, list[float]] = {}
        txns: dict[str, TxnSummary] = {}
        hists: dict[str, LatencyHistogram] = {}
        statements: dict[str, int] = {}
        reconnects = 0
        for report in reports:
            if step is None:
                step = report.step
            if report.step != step:
                raise ValueError(f"reports of step {report.step} given for step {step}")
            if not report.steady:
                continue
            span = spans.setdefault(report.interval, [report.t_start, report.t_end])
            span[0], span[1] = min(span[0], report.t_start), max(span[1], report.t_end)
            reconnects += report.reconnects
            add_counts(statements, report.statements)
            for name, tr in report.txns.items():
                t = txns.setdefault(name, TxnSummary(name=name))
                for kind in ("commits", "rollbacks", "retries", "errors"):
                    setattr(t, kind, getattr(t, kind) + getattr(tr, kind))
                hists.setdefault(name, LatencyHistogram()).merge(tr.decoded())
        seconds = sum(max(end - start, 0.0) for start, end in spans.values())
        completed = sum(t.commits + t.rollbacks for t in txns.values())
        for name, t in txns.items():
            t.clipped = hists[name].clipped
            t.latency = LatencyStats.of(hists[name])
            t.tpm = t.commits * 60.0 / seconds if seconds else 0.0
            t.mix = (t.commits + t.rollbacks) / completed if completed else 0.0
        hists[ALL] = merged(hists.values())
        commits = sum(t.commits for t in txns.values())
        return cls(step=step if step is not None else 0, users=users, seconds=seconds,
                   intervals=len(spans), tps=commits / seconds if seconds else 0.0,
                   reconnects=reconnects, latency=LatencyStats.of(hists[ALL]), txns=txns,
                   statements=statements, histograms=hists)

    def total(self, kind: str) -> int:
        """commits, rollbacks, retries, errors or clipped summed over transactions."""
        return sum(getattr(t, kind) for t in self.txns.values())

    @property
    def commits(self) -> int:
        return self.total("commits")

    @property
    def qps(self) -> dict[str, float]:
        """Statements per second by kind, and their sum as ``"total"`` (empty: not counted)."""
        return rates(self.statements, self.seconds)

    @property
    def tpm_by_txn(self) -> dict[str, float]:
        return {n: t.tpm for n, t in self.txns.items()}

    @property
    def mix(self) -> dict[str, float]:
        return {n: t.mix for n, t in self.txns.items()}

    def to_dict(self) -> dict:
        """Plain JSON-able figures (no histograms), for the results store."""
        data = asdict(replace(self, histograms={}))  # asdict would deep-copy the histograms
        data.pop("histograms")
        return data

    @classmethod
    def from_dict(cls, data: dict) -> StepSummary:
        txns = {n: TxnSummary(**{**t, "latency": LatencyStats(**t["latency"])})
                for n, t in data.get("txns", {}).items()}
        return cls(**{**data, "latency": LatencyStats(**data["latency"]), "txns": txns})


def add_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    """Add per-kind statement counts into ``into``."""
    for kind, n in counts.items():
        into[kind] = into.get(kind, 0) + n


def rates(statements: dict[str, int], seconds: float) -> dict[str, float]:
    """Per-kind counts as per-second rates, plus ``"total"``; empty when nothing was counted."""
    if not statements or not seconds:
        return {}
    out = {kind: n / seconds for kind, n in statements.items()}
    out["total"] = sum(statements.values()) / seconds
    return out


def live_line(report: IntervalReport, users: int, elapsed: float) -> str:
    """One progress line per interval, like sysbench's --report-interval (its qps (r/w/o) too)."""
    p95 = report.histogram().percentile(95) / 1000.0
    qps = rates(report.statements, report.seconds)
    split = "/".join(f"{qps.get(k, 0.0):.1f}" for k in report.statements)
    queries = f"qps: {qps['total']:.1f} ({'/'.join(k[0] for k in report.statements)}: {split}) " if qps else ""
    return (f"[ {elapsed:.0f}s ] users: {users} tps: {report.tps:.1f} {queries}p95: {p95:.1f} ms "
            f"errors: {report.total('errors')} retries: {report.total('retries')} "
            f"reconnects: {report.reconnects}")
