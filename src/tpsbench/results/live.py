"""Reading a results store while runs write to it: a read-only store, its campaigns, and
the intervals stored since a given one (what a live view polls for).

Why read-only at the connection: a viewer left open for days next to a benchmark must
never be the reason a run's write waits or fails, nor change what a run stored. SQLite
is opened with ``mode=ro`` (the file cannot be written through that connection) and
PostgreSQL sessions default to read-only transactions; other backends rely on the
viewer issuing no writes (it has none).

Why incremental: a long run stores thousands of intervals with dozens of readings each;
a view that polls every second asks only for what came after the last interval it saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.reports import ALL
from tpsbench.results.opening import read_only
from tpsbench.results.records import Run, StoredInterval, run_from_row
from tpsbench.results.schema import (
    COUNTS,
    campaigns_table,
    histograms_table,
    intervals_table,
    observations_table,
    runs_table,
)
from tpsbench.results.store import ResultsStore

#: the device I/O figures a live view shows per interval (the disk_io observer's totals)
DEVICE_FIGURES = ("total.r_s", "total.w_s", "total.r_kB_s", "total.w_kB_s")


class ReadOnlyStore(ResultsStore):
    """A results store opened for reading only: missing or foreign stores are refused in
    one line as for ``tpsbench runs``, and the connection cannot write where the backend
    allows it."""

    def __init__(self, url: str | None = None) -> None:
        super().__init__(url, create=False)
        self.engine = read_only(self.engine)


@dataclass
class Campaign:
    id: int
    name: str
    started_at: datetime
    ended_at: datetime | None
    status: str
    config: dict[str, Any] = field(default_factory=dict)


def _time(value: Any) -> datetime | None:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value


def list_campaigns(store: ResultsStore) -> list[Campaign]:
    """Every campaign in the store, oldest first (none in a store of layout 1 or 2)."""
    if campaigns_table.name not in sa.inspect(store.engine).get_table_names():
        return []
    c = campaigns_table.c
    rows = store._read("listing campaigns", sa.select(campaigns_table).order_by(c.id))
    out = []
    for r in rows:
        config = json.loads(r.config) if isinstance(r.config, str) else r.config
        out.append(Campaign(id=r.id, name=r.name, started_at=_time(r.started_at) or datetime.now(UTC),
                            ended_at=_time(r.ended_at), status=r.status,
                            config=config if isinstance(config, dict) else {}))
    return out


@dataclass
class LivePoint(StoredInterval):
    """One stored interval as a live view draws it: with its row id (where the next poll
    starts), its p99 and the device I/O read over it."""

    id: int = 0
    #: None where the interval has no histogram (no transaction finished in it)
    p99_ms: float | None = None
    #: DEVICE_FIGURES as read over the interval (empty without the disk_io observer)
    device: dict[str, float] = field(default_factory=dict)


def points_after(store: ResultsStore, run_id: int, after: int = 0) -> list[LivePoint]:
    """The intervals of ``run_id`` stored after the one of row id ``after``, oldest first."""
    c = intervals_table.c
    rows = store._read("reading intervals", sa.select(intervals_table).where(
        c.run_id == run_id, c.id > after).order_by(c.id))
    if not rows:
        return []
    first_step = min(r.step for r in rows)
    h, o = histograms_table.c, observations_table.c
    hists = {(r.step, r.interval): r.data for r in store._read("reading histograms", sa.select(
        h.step, h.interval, h.data).where(h.run_id == run_id, h.step >= first_step, h.txn == ALL,
                                          h.interval.is_not(None)).order_by(h.id))}
    device: dict[tuple[int, int], dict[str, float]] = {}
    for r in store._read("reading observations", sa.select(o.step, o.interval, o.name, o.value).where(
            o.run_id == run_id, o.step >= first_step, o.observer == "disk_io", o.name.in_(DEVICE_FIGURES),
            o.interval.is_not(None))):
        device.setdefault((r.step, r.interval), {})[r.name] = r.value
    points = []
    for r in rows:
        data = hists.get((r.step, r.interval))
        hist = LatencyHistogram.decode(data) if data else None
        points.append(LivePoint(id=r.id, step=r.step, interval=r.interval, t_start=r.t_start, t_end=r.t_end,
                                steady=bool(r.steady), users=r.users, tps=r.tps or 0.0, p95_ms=r.p95_ms or 0.0,
                                **{k: getattr(r, k) or 0 for k in COUNTS},
                                p99_ms=hist.percentile(99) / 1000.0 if hist is not None and hist.count() else None,
                                device=device.get((r.step, r.interval), {})))
    return points


def read_run(store: ResultsStore, run_id: int) -> Run:
    """One run's record without its steps and intervals (its status, as often as polled)."""
    found = store._run_rows("reading a run", runs_table.c.id == run_id)
    if not found:
        raise TpsbenchError(f"results store {store.url} has no run {run_id}")
    try:
        return run_from_row(found[0])
    except ValueError as exc:
        raise TpsbenchError(f"results store {store.url}: run {run_id} cannot be read: {exc}") from None
