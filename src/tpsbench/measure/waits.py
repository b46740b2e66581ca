"""Keying and think times as users realised them, and how late they woke: what a step of
many sleeping users (TPC-C's rules: some 21 s a transaction) must show to be trusted.

Why: a user asked to think 12 s that wakes 40 ms late runs a lighter load than asked, and
a driver holding thousands of sleeping users can fall behind without any error. The
engine records each keying or think time twice (IntervalRecorder.record_wait): its
length as drawn, when it is drawn, under ``wait:keying:NAME`` or ``wait:think:NAME``, and
once it ends how late the user woke against that draw, under ``wait:lag``. A realised
wait is its draw plus its lag, so its mean is the drawn mean plus the lag's.

Why the draws and not the waits timed at their ends: a step's window keeps only the waits
that end inside it, and a finite window after a ramp-up keeps short ones more often than
long ones (a think time of up to 120 s cannot end in a 30 s window unless it began before
it): simulated with TPC-C's times, 2,000 users, 60 s of ramp-up and 30 s measured, the
think times that end in the window average 10.1 s for a 12 s mean and fail a KS test.
Draws taken when they are drawn are a sample of the distribution whatever the window.

They are HdrHistograms like every timing, so they merge across workers and intervals
exactly, and are kept whole with the step's summary (SteadySummary.waits).
:func:`ks_negexp` tests the think times against the truncated negative exponential they
are asked to follow; :func:`wait_stats` reads a step's back.
"""


from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from tpsbench.measure.histogram import LatencyHistogram

PREFIX = "wait:"
#: the wake-up lag of every wait, all transaction types together
LAG = PREFIX + "lag"


def keying_name(txn: str) -> str:
    """The timing name of ``txn``'s realised keying times."""
    return f"{PREFIX}keying:{txn}"


def think_name(txn: str) -> str:
    """The timing name of ``txn``'s realised think times."""
    return f"{PREFIX}think:{txn}"


def names(txns: Iterable[str]) -> list[str]:
    """Every wait timing a recorder of these transactions can hold."""
    txns = tuple(txns)
    return [LAG, *map(keying_name, txns), *map(think_name, txns)]


def is_wait(name: str) -> bool:
    """Whether a timing is one of these (reports show them apart, not as latency rows)."""
    return name.startswith(PREFIX)


def values_of(hist: LatencyHistogram) -> np.ndarray:
    """A histogram's values in microseconds, each counter's at the middle of its range,
    repeated by its count: to within the histogram's 3 significant digits the sample."""
    middles, counts = hist.nonzero()
    return np.repeat(middles, counts)


def ks_negexp(parts: Iterable[tuple[LatencyHistogram, float]], cap: float = 10.0) -> float:
    """Kolmogorov-Smirnov p-value of waits (histograms in microseconds) against negative
    exponentials truncated at ``cap`` times their means: ``parts`` pairs each histogram
    with the mean in seconds its waits were asked to have (TPC-C: one per transaction
    type), and the whole sample is tested against their mixture, weighted by count.
    Truncated means capped: the draw is min(X, cap*mean), so the cap holds the tail's
    mass; below it the CDF is the exponential's. NaN when there is no wait at all."""
    from scipy import stats  # imported here: a report or a worker need not load scipy

    samples = [(values_of(hist) / 1e6, mean) for hist, mean in parts]
    sample = np.concatenate([values for values, _ in samples]) if samples else np.empty(0)
    if sample.size == 0:
        return math.nan
    weights = [(values.size / sample.size, mean) for values, mean in samples if values.size]

    def cdf(x: float) -> float:  # called with the whole sorted sample at once
        v = np.clip(np.asarray(x, dtype=float), 0.0, None)
        total = np.zeros_like(v)
        for w, mean in weights:
            total += w * np.where(v >= cap * mean, 1.0, 1.0 - np.exp(-v / mean))
        return total  # type: ignore[no-any-return]  # an array: kstest's stubs say scalar, it passes the sample

    return float(stats.kstest(sample, cdf).pvalue)


@dataclass(frozen=True)
class WaitStats:
    """What a step's waits were: wake-up lag percentiles and mean (ms) over the waits that
    ended, and per transaction type the realised mean keying and think time (s: the
    drawn mean plus the lag's)."""

    lag_p50_ms: float
    lag_p99_ms: float
    lag_max_ms: float
    lag_mean_ms: float
    waits: int
    keying_mean_s: dict[str, float]
    think_mean_s: dict[str, float]


def decoded(waits: Mapping[str, str]) -> dict[str, LatencyHistogram]:
    """A step's wait histograms (SteadySummary.waits) decoded."""
    return {name: LatencyHistogram.decode(text) for name, text in waits.items()}


def wait_stats(timings: Mapping[str, LatencyHistogram]) -> WaitStats | None:
    """A step's :class:`WaitStats` from its wait histograms (:func:`decoded`); None when
    no user waited."""
    lag = timings.get(LAG)
    if lag is None or lag.count() == 0:
        return None
    p50, p99 = lag.percentiles((50.0, 99.0))
    late = lag.mean() / 1e6

    def means(prefix: str) -> dict[str, float]:
        return {name[len(prefix):]: hist.mean() / 1e6 + late for name, hist in timings.items()
                if name.startswith(prefix) and hist.count()}

    return WaitStats(p50 / 1000, p99 / 1000, lag.max() / 1000, late * 1000, lag.count(),
                     means(keying_name("")), means(think_name("")))


def describe(stats: WaitStats | None) -> list[str]:
    """The report's lines on waits: nothing when users did not wait."""
    if stats is None:
        return []
    lines = [f"Wake-up lag p50/p99/max: {stats.lag_p50_ms:.2f} / {stats.lag_p99_ms:.2f} / {stats.lag_max_ms:.2f} ms"
             f" over {stats.waits:,} waits"]
    for label, means in (("keying", stats.keying_mean_s), ("think", stats.think_mean_s)):
        if means:
            lines.append(f"Realised {label} mean (s): " + ", ".join(f"{n} {v:.2f}" for n, v in means.items()))
    return lines
