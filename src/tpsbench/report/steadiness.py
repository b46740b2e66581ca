"""Whether each step of a stored run reached steady state (SNIA), as every format says it.

Why here, once: the table (terminal, Markdown, CSV, HTML) shows it as a row and the JSON
export as a step's ``steady_state``, and both must say the same. The judgement is
tpsbench.measure.steady_state over the last intervals of the step's steady window, for
its TPS and its p95 latency; a step is steady when both are.

JSON (``steady_state`` of a step; null where the step did not finish): ``window`` (int,
rounds judged: the last intervals of the steady window), ``intervals`` (int, steady
intervals the step has), ``steady`` (bool, or null: too few intervals to judge), ``text``
(what the table says), ``tps`` and ``p95_ms`` (each null when too few intervals, else
``range_pct``: (max - min) / average over the window, ``slope_pct``: the least-squares
line's rise across the window / average, both in percent, and ``steady``), and, for a
step of ``--until-steady`` only, ``until_steady``: ``steady`` (bool: it ended once steady;
false: it measured to MAX) and ``measured_s`` (s).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpsbench.engine.until_steady import UNTIL_STEADY
from tpsbench.measure.reports import clock
from tpsbench.measure.steady_state import WINDOW, Excursion, excursion
from tpsbench.results.records import RunData, StoredInterval

#: the table's row
STEADY_ROW = "Steady state (SNIA)"
#: (JSON key, name in the text, figure of an interval) of the series judged
SERIES = (("tps", "TPS", lambda i: i.tps), ("p95_ms", "p95", lambda i: i.p95_ms))


def steady_intervals(data: RunData, step: int) -> list[StoredInterval]:
    """A step's steady intervals in order: the series its figures are judged by."""
    return sorted((i for i in data.intervals if i.step == step and i.steady), key=lambda i: i.interval)


def judged(intervals: list[StoredInterval]) -> dict[str, Excursion] | None:
    """Each series' excursions over the window; None with fewer intervals than it."""
    found = {key: excursion([get(i) for i in intervals]) for key, _, get in SERIES}
    if any(e is None for e in found.values()):
        return None
    return {key: e for key, e in found.items() if e is not None}


def steady_text(intervals: list[StoredInterval]) -> str:
    """"steady", "not steady (TPS range 25.3%, slope 3.1%)" (the series that failed), or
    "too few intervals to judge (3 < 5)"."""
    found = judged(intervals)
    if found is None:
        return f"too few intervals to judge ({len(intervals)} < {WINDOW})"
    failed = [f"{name} range {found[key].range_share:.1%}, slope {found[key].slope_share:.1%}"
              for key, name, _ in SERIES if not found[key].steady]
    return f"not steady ({'; '.join(failed)})" if failed else "steady"


def steady_rows(data: RunData, steps: Mapping[str, int]) -> list[tuple[str, list[str]]]:
    """The table's row for a run whose columns are ``steps`` (column -> step number): each
    finished step's judgement, "" for a step that did not finish; no row without one, nor
    for a run with no interval stored (built from published figures: nothing to judge)."""
    if not data.intervals:
        return []
    finished = {s.step for s in data.steps if s.summary is not None}
    cells = [steady_text(steady_intervals(data, n)) + until_note(data.readings(n)) if n in finished else ""
             for n in steps.values()]
    return [(STEADY_ROW, cells)] if any(cells) else []


def _percent(share: float) -> float | None:
    return None if share == float("inf") else 100.0 * share


def until_note(readings: Mapping[str, Mapping[str, float]]) -> str:
    """What ``--until-steady`` did, after the judgement ("" for a phase without it): it
    ended the phase once steady, or the phase measured on to MAX."""
    ended = until_json(readings)
    if ended is None:
        return ""
    if ended["steady"]:
        return f"; ended once steady after {clock(ended['measured_s'])}"
    return f"; --until-steady reached its MAX ({clock(ended['measured_s'])}) first"


def until_json(readings: Mapping[str, Mapping[str, float]]) -> dict[str, Any] | None:
    """``until_steady`` of the JSON export: whether the phase ended once steady, and how
    long it measured; None for a phase without ``--until-steady``."""
    ended = readings.get(UNTIL_STEADY)
    if not ended:
        return None
    return {"steady": bool(ended.get("steady")), "measured_s": float(ended.get("measured_s", 0.0))}


def steady_state_json(data: RunData, step: int) -> dict[str, Any]:
    """A finished step's ``steady_state`` in the JSON export (see the module docstring)."""
    ended = until_json(data.readings(step))
    return steady_state_of(steady_intervals(data, step)) | ({"until_steady": ended} if ended else {})


def steady_state_of(intervals: list[StoredInterval]) -> dict[str, Any]:
    """The ``steady_state`` object of a series of intervals (a step's, or the warm-up's)."""
    found = judged(intervals)
    series: dict[str, Any] = {key: None if found is None else {
        "range_pct": _percent(found[key].range_share), "slope_pct": _percent(found[key].slope_share),
        "steady": found[key].steady} for key, _, _ in SERIES}
    return {"window": WINDOW, "intervals": len(intervals),
            "steady": None if found is None else all(e.steady for e in found.values()),
            "text": steady_text(intervals), **series}

