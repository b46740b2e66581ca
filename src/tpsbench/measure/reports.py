"""What workers send every interval, and how it adds up: :class:`IntervalReport`.

The coordinator merges the workers' reports of an interval (exact: HdrHistogram counters
add up) and, at the end of a step, sums its steady-state intervals into a
:class:`~tpsbench.measure.summary.SteadySummary`.

Counting choices, stated once here:

* TPS counts committed transactions of every type; an expected rollback (TPC-C's 1%
  New-Order) is neither a commit nor an error.
* tpm of a transaction counts its commits only, so tpmC = committed New-Orders per minute.
* Latency histograms hold every completed attempt chain, committed or rolled back as
  expected (the user waited for both), measured by the engine around ``execute()``
  including its retries; failed transactions are counted as errors, not timed.
* A transaction whose connection was lost before its outcome came back (the server
  restarted, its backend was killed) is *in doubt*: neither a commit nor an error but
  counted apart, because its commit may have happened. The honesty check lets the database's change
  fall anywhere between the commits alone and the commits plus those in doubt.
* Timings are spans that are not transactions (a deferred Delivery's time in its queue):
  histograms of their own, never counted in TPS.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tpsbench.measure.histogram import LatencyHistogram, merged

#: distinct (transaction, message) error samples kept per report
MAX_ERROR_SAMPLES = 20
#: the "transaction" that stands for all of them in histograms and reports
ALL = "*"


@dataclass
class TxnReport:
    """One transaction type in one interval (of one worker, or merged)."""

    commits: int = 0
    rollbacks: int = 0
    retries: int = 0
    errors: int = 0
    #: lost with the connection before the outcome came back: maybe committed (see above)
    in_doubt: int = 0
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
        self.in_doubt += other.in_doubt
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
    #: LatencyHistogram.encode() of each timing (spans that are not transactions)
    timings: dict[str, bytes] = field(default_factory=dict)
    #: what the step observers read over the interval (tpsbench.measure.observers), set by
    #: the coordinator on the merged report; workers send none
    observations: dict[str, dict[str, float]] = field(default_factory=dict)
    #: paced steps (tpsbench.engine.pacing): arrivals scheduled in the interval, and those
    #: due but not started by a user at its end (the queue)
    arrivals: int = 0
    queue: int = 0
    #: what worker hosts read of themselves over the interval (workers on other hosts:
    #: tpsbench.engine.dask.worker), by observer name ``host_cpu@<host>``; merged name by
    #: name and figure by figure, so that workers sharing a host read it once
    hosts: dict[str, dict[str, float]] = field(default_factory=dict)

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
        self.arrivals += other.arrivals
        self.queue += other.queue
        add_counts(self.statements, other.statements)
        merge_readings(self.hosts, other.hosts)
        for name, data in other.timings.items():
            mine = self.timings.get(name)
            self.timings[name] = data if mine is None else merged(
                LatencyHistogram.decode(h) for h in (mine, data)).encode()
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
        """commits, rollbacks, retries, errors or in_doubt summed over transactions."""
        return sum(getattr(t, kind) for t in self.txns.values())

    @property
    def tps(self) -> float:
        return self.total("commits") / self.seconds if self.seconds else 0.0

    def histogram(self, name: str = ALL) -> LatencyHistogram:
        """Latencies of one transaction, or of all (``"*"``)."""
        if name != ALL:
            return self.txns[name].decoded() if name in self.txns else LatencyHistogram()
        return merged(t.decoded() for t in self.txns.values())



def merge_readings(into: dict[str, dict[str, float]], readings: dict[str, dict[str, float]]) -> None:
    """Add observers' ``readings`` into ``into``, figure by figure: one already there is
    the same counter read on the same host, and kept as it is."""
    for name, figures in readings.items():
        mine = into.setdefault(name, {})
        for figure, value in figures.items():
            mine.setdefault(figure, value)


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


def live_line(report: IntervalReport, users: int, elapsed: float, step: str = "", notes: tuple[str, ...] = ()) -> str:
    """One progress line per interval, like sysbench's --report-interval (its qps (r/w/o)
    too), with the step it belongs to ("2/5") and ``notes`` in brackets after it
    ("ramp-up", "1m20s left")."""
    p95 = report.histogram().percentile(95) / 1000.0
    qps = rates(report.statements, report.seconds)
    split = "/".join(f"{qps.get(k, 0.0):.1f}" for k in report.statements)
    queries = f"qps: {qps['total']:.1f} ({'/'.join(k[0] for k in report.statements)}: {split}) " if qps else ""
    where = f"step {step} " if step else ""
    after = f" ({'; '.join(notes)})" if notes else ""
    return (f"[ {elapsed:.0f}s ] {where}users: {users} tps: {report.tps:.1f} {queries}p95: {p95:.1f} ms "
            f"errors: {report.total('errors')} retries: {report.total('retries')} "
            f"reconnects: {report.reconnects}{after}")


def clock(seconds: float) -> str:
    """A duration as people read it: 45s, 3m20s, 1h05m."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
