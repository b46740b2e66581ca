"""Figures over repeats: a mean with its Student t interval, the ratio of two sets of
repeats by Welch's t, and a percentile with the spread of the repeats' own.

Why repeats beside batch means: batch means say how far one step's mean could move within
that step, but not what changes from one run of the step to the next (the cache, the
file layout, a neighbour), which on a shared host is the larger part. Runs of a step
repeated N times give N independent means, so their spread is the spread a reader would
see on running the benchmark again: the mean's interval is Student's t with N - 1 degrees
of freedom; the ratio of two configurations' means is the delta method on its logarithm,
Var(log B/A) ~ s_A^2 / (n_A mean_A^2) + s_B^2 / (n_B mean_B^2), with the Welch-Satterthwaite
degrees of freedom, as tpsbench.measure.batch_means does with each repeat a batch.

A percentile is not averaged: the repeats' latency histograms are merged (HdrHistograms
add exactly) and the merged histogram's percentile is the figure; its interval is the
lowest and highest of the repeats' own percentiles, the spread a single run would show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tpsbench.measure.batch_means import LEVEL, LogSpread, interval, relative_variance, satterthwaite, t_quantile

#: the fewest repeats a mean needs for an interval (one repeat has no spread)
LEAST_REPEATS = 2


@dataclass(frozen=True)
class MeanInterval:
    """A mean over repeats and its confidence interval (low = high = mean for one repeat)."""

    mean: float
    #: half the interval's width (None: a single repeat, no spread known)
    half: float | None
    repeats: int

    @property
    def low(self) -> float | None:
        return None if self.half is None else self.mean - self.half

    @property
    def high(self) -> float | None:
        return None if self.half is None else self.mean + self.half


@dataclass(frozen=True)
class Spread:
    """A figure from the repeats merged, with the lowest and highest repeat's own figure."""

    value: float
    low: float
    high: float
    repeats: int


def mean_interval(values: Sequence[float], level: float = LEVEL) -> MeanInterval:
    """The mean of ``values`` (one per repeat) with its ``level`` Student t interval;
    ValueError without any value."""
    n = len(values)
    if n == 0:
        raise ValueError("a mean over repeats needs one repeat at least")
    mean = math.fsum(values) / n
    if n < LEAST_REPEATS:
        return MeanInterval(mean=mean, half=None, repeats=n)
    s2 = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return MeanInterval(mean=mean, half=t_quantile(n - 1, level) * math.sqrt(s2 / n), repeats=n)


def spread(merged_value: float, values: Sequence[float]) -> Spread:
    """A figure of the merged repeats (a percentile of their merged histogram) with the
    range of the repeats' own; ValueError without any repeat."""
    if not values:
        raise ValueError("a spread over repeats needs one repeat at least")
    return Spread(value=merged_value, low=min(values), high=max(values), repeats=len(values))


def repeats_log_spread(base: Sequence[float], other: Sequence[float]) -> LogSpread | None:
    """The uncertainty of log(mean(other) / mean(base)), each value one repeat's figure
    (Welch: unequal variances and counts); None where either side has fewer than
    :data:`LEAST_REPEATS` repeats or a mean that is not positive."""
    a, b = relative_variance(base), relative_variance(other)
    if a is None or b is None:
        return None
    return satterthwaite([(a[0], a[1]), (b[0], b[1])])


def repeats_ratio_interval(base: Sequence[float], other: Sequence[float],
                           level: float = LEVEL) -> tuple[float, float, float] | None:
    """(ratio of the means, low, high) of two sets of repeats; None as
    :func:`repeats_log_spread`."""
    found = repeats_log_spread(base, other)
    if found is None:
        return None
    ratio = (math.fsum(other) / len(other)) / (math.fsum(base) / len(base))
    return (ratio, *interval(ratio, found, level))
