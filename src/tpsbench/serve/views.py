"""What the web view shows, as plain JSON-ready dicts: the store's listing and a run's
live state (its plan, where it is, the time left). Pure functions of stored records.

Why the plan comes from the run's stored config: the store is the only source (a run
started from another terminal is seen the same way), and the config holds the user
loads, ramp-up and duration the run was started with.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from tpsbench.core.repeats import step_loads
from tpsbench.results.live import Campaign, LivePoint
from tpsbench.results.records import Run, RunData


def _when(at: datetime | None) -> str:
    return f"{at:%Y-%m-%d %H:%M:%S} UTC" if at is not None else ""


def run_row(run: Run) -> dict[str, Any]:
    """A run as a line of the listing."""
    return {"id": run.id, "workload": run.workload, "storage": run.storage, "status": run.status,
            "started": _when(run.started_at), "ended": _when(run.ended_at), "database": run.db_url or "",
            "campaign": run.config.get("campaign")}


def campaign_row(campaign: Campaign, runs: list[Run]) -> dict[str, Any]:
    """A campaign as a line of the listing, with the ids of its runs in target order."""
    mine = sorted((r for r in runs if r.config.get("campaign") == campaign.id),
                  key=lambda r: (r.config.get("campaign_target") or 0, r.id))
    return {"id": campaign.id, "name": campaign.name, "status": campaign.status,
            "started": _when(campaign.started_at), "ended": _when(campaign.ended_at),
            "runs": [r.id for r in mine]}


def plan(run: Run) -> dict[str, Any]:
    """The steps the run was started with: each step's user load, in run order (the rounds
    of --repeat one after another), each step's length in seconds, and the warm-up's before
    them (``warmup_s``, 0: none), run as step 0 at the first step's load."""
    config = run.config
    users = step_loads(config)
    rampup, duration = float(config.get("rampup_s") or 0.0), float(config.get("duration_s") or 0.0)
    return {"users": users, "rampup_s": rampup, "duration_s": duration,
            "interval_s": float(config.get("interval_s") or 0.0), "warmup_s": float(config.get("warmup_s") or 0.0)}


def time_left(run: Run, step: int | None, step_start: float, last_end: float) -> float | None:
    """Seconds the run has still to go by its plan, from the last stored interval (which
    ended at ``last_end``, in step ``step`` that began at ``step_start``): what is left of
    that step and every step after it (the warm-up is step 0, as long as its ramp-up and
    ``--warmup``). None when the plan is unknown."""
    steps = plan(run)
    each = steps["rampup_s"] + steps["duration_s"]
    warmup = steps["rampup_s"] + steps["warmup_s"] if steps["warmup_s"] else 0.0
    if not steps["users"] or not each:
        return None
    if run.status != "running":
        return 0.0
    if step is None:
        return warmup + len(steps["users"]) * each
    this = warmup if step == 0 else each
    return max(0.0, step_start + this - last_end) + max(0, len(steps["users"]) - step) * each


def point(p: LivePoint) -> dict[str, Any]:
    return asdict(p)


def step_figures(data: RunData) -> list[dict[str, Any]]:
    """Each finished step's steady-state figures, as the report has them."""
    out = []
    for s in data.steps:
        if s.summary is not None:
            lat = s.summary.latency
            out.append({"step": s.step, "users": s.users, "tps": s.summary.tps, "p95_ms": lat.p95,
                        "p99_ms": lat.p99})
    return out


def header(run: Run) -> dict[str, Any]:
    """What the live page says of the run above its charts."""
    return {**run_row(run), "plan": plan(run)}
