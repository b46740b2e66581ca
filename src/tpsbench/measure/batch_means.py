"""Confidence intervals for the ratio of two runs' mean throughput, by batch means.

Why batch means: a step's interval figures are not independent (a checkpoint, a cache
still filling, a neighbour's load carry from one interval into the next), so the spread
of the intervals themselves understates how far the step's mean could move. Grouping
the series into a few batches of consecutive intervals and taking each batch's mean
absorbs that correlation: batch means of long enough batches are nearly independent, and
their spread gives the mean's standard error honestly (Schmeiser 1982). Each series is
cut into :data:`BATCHES` batches of equal length (fewer when it has fewer values, one
value a batch), the earliest values that do not fill a batch left out (they are the
nearest the ramp-up).

The interval on the ratio of means is the delta method on its logarithm, Welch-type:
Var(log B/A) ~ s_A^2 / (k_A mean_A^2) + s_B^2 / (k_B mean_B^2) with s^2 the batch means'
sample variance over k batches, and Student's t with the Welch-Satterthwaite degrees of
freedom; the interval is ratio x exp(-/+ t x standard error). On the log scale the
interval never crosses 0 and treats a doubling and a halving alike, as the comparison's
geometric means do; several loads' log ratios combine (their mean, the overall
geometric mean) by adding their variances, with the degrees of freedom of the sum.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: batches a series is cut into (fewer where it has fewer values)
BATCHES = 5
#: the fewest values a series needs for an interval: with two batches the Welch degrees
#: of freedom can fall to 1, where t is 12.7 and the interval says nothing
LEAST = 3
#: the confidence level of the intervals
LEVEL = 0.95


@dataclass(frozen=True)
class LogSpread:
    """How uncertain a log ratio (or a mean of log ratios) is."""

    #: variance of the estimated log ratio
    variance: float
    #: Welch-Satterthwaite degrees of freedom (inf where every variance is 0)
    df: float


def batch_means(values: Sequence[float], batches: int = BATCHES) -> list[float]:
    """The means of ``batches`` consecutive equal batches of ``values`` (fewer batches
    where there are fewer values; the leading remainder left out)."""
    k = min(batches, len(values))
    if k == 0:
        return []
    size = len(values) // k
    used = values[len(values) - k * size:]
    return [sum(used[i * size:(i + 1) * size]) / size for i in range(k)]


def _relative_variance(values: Sequence[float], batches: int) -> tuple[float, int, float] | None:
    """(variance of the mean / mean^2, degrees of freedom, mean) from batch means; None
    with too few values or a mean that is not positive (no log ratio)."""
    if len(values) < LEAST:
        return None
    return relative_variance(batch_means(values, batches))


def relative_variance(means: Sequence[float]) -> tuple[float, int, float] | None:
    """(variance of their mean / mean^2, degrees of freedom, mean) of independent means
    (batch means, or repeats' figures); None with fewer than two or a mean that is not
    positive (no log ratio)."""
    k = len(means)
    if k < 2:
        return None
    mean = sum(means) / k
    if mean <= 0:
        return None
    s2 = sum((m - mean) ** 2 for m in means) / (k - 1)
    return s2 / k / mean ** 2, k - 1, mean


def satterthwaite(parts: Sequence[tuple[float, float]]) -> LogSpread:
    """The sum of independent variance estimates (variance, degrees of freedom) with its
    Welch-Satterthwaite degrees of freedom."""
    total = sum(v for v, _ in parts)
    denominator = sum(v * v / df for v, df in parts if v > 0)
    return LogSpread(variance=total, df=total * total / denominator if denominator > 0 else math.inf)


def log_ratio_spread(base: Sequence[float], other: Sequence[float], batches: int = BATCHES) -> LogSpread | None:
    """The uncertainty of log(mean(other) / mean(base)) from the two series' batch means;
    None where either has fewer than :data:`LEAST` values or a mean that is not positive."""
    a, b = _relative_variance(base, batches), _relative_variance(other, batches)
    if a is None or b is None:
        return None
    return satterthwaite([(a[0], a[1]), (b[0], b[1])])


def mean_of_logs(spreads: Iterable[LogSpread]) -> LogSpread | None:
    """The uncertainty of the mean of independent log ratios (the log of their geometric
    mean); None without any."""
    found = list(spreads)
    if not found:
        return None
    n = len(found)
    return satterthwaite([(s.variance / n / n, s.df) for s in found])


def t_quantile(df: float, level: float = LEVEL) -> float:
    """Student's t quantile of a two-sided ``level`` interval (the normal's for df inf)."""
    from scipy.stats import t  # imported here: scipy.stats takes seconds to import

    return float(t.ppf((1 + level) / 2, df))


def interval(ratio: float, spread: LogSpread, level: float = LEVEL) -> tuple[float, float]:
    """The ``level`` confidence interval of a ratio whose log has ``spread``."""
    half = t_quantile(spread.df, level) * math.sqrt(spread.variance)
    return ratio * math.exp(-half), ratio * math.exp(half)


def ratio_interval(base: Sequence[float], other: Sequence[float], level: float = LEVEL,
                   batches: int = BATCHES) -> tuple[float, float, float] | None:
    """(ratio of the means, low, high): mean(other) / mean(base) with its ``level``
    confidence interval; None as :func:`log_ratio_spread`."""
    spread = log_ratio_spread(base, other, batches)
    if spread is None:
        return None
    ratio = (sum(other) / len(other)) / (sum(base) / len(base))
    return (ratio, *interval(ratio, spread, level))
