"""The TPS ratios' 95% confidence intervals: batch means, how compare says them, and their coverage."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest
from scipy import stats
from test_compare import steady_run

from tpsbench.measure.batch_means import BATCHES, batch_means, ratio_interval
from tpsbench.report.compare import TPS_CI, compare, summary_lines, to_text

#: steady interval TPS of two configurations whose difference is far beyond their noise
SLOW = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0, 98.0, 102.0, 100.0, 96.0]
FAST = [162.0, 158.0, 165.0, 161.0, 163.0, 160.0, 166.0, 159.0, 162.0, 164.0]


def expected_interval(base: list[float], other: list[float]) -> tuple[float, float]:
    """The interval worked out here with numpy and scipy, from the method's definition:
    five batch means a series, delta method on the log ratio, Welch-Satterthwaite df."""
    parts = []
    for series in (base, other):
        means = np.asarray(series, dtype=float).reshape(5, -1).mean(axis=1)
        parts.append(means.var(ddof=1) / 5 / means.mean() ** 2)
    df = sum(parts) ** 2 / sum(p * p / 4 for p in parts)
    half = stats.t.ppf(0.975, df) * math.sqrt(sum(parts))
    ratio = np.mean(other) / np.mean(base)
    return ratio * math.exp(-half), ratio * math.exp(half)


def test_batch_means_leave_out_the_leading_values_that_fill_no_batch() -> None:
    assert batch_means([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert batch_means(list(range(12)), batches=5) == [2.5, 4.5, 6.5, 8.5, 10.5]
    assert batch_means([4.0, 2.0]) == [4.0, 2.0] and batch_means([]) == []


def test_the_review_sentence_carries_the_tps_interval() -> None:
    c = compare([steady_run([SLOW], storage="SAS"), steady_run([FAST], storage="SSD")])
    low, high = expected_interval(SLOW, FAST)
    (noise,) = [load.tps_noise[1] for load in c.loads]
    assert noise.low == pytest.approx(low) and noise.high == pytest.approx(high) and not noise.within
    (line,) = summary_lines(c)
    said = f"{round((low - 1) * 100):+d}% to {round((high - 1) * 100):+d}%"
    assert line.startswith(f"SSD vs SAS at 10 users: +62% TPS (95% CI {said}), ")
    assert re.search(r"\+62% TPS \(95% CI \+5\d% to \+6\d%\)", line)
    rows = [[cell.strip() for cell in row.split("|")[1:-1]] for row in to_text(c).splitlines()[4:]]
    assert rows[1] == ["", TPS_CI, f"{low:.2f}-{high:.2f}x", f"{low:.2f}-{high:.2f}x"]  # one load: overall alike


def test_a_difference_whose_interval_holds_one_is_within_the_noise() -> None:
    wobbly = [102.0, 95.0, 106.0, 97.0, 104.0, 99.0, 93.0, 105.0, 101.0, 103.0]
    c = compare([steady_run([SLOW], storage="A"), steady_run([wobbly], storage="B")])
    (noise,) = [load.tps_noise[1] for load in c.loads]
    assert noise.low < 1.0 < noise.high and noise.within
    (line,) = summary_lines(c)
    assert re.match(r"B vs A at 10 users: \+0% TPS \(95% CI -\d+(\.\d)?% to \+\d+(\.\d)?%: within the noise\)", line)


def test_too_few_intervals_are_said_instead_of_an_interval() -> None:
    c = compare([steady_run([SLOW[:4]], storage="A"), steady_run([FAST[:2]], storage="B")])
    (line,) = summary_lines(c)
    assert line.startswith("B vs A at 10 users: +59% TPS (no 95% CI from 2 and 4 steady intervals: 3 needed in each)")
    row = [cell.strip() for cell in to_text(c).splitlines()[5].split("|")[1:-1]]
    assert row == ["", TPS_CI, "too few intervals", "too few intervals"]


def test_the_overall_interval_combines_the_loads() -> None:
    c = compare([steady_run([SLOW, [2 * v for v in SLOW]], storage="A"),
                 steady_run([FAST, [2 * v for v in FAST]], storage="B")])
    one, two = (load.tps_noise[1] for load in c.loads)
    overall = c.overall_noise[1]
    assert overall.spread.variance == pytest.approx((one.spread.variance + two.spread.variance) / 4)
    assert overall.low > one.low and overall.high < one.high  # two loads' evidence: narrower than one's


def ar1(rng: random.Random, mean: float, n: int, sd: float, phi: float) -> list[float]:
    """``n`` intervals' TPS around ``mean``: AR(1) noise (innovation sd ``sd``), started in
    its stationary state; phi 0 is independent noise."""
    e = rng.gauss(0.0, sd / math.sqrt(1 - phi * phi))
    out = []
    for _ in range(n):
        out.append(mean + e)
        e = phi * e + rng.gauss(0.0, sd)
    return out


def covered(phi: float, n: int, batches: int = BATCHES) -> int:
    """Of 200 pairs of runs of ``n`` intervals with known means (ratio 1.62) and AR(1)
    noise, how many intervals hold the true ratio (seeded: the same every time)."""
    rng = random.Random(1)
    hits = 0
    for _ in range(200):
        found = ratio_interval(ar1(rng, 100.0, n, 5.0, phi), ar1(rng, 162.0, n, 8.0, phi), batches=batches)
        assert found is not None
        hits += found[1] <= 1.62 <= found[2]
    return hits


@pytest.mark.parametrize(("phi", "n"), [(0.0, 25), (0.5, 150)])
def test_the_intervals_cover_the_true_ratio_95_times_in_100(phi: float, n: int) -> None:
    """Independent noise, and noise of which each interval carries half into the next: the
    batch-means interval holds the true ratio in 93% to 97% of 200 trials."""
    hits = covered(phi, n)
    assert 186 <= hits <= 194, f"{hits / 2:.1f}% covered"


def test_autocorrelated_noise_needs_the_batches() -> None:
    """The same autocorrelated runs with every interval its own batch: the spread of the
    intervals understates the mean's, and the intervals miss far more than 5 times in 100."""
    assert covered(0.5, 150, batches=150) < 170
