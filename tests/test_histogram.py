"""LatencyHistogram: batch recording must equal hdrh's own record_value, merges are exact."""

from __future__ import annotations

import importlib.metadata
import pickle
import random

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.histogram import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS, LatencyHistogram, _layout, merged


def reference(values: np.ndarray) -> HdrHistogram:
    """The same values through hdrh's slow, documented path."""
    h = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
    for v in values.tolist():
        assert h.record_value(v)
    return h


def latencies(n: int, seed: int = 1) -> np.ndarray:
    """Microsecond latencies spanning every bucket size: 0 us to one hour, heavy tail."""
    rng = np.random.default_rng(seed)
    body = rng.lognormal(mean=8.0, sigma=2.2, size=n).astype(np.int64)
    edges = np.array([0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 1_000_000, HIGHEST_US - 1, HIGHEST_US])
    return np.concatenate([np.clip(body, 0, HIGHEST_US), edges, rng.integers(0, 5000, n // 10)])


def test_pinned_version_is_the_one_the_counts_array_trick_was_checked_with() -> None:
    assert importlib.metadata.version("hdrhistogram") == "0.10.8"


def test_record_many_encodes_byte_identical_to_record_value() -> None:
    values = latencies(20_000)
    h = LatencyHistogram()
    for chunk in np.array_split(values, 7):  # several batches, as the recorder sends them
        h.record_many(chunk)
    ref = reference(values)
    assert h.encode() == ref.encode()
    assert h.encode().startswith(b"HISTFAAA")
    assert h.count() == ref.get_total_count() == values.size
    assert h.max() == ref.get_max_value()
    assert h.clipped == 0


def test_float_latencies_are_rounded_to_whole_microseconds() -> None:
    h = LatencyHistogram()
    h.record_many(np.array([1.4, 1.6, 2999.5, 12345.49]))
    assert h.encode() == reference(np.array([1, 2, 3000, 12345])).encode()


def test_bucket_layout_matches_hdrh_for_every_counter() -> None:
    layout = _layout()
    ref = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
    assert layout.counts_len == ref.counts_len
    for index in range(layout.counts_len):
        value = ref.get_value_from_index(index)
        assert layout.low[index] == ref.get_lowest_equivalent_value(value)
        assert layout.high[index] == ref.get_highest_equivalent_value(value)
    sample = np.array(random.Random(3).sample(range(HIGHEST_US), 5000) + [0, 1, HIGHEST_US], dtype=np.int64)
    expected = [ref.get_counts_array_index(int(v)) for v in sample]
    assert layout.indexes(sample).tolist() == expected


def test_out_of_range_values_are_clamped_and_counted_never_dropped() -> None:
    h = LatencyHistogram()
    h.record_many(np.array([-5, 10, HIGHEST_US + 1, 10**15]))
    h.record_many(np.array([float("nan"), -0.3, -0.7, 20.0]))
    assert h.count() == 8
    assert h.clipped == 5  # -5, above max twice, NaN, -0.7 (-1 us); -0.3 rounds to 0, in range
    assert h.min() == 0.0
    assert h.max() == reference(np.array([HIGHEST_US])).get_max_value()
    with pytest.raises(TypeError):
        h.record_many(np.array(["12"]))


def test_merge_of_parts_equals_recording_everything() -> None:
    values = latencies(30_000, seed=2)
    whole = LatencyHistogram()
    whole.record_many(values)
    parts = []
    for chunk in np.array_split(values, 5):
        part = LatencyHistogram()
        part.record_many(chunk)
        parts.append(part)
    total = merged(parts)
    assert total == whole
    assert total.encode() == whole.encode()
    assert total.percentiles([50, 99, 99.9]) == whole.percentiles([50, 99, 99.9])
    # merging into an empty histogram keeps the real minimum (hdrh's own add() sets it to 0)
    empty_first, part = LatencyHistogram(), LatencyHistogram()
    part.record_many(np.array([700, 900]))
    empty_first.merge(part)
    assert empty_first.min() == 700


def test_merge_carries_clipped_counts() -> None:
    a, b = LatencyHistogram(), LatencyHistogram()
    a.record_many(np.array([HIGHEST_US * 2]))
    b.record_many(np.array([-1, 5]))
    a.merge(b)
    assert (a.count(), a.clipped) == (3, 2)


def test_decode_of_encode_round_trips() -> None:
    h = LatencyHistogram()
    h.record_many(latencies(10_000, seed=4))
    back = LatencyHistogram.decode(h.encode())
    assert back == h
    assert back.encode() == h.encode()
    assert back.percentiles([0, 50, 95, 99.9, 100]) == h.percentiles([0, 50, 95, 99.9, 100])
    assert (back.count(), back.max(), back.min(), back.mean()) == (h.count(), h.max(), h.min(), h.mean())
    assert LatencyHistogram.decode(h.encode().decode("ascii")) == h  # str accepted too
    # a decoded histogram keeps recording and merging
    back.record_many(np.array([7]))
    assert back.count() == h.count() + 1


def test_empty_histogram() -> None:
    h = LatencyHistogram()
    assert (h.count(), h.max(), h.min(), h.mean(), h.percentile(99)) == (0, 0.0, 0.0, 0.0, 0.0)
    assert LatencyHistogram.decode(h.encode()) == h
    h.record_many(np.array([], dtype=np.int64))
    assert h.count() == 0


def test_percentiles_within_a_tenth_of_a_percent_of_the_exact_values() -> None:
    values = latencies(50_000, seed=5)
    h = LatencyHistogram()
    h.record_many(values)
    ordered = np.sort(values)
    ref = reference(values)
    for p in (1, 25, 50, 75, 90, 95, 99, 99.9, 99.99):
        exact = ordered[max(int(p * values.size / 100 + 0.5), 1) - 1]
        got = h.percentile(p)
        assert exact <= got <= exact * 1.001 + 1, (p, exact, got)
        assert got == ref.get_value_at_percentile(p)
    assert abs(h.mean() - values.mean()) <= values.mean() * 0.001
    assert h.mean() == pytest.approx(ref.get_mean_value(), rel=1e-12)
    with pytest.raises(ValueError):
        h.percentile(101)


def test_pickle_keeps_counts_and_clipped() -> None:
    h = LatencyHistogram()
    h.record_many(np.array([3, 30, 300, -1]))
    back = pickle.loads(pickle.dumps(h))
    assert back == h and back.clipped == 1


def test_foreign_layouts_are_rebucketed() -> None:
    other = HdrHistogram(1, 60_000_000, 2)
    for v in (5, 1500, 250_000, 59_000_000):
        other.record_value(v, 3)
    h = LatencyHistogram.decode(other.encode())
    assert h.count() == 12
    assert h.percentile(100) == pytest.approx(59_000_000, rel=0.01)
    assert h.percentile(20) == pytest.approx(5, abs=1)


def test_garbage_is_refused_in_one_line() -> None:
    with pytest.raises(TpsbenchError) as info:
        LatencyHistogram.decode(b"HISTFAAAnot really")
    assert "\n" not in str(info.value)
