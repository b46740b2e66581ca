"""How sure a comparison's TPS ratio is: its 95% confidence interval, and how it is said.

Why: two runs of one configuration differ by a few percent (a checkpoint, a neighbour,
the cache), so a "+3% TPS" between two configurations may be nothing at all. Each TPS
ratio of ``compare`` carries the interval of tpsbench.measure.batch_means, computed from
the steady intervals of the two steps compared (batch means absorb the intervals'
autocorrelation; delta method on the log ratio, Welch-Satterthwaite degrees of freedom),
centred on the ratio the table shows; the overall geometric mean's interval adds the
loads' log variances. Where both runs repeated a load (``run --repeat``, two repeats or
more each), the interval is Welch's t on the repeats' TPS instead (tpsbench.measure.repeats:
the run-to-run spread, which the intervals within one step cannot show). A difference
whose interval holds 1.0 is said to be within the noise; where a step has too few steady
intervals, the sentence says so instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tpsbench.measure.batch_means import (
    LEAST,
    LEVEL,
    LogSpread,
    interval,
    log_ratio_spread,
    mean_of_logs,
)
from tpsbench.measure.repeats import repeats_log_spread


@dataclass(frozen=True)
class Noise:
    """A ratio's confidence interval, or why it has none."""

    low: float | None = None
    high: float | None = None
    spread: LogSpread | None = None
    #: the steady intervals behind it: (the compared configuration's, the baseline's); None overall
    counts: tuple[int, int] | None = None
    #: from repeats (Welch's t): how many, (the compared configuration's, the baseline's); None: batch means
    repeats: tuple[int, int] | None = None

    @property
    def within(self) -> bool:
        """The interval holds 1.0: no difference the runs can tell from their noise."""
        return self.low is not None and self.high is not None and self.low <= 1.0 <= self.high


def tps_noise(ratio: float | None, base: Sequence[float] | None, other: Sequence[float] | None) -> Noise | None:
    """The interval of ``ratio`` (the other step's TPS / the baseline step's) from the two
    steps' steady interval TPS; None where there is no ratio, either mean is 0, or a run
    has no interval stored (built from published figures: no noise is known)."""
    if not ratio or base is None or other is None:
        return None
    counts = (len(other), len(base))
    if min(counts) < LEAST:
        return Noise(counts=counts)
    spread = log_ratio_spread(base, other)
    if spread is None:
        return None
    low, high = interval(ratio, spread)
    return Noise(low=low, high=high, spread=spread, counts=counts)


def repeats_noise(ratio: float | None, base: Sequence[float] | None, other: Sequence[float] | None) -> Noise | None:
    """The interval of ``ratio`` from the two runs' repeats' TPS at a load (Welch's t on the
    log ratio, tpsbench.measure.repeats); None where either run has fewer than two repeats
    there (batch means then), or a mean that is not positive."""
    if not ratio or base is None or other is None:
        return None
    spread = repeats_log_spread(base, other)
    if spread is None:
        return None
    low, high = interval(ratio, spread)
    return Noise(low=low, high=high, spread=spread, repeats=(len(other), len(base)))


def overall_noise(ratio: float | None, loads: Sequence[Noise | None]) -> Noise | None:
    """The interval of the geometric mean ``ratio`` of the loads' ratios whose noise is
    ``loads`` (one per ratio averaged); without one where a load has none, None where no
    load has any (runs built from published figures)."""
    if not ratio or all(n is None for n in loads):
        return None
    spreads = [n.spread for n in loads if n is not None and n.spread is not None]
    spread = mean_of_logs(spreads)
    if spread is None or len(spreads) < len(loads):
        return Noise()
    low, high = interval(ratio, spread)
    return Noise(low=low, high=high, spread=spread)


def percents(low: float, high: float) -> tuple[str, str]:
    """Two ratios as a review says them ("+55%", "+69%"), with the decimals that keep them
    apart (an interval of +61.6% to +62.4% is not "+62% to +62%")."""
    for digits in (0, 1, 2):
        said = tuple(f"{(r - 1) * 100:+.{digits}f}%" for r in (low, high))
        if said[0] != said[1]:
            break
    return said[0], said[1]


def noise_text(noise: Noise) -> str:
    """What the review's sentence says after a TPS ratio, in parentheses: "95% CI +55% to
    +69%", with ": within the noise" where it holds 1.0, or why there is no interval (no
    comma: the sentence separates its ratios by commas)."""
    level = f"{LEVEL:.0%} CI"
    if noise.low is None or noise.high is None:
        if noise.counts is None:
            return f"no {level}: too few steady intervals at some user load"
        return f"no {level} from {noise.counts[0]} and {noise.counts[1]} steady intervals: {LEAST} needed in each"
    low, high = percents(noise.low, noise.high)
    return f"{level} {low} to {high}" + (": within the noise" if noise.within else "")


def noise_cell(noise: Noise | None) -> str:
    """The ratio table's cell under a TPS ratio: "1.55-1.69x", or "too few intervals"."""
    if noise is None:
        return ""
    if noise.low is None or noise.high is None:
        return "too few intervals"
    return f"{noise.low:.2f}-{noise.high:.2f}x"
