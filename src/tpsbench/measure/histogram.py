"""Latency histograms: HdrHistogram in microseconds, 1 us to 1 hour, 3 significant digits.

Why HdrHistogram: its buckets are fixed by (range, precision), so two histograms add up
counter by counter to exactly the histogram of all their values. That is what lets every
worker process send its own interval histogram and the coordinator merge them without
losing the tail, and its V2 "HISTFAAA..." encoding is what other HdrHistogram tools read.

Why we touch the ``hdrhistogram`` package's counts array: ``record_value`` is pure Python,
called once a value, which would cost a busy worker several percent of its CPU. We
compute the bucket indexes of a whole batch with numpy and add a ``bincount`` into the
package's counts array through a numpy view. That relies on its internals (the ctypes
counts array, ``total_count``, ``min_value``, ``max_value``), so the version is pinned in
pyproject.toml and tests/test_histogram.py checks the result byte for byte against
``record_value``.

Values outside the range are never dropped silently (``record_value`` would return False
and lose them): they are clamped to the range and counted in :attr:`LatencyHistogram.clipped`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import numpy as np
from hdrh.histogram import HdrHistogram

from tpsbench.core.errors import TpsbenchError

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour in microseconds
SIGNIFICANT_DIGITS = 3


class _Layout:
    """Bucket geometry of our (range, precision), as numpy arrays indexed by counter.

    Computed once per process from an empty hdrh histogram, so that the arithmetic follows
    the package's own parameters rather than constants copied here.
    """

    def __init__(self) -> None:
        h = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        self.counts_len: int = h.counts_len
        self.unit: int = h.unit_magnitude
        self.half_mag: int = h.sub_bucket_half_count_magnitude
        self.half: int = h.sub_bucket_half_count
        self.mask: int = h.sub_bucket_mask
        idx = np.arange(self.counts_len, dtype=np.int64)
        bucket = (idx >> self.half_mag) - 1
        sub = (idx & (self.half - 1)) + self.half
        first = bucket < 0
        sub[first] -= self.half
        bucket[first] = 0
        #: lowest value that lands in each counter
        self.low = sub << (bucket + self.unit)
        #: width of each counter's value range
        self.width = np.left_shift(1, bucket + self.unit)
        #: what hdrh reports for a counter (the highest equivalent value)
        self.high = self.low + self.width - 1
        #: what hdrh uses for the mean (the middle of each counter's range)
        self.mid = self.low + (self.width >> 1)
        self.mid_float = self.mid.astype(np.float64)

    def indexes(self, values: np.ndarray) -> np.ndarray:
        """Counter index of each value (int64, already within range), as hdrh computes it."""
        # bit length of (value | mask) = hdrh's "pow2ceiling"; exact through float64 below 2**53
        _, bits = np.frexp((values | self.mask).astype(np.float64))
        bucket = bits.astype(np.int64) - self.unit - (self.half_mag + 1)
        sub = values >> (bucket + self.unit)
        return ((bucket + 1) << self.half_mag) + sub - self.half


@cache
def _layout() -> _Layout:
    return _Layout()


def _view(h: HdrHistogram) -> np.ndarray:
    """A numpy view (no copy) of an hdrh histogram's counts array."""
    return np.ctypeslib.as_array(h.counts)


class LatencyHistogram:
    """Microsecond latencies, 1 us to 1 h at 3 significant digits; exactly mergeable.

    Not thread-safe: :class:`tpsbench.measure.reports.IntervalRecorder` serialises access.
    """

    __slots__ = ("_h", "_counts", "clipped")

    def __init__(self) -> None:
        self._h = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        self._counts = _view(self._h)
        #: values that were outside 0 .. 1 h (or NaN) and were clamped into range
        self.clipped = 0

    # -- recording -------------------------------------------------------------------
    def record_many(self, values_us: np.ndarray | Iterable[float]) -> None:
        """Add a batch of latencies in microseconds (ints or floats, rounded to 1 us).

        Negative values count as 0 and values above one hour as one hour; both, and NaN
        (counted as one hour, the pessimistic choice), are added to :attr:`clipped`.
        """
        v = np.asarray(values_us).ravel()
        if v.size == 0:
            return
        if v.dtype.kind not in "biuf":
            raise TypeError(f"latencies must be numbers, not {v.dtype}")
        clipped = 0
        if v.dtype.kind == "f":
            nan = np.isnan(v)
            if nan.any():
                clipped += int(np.count_nonzero(nan))
                v = np.where(nan, float(HIGHEST_US), v)
            v = np.rint(v)
        out = (v < 0) | (v > HIGHEST_US)
        if out.any():
            clipped += int(np.count_nonzero(out))
            v = np.clip(v, 0, HIGHEST_US)
        values = v.astype(np.int64, copy=False)
        self._add_counts(_layout().indexes(values), int(values.min()), int(values.max()))
        self.clipped += clipped

    def record(self, value_us: float) -> None:
        """Add one latency; for tests and odd cases, batches go through :meth:`record_many`."""
        self.record_many(np.array([value_us]))

    def _add_counts(self, indexes: np.ndarray, low: int, high: int,
                    weights: np.ndarray | None = None) -> None:
        added = np.bincount(indexes, weights=weights)
        self._counts[: added.size] += added.astype(np.uint64)
        h = self._h
        h.total_count += int(added.sum()) if weights is not None else int(indexes.size)
        h.min_value = min(h.min_value, low)
        h.max_value = max(h.max_value, high)

    def merge(self, other: LatencyHistogram) -> None:
        """Add ``other`` into this histogram, counter by counter (exact)."""
        self._counts += other._counts
        h, o = self._h, other._h
        h.total_count += o.total_count
        h.min_value = min(h.min_value, o.min_value)
        h.max_value = max(h.max_value, o.max_value)
        self.clipped += other.clipped

    # -- interchange -----------------------------------------------------------------
    def encode(self) -> bytes:
        """The HdrHistogram V2 compressed, base64 form ("HISTFAAA..."), as ASCII bytes.

        :attr:`clipped` is not part of the format: callers that need it carry it beside.
        """
        return bytes(self._h.encode())

    @classmethod
    def decode(cls, data: bytes | str) -> LatencyHistogram:
        """Read a V2 encoding; histograms of another range or precision are re-bucketed."""
        raw = data.encode("ascii") if isinstance(data, str) else bytes(data)
        try:
            other = HdrHistogram.decode(raw)
        except Exception as exc:  # binascii, zlib and hdrh's own exceptions
            raise TpsbenchError(f"not an HdrHistogram V2 encoding: {exc or type(exc).__name__}") from exc
        result = cls()
        if (other.lowest_trackable_value, other.highest_trackable_value, other.significant_figures) == (
            LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS,
        ):
            result._h = other
            result._counts = _view(other)
            return result
        counts = np.ctypeslib.as_array(other.counts)
        nonzero = np.flatnonzero(counts)
        if nonzero.size:
            values = np.array([other.get_value_from_index(int(i)) for i in nonzero], dtype=np.int64)
            out = values > HIGHEST_US
            result.clipped = int(counts[nonzero][out].sum())
            values = np.minimum(values, HIGHEST_US)
            weights = counts[nonzero].astype(np.float64)
            result._add_counts(_layout().indexes(values), int(values.min()), int(values.max()), weights)
        return result

    def __reduce__(self) -> tuple[object, ...]:
        return (_restore, (self.encode(), self.clipped))

    # -- reading ---------------------------------------------------------------------
    def count(self) -> int:
        """How many values were recorded (clipped ones included)."""
        return int(self._h.total_count)

    def max(self) -> float:
        """Largest value recorded, as the top of its counter (hdrh's convention), in us."""
        return float(self._h.get_max_value()) if self.count() else 0.0

    def min(self) -> float:
        """Smallest value recorded, as the bottom of its counter, in us."""
        if not self.count():
            return 0.0
        first = int(np.flatnonzero(self._counts)[0])
        return float(_layout().low[first])

    def mean(self) -> float:
        """Mean in us, taking each counter's middle value (within 0.05% of the true mean)."""
        total = self.count()
        if not total:
            return 0.0
        # up to the largest value only, and not np.dot: BLAS threads cost more than they save here
        top = int(self._h.get_counts_array_index(self._h.max_value)) + 1
        return float((self._counts[:top].astype(np.float64) * _layout().mid_float[:top]).sum() / total)

    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """Each counter that holds values: its middle value in us, and its count (what a
        test of the whole distribution, as Kolmogorov-Smirnov's, reads)."""
        index = np.flatnonzero(self._counts)
        return _layout().mid_float[index], self._counts[index].astype(np.int64)

    def counts_at_most(self, bounds_us: Iterable[float]) -> list[int]:
        """How many values are at most each bound, as cumulative buckets count them (a
        counter is within a bound when the value it reports, its top, is)."""
        if not self.count():
            return [0 for _ in bounds_us]
        cumulative = np.cumsum(self._counts, dtype=np.int64)
        last = np.searchsorted(_layout().high, np.asarray(list(bounds_us), dtype=np.float64), side="right") - 1
        return [int(cumulative[i]) if i >= 0 else 0 for i in last]

    def percentile(self, p: float) -> float:
        """Value at percentile ``p`` (0..100) in us, the same value hdrh's own search gives."""
        return self.percentiles([p])[0]

    def percentiles(self, ps: Iterable[float]) -> list[float]:
        """Several percentiles with one pass over the counters (one cumulative sum)."""
        ps = list(ps)
        total = self.count()
        if not total:
            return [0.0] * len(ps)
        top = int(self._h.get_counts_array_index(self._h.max_value)) + 1
        cumulative = np.cumsum(self._counts[:top], dtype=np.int64)
        layout = _layout()
        result = []
        for p in ps:
            if not 0.0 <= p <= 100.0:
                raise ValueError(f"percentile must be within 0..100, not {p}")
            target = max(int(p * total / 100 + 0.5), 1)
            index = min(int(np.searchsorted(cumulative, target, side="left")), top - 1)
            result.append(float(layout.high[index] if p else layout.low[index]))
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LatencyHistogram):
            return NotImplemented
        return (self.count() == other.count() and self.clipped == other.clipped
                and bool(np.array_equal(self._counts, other._counts)))

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        if not self.count():
            return "LatencyHistogram(empty)"
        p50, p99 = self.percentiles([50, 99])
        return f"LatencyHistogram(count={self.count()}, p50={p50:g}us, p99={p99:g}us, max={self.max():g}us)"


def _restore(data: bytes, clipped: int) -> LatencyHistogram:
    h = LatencyHistogram.decode(data)
    h.clipped = clipped
    return h


def merged(histograms: Iterable[LatencyHistogram]) -> LatencyHistogram:
    """A new histogram holding all of ``histograms`` (the inputs are left as they are)."""
    total = LatencyHistogram()
    for h in histograms:
        total.merge(h)
    return total

