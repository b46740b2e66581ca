"""When the database could not be reached in a run's steps, as the lines under the report table say it.

Why apart from the table: the outage observer's interval readings are summed per step
here, which the table's cells never need (tpsbench.report.table shows them under it).
"""

from __future__ import annotations

from datetime import datetime

from tpsbench.measure.reachability import Reachability
from tpsbench.results.records import RunData
from tpsbench.results.schema import BEFORE_STEP


def outage_lines(data: RunData) -> list[str]:
    """When the database could not be reached in each step (ramp-up included) and for how
    long, from the outage observer's interval readings; apart, a restart before the step
    (``--cache cold``), which no measured window holds."""
    steps: dict[tuple[int, bool], dict[str, list[float]]] = {}
    for o in data.observations:
        if o.observer == Reachability.name and o.interval is not None:
            steps.setdefault((o.step, o.interval == BEFORE_STEP), {}).setdefault(o.name, []).append(o.value)
    lines = []
    for (step, before), figures in sorted(steps.items()):
        down, began = sum(figures.get("down_s", [])), figures.get("first_at", [])
        if down or began:
            when = f" from {datetime.fromtimestamp(min(began)):%H:%M:%S}" if began else ""
            count = int(sum(figures.get("outages", [])))
            what = ("the server was restarted before it (--cache cold), unreachable" if before
                    else "the database was unreachable")
            lines.append(f"run {data.run.id} step {step}: {what} for {down:.1f} s{when} "
                         f"({count} outage{'s' if count != 1 else ''})")
    return lines
