"""Whether a series of interval figures reached steady state, by the SNIA criterion.

Why this criterion: storage reviews that follow the SNIA Solid State Storage Performance
Test Specification (PTS) call a device steady when, over a measurement window of the
last five rounds, the data excursion (largest minus smallest value) is within 20% of the
window's average and the slope excursion (how far the least-squares line fitted across
the window rises or falls from the window's first round to its last) is within 10% of
that average. Applied to a step's steady intervals (TPS, p95 latency) it says, in the
reviews' own terms, whether the figures the table shows came from a settled system: a
step still warming its cache passes a coefficient-of-variation check yet fails the slope.

A pure function of the values: the report (tpsbench.report.steadiness) reads the series
from the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: rounds (here: intervals) in the measurement window, the last ones of the series
WINDOW = 5
#: the most the data excursion (max - min) may be, as a share of the window's average
RANGE_MOST = 0.20
#: the most the slope excursion (the fitted line's rise across the window) may be, as a share of the average
SLOPE_MOST = 0.10


@dataclass(frozen=True)
class Excursion:
    """One series over the measurement window: its excursions as shares of its average."""

    #: (max - min) / average over the window
    range_share: float
    #: |slope| x (window - 1) / average: the least-squares line's rise from the first round to the last
    slope_share: float

    @property
    def steady(self) -> bool:
        """Within both limits (a limit reached exactly still passes: "within 20%")."""
        return self.range_share <= RANGE_MOST and self.slope_share <= SLOPE_MOST


def _share(excursion: float, average: float) -> float:
    """An excursion as a share of the average; a flat series of zeros (no transaction) is 0,
    any other excursion around an average of 0 unbounded."""
    if average:
        return abs(excursion / average)
    return 0.0 if excursion == 0 else float("inf")


def excursion(values: Sequence[float], window: int = WINDOW) -> Excursion | None:
    """The SNIA excursions of the last ``window`` values; None when there are fewer."""
    if window < 2:
        raise ValueError(f"the measurement window needs two rounds or more, not {window}")
    if len(values) < window:
        return None
    ys = [float(v) for v in values[-window:]]
    average = sum(ys) / window
    x_mean = (window - 1) / 2
    sxx = sum((x - x_mean) ** 2 for x in range(window))
    slope = sum((x - x_mean) * (y - average) for x, y in enumerate(ys)) / sxx
    return Excursion(range_share=_share(max(ys) - min(ys), average),
                     slope_share=_share(slope * (window - 1), average))
