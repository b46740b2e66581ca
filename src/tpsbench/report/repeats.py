"""A run whose steps were repeated (``run --repeat N``): its steps grouped by load, and
each figure over the repeats as every report format shows it.

Why here, once: the table (terminal, Markdown, CSV, HTML), the JSON export, ``compare``
and ``plan`` must group the same steps the same way. The stored form: ``runs.config``
holds ``repeat`` (N; absent or 1: no repeats) and ``users``, the load list of one round;
steps are stored in run order, so step k is round (k - 1) // len(users) + 1 at position
(k - 1) % len(users) of the list (tpsbench.core.repeats reads it back). A column is a
position of the list (a load listed twice is two columns, "10" and "10 #2", as without
repeats).

Figures (tpsbench.measure.repeats): a mean with its Student t half-width, "161.3 ± 4.2";
a percentile or the maximum from the repeats' histograms merged with the range of the
repeats' own, "12.3 (11.9-12.8)" (without stored histograms, the mean of the repeats'
percentiles stands in for the merged one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tpsbench.core.repeats import repeat_groups, repeat_of
from tpsbench.measure.histogram import LatencyHistogram, merged
from tpsbench.measure.repeats import MeanInterval, Spread, mean_interval, spread
from tpsbench.measure.reports import ALL
from tpsbench.measure.summary import PERCENTILES, LatencyStats, SteadySummary
from tpsbench.report.steadiness import STEADY_ROW, judged, steady_intervals
from tpsbench.results.records import RunData, StoredStep

#: a store's step histograms: (run id, step, transaction or "*") -> histogram or None
Histograms = Callable[[int, int, str], LatencyHistogram | None]
#: the latency figures read from the merged histograms: table row -> LatencyStats field
MERGED_ROWS = {"p50 (ms)": "p50", "p90 (ms)": "p90", "p95 (ms)": "p95", "p99 (ms)": "p99", "p99.9 (ms)": "p999",
               "max (ms)": "max"}
#: the table's row saying how many repeats each column's figures are over
REPEATS_ROW = "Repeats (95% CI)"


def repeat_count(data: RunData) -> int:
    """How many times each step of the run was run (1: no repeats, or no load list)."""
    return repeat_of(data.run.config) if data.run.config.get("users") else 1


def is_repeated(data: RunData) -> bool:
    return repeat_count(data) > 1


@dataclass
class Column:
    """One load of a repeated run: its column label and its finished repeats' steps."""

    label: str
    users: int
    steps: list[StoredStep]

    @property
    def summaries(self) -> list[SteadySummary]:
        return [s.summary for s in self.steps if s.summary is not None]


def repeat_columns(data: RunData) -> list[Column]:
    """The run's loads in the order of its list, each with its finished repeats (a load
    listed twice: "10", "10 #2"; tpsbench.core.repeats groups the steps); empty for a run
    without repeats."""
    if not is_repeated(data):
        return []
    config = data.run.config
    groups = repeat_groups(config, [s for s in data.steps if s.summary is not None], lambda s: s.step)
    seen: dict[int, int] = {}
    out = []
    for users, steps in zip((int(u) for u in config["users"]), groups):
        seen[users] = seen.get(users, 0) + 1
        if steps:
            out.append(Column(label=str(users) if seen[users] == 1 else f"{users} #{seen[users]}", users=users,
                              steps=steps))
    return out


def mean_of(column: Column, get: Callable[[SteadySummary], float]) -> MeanInterval:
    """A figure's mean over the column's repeats with its interval."""
    return mean_interval([get(s) for s in column.summaries])


def merged_stats(data: RunData, column: Column, histograms: Histograms | None) -> LatencyStats | None:
    """The latency figures of the column's repeats' histograms merged; None where a repeat
    has no histogram stored (or none was given)."""
    if histograms is None:
        return None
    found = [histograms(data.run.id, s.step, ALL) for s in column.steps]
    if any(h is None for h in found):
        return None
    return LatencyStats.of(merged(h for h in found if h is not None))


def latency_spread(column: Column, field: str, stats: LatencyStats | None) -> Spread:
    """A latency figure ("p95", "max" ...) over the column: the merged histograms' with the
    range of the repeats' own (their mean, or for max their maximum, without histograms)."""
    values = [float(getattr(s.latency, field)) for s in column.summaries]
    if stats is not None:
        value = float(getattr(stats, field))
    else:
        value = max(values) if field == "max" else sum(values) / len(values)
    return spread(value, values)


def mean_text(m: MeanInterval, fmt: Callable[[float], str]) -> str:
    """ "161.3 ± 4.2", or the plain mean of a single repeat or of repeats that all agree
    (no errors in any: "0", not "0 ± 0")."""
    return fmt(m.mean) if not m.half else f"{fmt(m.mean)} ± {fmt(m.half)}"


def spread_text(s: Spread, fmt: Callable[[float], str]) -> str:
    """ "12.3 (11.9-12.8)", or the plain figure of a single repeat."""
    return fmt(s.value) if s.repeats < 2 else f"{fmt(s.value)} ({fmt(s.low)}-{fmt(s.high)})"


def repeat_cells(data: RunData, cols: Sequence[Column], rows: Sequence[tuple[str, Callable[[SteadySummary], float],
                                                                          Callable[[float], str]]],
              histograms: Histograms | None) -> tuple[list[str], list[list[str]]]:
    """The table block of a repeated run: a row of repeat counts, then each row's cells
    per column (the latency percentiles and the maximum as merged, the rest as means)."""
    stats = [merged_stats(data, c, histograms) for c in cols]
    names, cells = [REPEATS_ROW], [[f"{len(c.steps)} of {repeat_count(data)}" for c in cols]]
    for name, get, fmt in rows:
        names.append(name)
        if name in MERGED_ROWS:
            cells.append([spread_text(latency_spread(c, MERGED_ROWS[name], s), fmt) for c, s in zip(cols, stats)])
        else:
            cells.append([mean_text(mean_of(c, get), fmt) for c in cols])
    return names, cells


#: an observer row of the table (tpsbench.report.table.OBSERVER_ROWS): label, observer,
#: figures summed, scale, formatter, shown only where some value is not 0
ObserverRow = tuple[str, str, tuple[str, ...], float, Callable[[float], str], bool]


def repeat_observer_rows(data: RunData, cols: Sequence[Column],
                         rows: Sequence[ObserverRow]) -> list[tuple[str, list[str]]]:
    """The rows under a repeated run's figures: how many repeats reached steady state
    (SNIA) at each load, then each observer figure's mean over the repeats that read it,
    with its interval. What limited each step is a verdict per step, not averaged: the
    JSON export keeps every step's."""
    out: list[tuple[str, list[str]]] = []
    if data.intervals:
        judgements = [[judged(steady_intervals(data, s.step)) for s in c.steps] for c in cols]
        out.append((STEADY_ROW, [f"{sum(j is not None and all(e.steady for e in j.values()) for j in found)} of "
                                 f"{len(found)} steady" for found in judgements]))
    readings = [[data.readings(s.step) for s in c.steps] for c in cols]
    for name, observer, figures, scale, fmt, if_any in rows:
        values = [[scale * sum(r[observer][f] for f in figures) for r in column
                   if all(f in r.get(observer, {}) for f in figures)] for column in readings]
        if any(values) and (not if_any or any(v for column in values for v in column)):
            out.append((name, [mean_text(mean_interval(column), fmt) if column else "" for column in values]))
    return out


def _interval_json(m: MeanInterval) -> dict[str, Any]:
    return {"mean": m.mean, "half_width": m.half, "low": m.low, "high": m.high}


def _spread_json(s: Spread) -> dict[str, Any]:
    return {"value": s.value, "low": s.low, "high": s.high}


def repeats_json(data: RunData, histograms: Histograms | None) -> dict[str, Any] | None:
    """A run's ``repeats`` in the JSON export (version 3): null without repeats; else
    ``count`` (repeats asked for) and per load of the list ``loads``: ``users``, ``label``,
    ``steps`` (the repeats' step numbers), ``tps``, ``latency_mean_ms`` (mean, half_width,
    low, high: the 95% Student t interval over the repeats; half_width, low and high null
    for a single repeat) and ``latency_ms`` (p50 ... p999, max -> value from the merged
    histograms, low and high: the range of the repeats' own)."""
    if not is_repeated(data):
        return None
    loads = []
    for c in repeat_columns(data):
        stats = merged_stats(data, c, histograms)
        loads.append({"users": c.users, "label": c.label, "steps": [s.step for s in c.steps],
                      "tps": _interval_json(mean_of(c, lambda s: s.tps)),
                      "latency_mean_ms": _interval_json(mean_of(c, lambda s: s.latency.mean)),
                      "latency_ms": {key: _spread_json(latency_spread(c, key, stats))
                                     for key in [*PERCENTILES, "max"]}})
    return {"count": repeat_count(data), "loads": loads}


def repeat_tps(data: RunData) -> dict[int, list[float]]:
    """Each load's repeats' steady TPS, by users (the first column of a load listed
    twice); empty for a run without repeats."""
    out: dict[int, list[float]] = {}
    for c in repeat_columns(data):
        out.setdefault(c.users, [s.tps for s in c.summaries])
    return out
