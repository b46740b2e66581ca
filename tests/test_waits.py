"""The waits' measurement: draws and wake-up lag recorded, merged and stored whole, and the
KS helper telling the asked distribution from a wrong one."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.summary import SteadySummary
from tpsbench.measure.waits import LAG, decoded, describe, ks_negexp, think_name, wait_stats


def draws(mean: float, n: int, seed: int, cap: float = 10.0) -> LatencyHistogram:
    rng = random.Random(seed)
    hist = LatencyHistogram()
    hist.record_many(np.array([min(-math.log(1.0 - rng.random()) * mean, cap * mean) * 1e6 for _ in range(n)]))
    return hist


def test_ks_passes_the_asked_distribution_and_fails_a_mean_five_percent_off() -> None:
    asked = [(draws(12.0, 20000, 1), 12.0), (draws(5.0, 3000, 2), 5.0)]
    assert ks_negexp(asked) > 0.01
    assert ks_negexp([(draws(12.6, 20000, 1), 12.0)]) < 0.01
    # uncapped draws have a tail the cap forbids
    assert ks_negexp([(draws(12.0, 20000, 3, cap=1000.0), 12.0)], cap=2.0) < 0.01
    assert math.isnan(ks_negexp([]))


def test_waits_travel_in_the_reports_and_are_stored_whole_with_the_summary() -> None:
    rec = IntervalRecorder(["a", "b"])
    for i in range(100):
        rec.record("a", 1000, True)
        rec.record_wait(rec.think_names["a"], 2e6 + i)
        rec.record_wait(LAG, 1000 + 10 * i)
    rec.record_wait(rec.keying_names["b"], 5e5)
    report = rec.take(1, 1, 0.0, 10.0)
    assert set(report.timings) == {LAG, think_name("a"), rec.keying_names["b"]}
    summary = SteadySummary.from_reports([report, rec.take(1, 2, 10.0, 20.0)], users=1)
    assert summary.timings == {}  # waits are kept apart from the timings the table shows
    back = SteadySummary.from_dict(summary.to_dict())
    waits = decoded(back.waits)
    assert waits[LAG].count() == 100 and waits[think_name("a")].count() == 100
    stats = wait_stats(waits)
    assert stats is not None
    assert stats.lag_p50_ms == pytest.approx(1.49, abs=0.01) and stats.lag_max_ms == pytest.approx(1.99, abs=0.01)
    # realised = drawn + lag, to within the histograms' 3 significant digits
    assert stats.think_mean_s["a"] == pytest.approx(2.0 + 0.0000495 + 0.001495, rel=0.0005)
    assert describe(stats)[0].startswith("Wake-up lag p50/p99/max: ")
    assert wait_stats({}) is None and describe(None) == []

