"""What a step sums up to: the steady-state intervals merged into a :class:`SteadySummary`.

The figures a report shows (TPS, latency percentiles, tpm per transaction, the mix,
QPS by statement kind) are computed here once, from the merged reports of the steady
window alone: ramp-up intervals and the in-flight tail are left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tpsbench.measure.histogram import LatencyHistogram, merged
from tpsbench.measure.reports import ALL, IntervalReport, add_counts, rates
from tpsbench.measure.waits import is_wait

#: percentiles of every summary, with the names used in tables and the results store
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


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
    #: lost with the connection before the outcome came back (tpsbench.measure.reports)
    in_doubt: int = 0
    clipped: int = 0
    #: commits per minute
    tpm: float = 0.0
    #: share of all completed (committed or rolled back) transactions, 0..1
    mix: float = 0.0
    latency: LatencyStats = field(default_factory=LatencyStats)


@dataclass
class SteadySummary:
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
    #: latency figures of each timing (spans that are not transactions, tpsbench.measure.reports)
    timings: dict[str, LatencyStats] = field(default_factory=dict)
    #: realised keying and think times and wake-up lag (tpsbench.measure.waits): timing
    #: name -> the merged HdrHistogram's text encoding, kept whole so that it can be tested
    #: against the asked distribution after the run
    waits: dict[str, str] = field(default_factory=dict)
    #: merged histograms, per transaction and "*"; not compared, not stored with the figures
    histograms: dict[str, LatencyHistogram] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_reports(cls, reports: Iterable[IntervalReport], users: int, step: int | None = None) -> SteadySummary:
        """Sum up the steady reports of a step: workers' reports or merged ones, any order.

        Each histogram is decoded once and added up; an interval's length is taken from the
        earliest start to the latest end of its reports, so per-worker reports count once.
        """
        spans: dict[int, list[float]] = {}
        txns: dict[str, TxnSummary] = {}
        hists: dict[str, LatencyHistogram] = {}
        statements: dict[str, int] = {}
        timings: dict[str, LatencyHistogram] = {}
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
            for name, data in report.timings.items():
                timings.setdefault(name, LatencyHistogram()).merge(LatencyHistogram.decode(data))
            for name, tr in report.txns.items():
                t = txns.setdefault(name, TxnSummary(name=name))
                for kind in ("commits", "rollbacks", "retries", "errors", "in_doubt"):
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
                   statements=statements, histograms=hists,
                   timings={name: LatencyStats.of(hist) for name, hist in timings.items() if not is_wait(name)},
                   waits={name: hist.encode().decode() for name, hist in timings.items() if is_wait(name)})

    def total(self, kind: str) -> int:
        """commits, rollbacks, retries, errors, in_doubt or clipped summed over transactions."""
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

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able figures (no histograms), for the results store."""
        data = asdict(replace(self, histograms={}))  # asdict would deep-copy the histograms
        data.pop("histograms")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SteadySummary:
        txns = {n: TxnSummary(**{**t, "latency": LatencyStats(**t["latency"])})
                for n, t in data.get("txns", {}).items()}
        timings = {n: LatencyStats(**s) for n, s in data.get("timings", {}).items()}
        return cls(**{**data, "latency": LatencyStats(**data["latency"]), "txns": txns, "timings": timings})
