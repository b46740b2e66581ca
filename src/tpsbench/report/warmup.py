"""The warm-up (``run --warmup``) as every report format shows it: how long it ran, at
what TPS, and whether it reached SNIA steady state before step 1.

Why: a warm-up that was still climbing when step 1 began means step 1 measured a system
still warming; the reader needs to see that beside the figures, not only in a chart. The
judgement is the steps' (tpsbench.report.steadiness) over the warm-up's intervals past
its ramp-up: with ``--until-steady``, exactly those its watch judged (it stored how many),
so the report and the live line agree. The warm-up's intervals are stored as step 0 and
never steady (tpsbench.results.schema.WARMUP_STEP): nothing here reaches a step's figures.

JSON (a run's ``warmup``, absent from a run without one; optional, added within versions 2
and 3): ``users`` (int or null), ``planned_s`` (s, ``--warmup``), ``seconds`` (s measured
past its ramp-up), ``intervals`` (int, all it stored, ramp-up included), ``tps`` (commits
per second past its ramp-up, or null), ``steady_state`` (as a step's, over the intervals
past its ramp-up) and ``until_steady`` (as a step's ``steady_state.until_steady``, or null
without ``--until-steady``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpsbench.engine.protocol import interval_bounds
from tpsbench.engine.until_steady import UNTIL_STEADY
from tpsbench.measure.reports import clock
from tpsbench.report.steadiness import steady_state_of, steady_text, until_json, until_note
from tpsbench.results.records import RunData, StoredInterval
from tpsbench.results.schema import WARMUP_STEP

#: the table's row (every format built from the table: terminal, Markdown, CSV, HTML)
WARMUP_ROW = "Warm-up before step 1"


def _config_s(config: Mapping[str, Any], key: str, default: float) -> float:
    value = config.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def warmup_intervals(data: RunData) -> list[StoredInterval]:
    """The warm-up's intervals past its ramp-up, in order: the series judged. With
    ``--until-steady``, the ones its watch took (the interval under way when it ended is
    cut short, and no part of the judgement); else the whole intervals of its planned time."""
    config = data.run.config or {}
    bounds = interval_bounds(_config_s(config, "rampup_s", 0.0), _config_s(config, "warmup_s", 0.0),
                             _config_s(config, "interval_s", 1.0))
    phase = sorted((i for i in data.intervals if i.step == WARMUP_STEP), key=lambda i: i.interval)
    measured = [i for i in phase if i.interval < len(bounds) and bounds[i.interval][2]]
    watched = data.readings(WARMUP_STEP).get(UNTIL_STEADY, {})
    if "intervals" in watched:
        return measured[:round(watched["intervals"])]
    return [i for i in measured if i.t_end - i.t_start >= 0.9 * (bounds[i.interval][1] - bounds[i.interval][0])]


def warmup_json(data: RunData) -> dict[str, Any] | None:
    """A run's ``warmup`` in the JSON export (see the module docstring); None without one."""
    phase = [i for i in data.intervals if i.step == WARMUP_STEP]
    if not phase:
        return None
    judged = warmup_intervals(data)
    seconds = sum(i.t_end - i.t_start for i in judged)
    planned = (data.run.config or {}).get("warmup_s")
    return {"users": phase[0].users, "planned_s": planned if isinstance(planned, int | float) else None,
            "seconds": seconds, "intervals": len(phase),
            "tps": sum(i.commits for i in judged) / seconds if seconds else None,
            "steady_state": steady_state_of(judged), "until_steady": until_json(data.readings(WARMUP_STEP))}


def warmup_text(data: RunData) -> str | None:
    """The table's cell: "8 users, 5s, 1,234.5 TPS: steady; ended once steady after 5s"; None without a warm-up."""
    found = warmup_json(data)
    if found is None:
        return None
    count = found["users"]
    users = "" if count is None else f"{count} user, " if count == 1 else f"{count} users, "
    tps = f", {found['tps']:,.1f} TPS" if found["tps"] is not None else ""
    return (f"{users}{clock(found['seconds'])}{tps}: {steady_text(warmup_intervals(data))}"
            f"{until_note(data.readings(WARMUP_STEP))}")


def warmup_rows(data: RunData, steps: Mapping[str, int]) -> list[tuple[str, list[str]]]:
    """The table's warm-up row for a run whose columns are ``steps`` (column -> step
    number): its text under the column of its first step (the load it ran at), none
    without a warm-up or a step to put it under."""
    text = warmup_text(data)
    if text is None or not steps:
        return []
    first = min(steps.values())
    return [(WARMUP_ROW, [text if n == first else "" for n in steps.values()])]
