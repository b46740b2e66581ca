"""What the results store hands back: plain records, no database access left.

Reports are pure functions of these, so the same run renders alike for a terminal, a
review and a spreadsheet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tpsbench.measure.summary import SteadySummary


@dataclass
class Run:
    id: int
    workload: str
    started_at: datetime
    ended_at: datetime | None
    status: str
    storage: str
    config: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    tool_version: str | None = None
    db_url: str | None = None
    server: dict[str, Any] = field(default_factory=dict)
    honesty: dict[str, Any] | None = None
    notes: str = ""


@dataclass
class StoredStep:
    step: int
    users: int
    rampup_s: float | None
    duration_s: float | None
    #: None while the step runs, or if the run stopped before the step ended
    summary: SteadySummary | None


@dataclass
class StoredInterval:
    step: int
    interval: int
    t_start: float
    t_end: float
    steady: bool
    users: int | None
    tps: float
    p95_ms: float
    commits: int
    rollbacks: int
    retries: int
    errors: int
    reconnects: int


@dataclass
class StoredError:
    step: int
    txn: str
    count: int
    message: str


@dataclass
class StoredObservation:
    """One figure a step observer read: over an interval, or the step's steady window (None)."""

    step: int
    interval: int | None
    observer: str
    name: str
    value: float


@dataclass
class RunData:
    """A run as loaded from the store: all a report needs, no database access left."""

    run: Run
    steps: list[StoredStep] = field(default_factory=list)
    intervals: list[StoredInterval] = field(default_factory=list)
    errors: list[StoredError] = field(default_factory=list)
    observations: list[StoredObservation] = field(default_factory=list)

    def readings(self, step: int, interval: int | None = None) -> dict[str, dict[str, float]]:
        """What the observers read over a step's steady window (or one interval of it):
        observer -> figure -> value."""
        out: dict[str, dict[str, float]] = {}
        for o in self.observations:
            if o.step == step and o.interval == interval:
                out.setdefault(o.observer, {})[o.name] = o.value
        return out


#: columns of ``runs`` the store reads as stored and parses here, so that a malformed one
#: (edited by hand, written by a foreign tool) is said for its run, not fatal to a listing
TIME_COLUMNS = ("started_at", "ended_at")
RAW_COLUMNS = ("config", "server", "honesty", *TIME_COLUMNS)


def _aware(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def _parsed(r: Any, column: str) -> Any:
    """A JSON or time column of a ``runs`` row, parsed; ValueError naming it if malformed."""
    value = getattr(r, column)
    if not isinstance(value, str):
        return value  # None, or what the driver parsed already (PostgreSQL's json, timestamps)
    try:
        return datetime.fromisoformat(value) if column in TIME_COLUMNS else json.loads(value)
    except ValueError:
        raise ValueError(f"its {column} is not {'a valid time' if column in TIME_COLUMNS else 'valid JSON'}: "
                         f"{value[:40]!r}") from None


def run_from_row(r: Any) -> Run:
    """A ``runs`` row (its RAW_COLUMNS as stored) as a Run; ValueError if malformed."""
    config, server = _parsed(r, "config"), _parsed(r, "server")
    if not isinstance(config or {}, dict) or not isinstance(server or {}, dict):
        raise ValueError("its config or server settings are not a JSON object")
    return Run(id=r.id, workload=r.workload, started_at=_aware(_parsed(r, "started_at")),  # type: ignore[arg-type]  # runs.started_at is NOT NULL
               ended_at=_aware(_parsed(r, "ended_at")), status=r.status, storage=r.storage, config=config or {},
               seed=r.seed, tool_version=r.tool_version, db_url=r.db_url, server=server or {},
               honesty=_parsed(r, "honesty"), notes=r.notes or "")
