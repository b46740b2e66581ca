"""Published reference tables in the results store, and the runs a report sets them as.

Why: users reproduce published storage reviews and want their own runs beside the
published figures. A reference is kept by NAME, one row per configuration and user load,
with its citation; a report reads it as a "published" run (one per configuration) so that
every table, chart and ratio treats it as it treats a measured run, and labels it as not
measured here. Such a run has no intervals, so no confidence interval is ever claimed for
its ratios, and only the figures the table published (TPS, response time, IOPS).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.summary import LatencyStats, SteadySummary
from tpsbench.results.records import Run, RunData, StoredObservation, StoredStep
from tpsbench.results.schema import STORAGE_LABEL_MOST, reference_rows_table
from tpsbench.results.store import ResultsStore

#: the status of a run made from a reference table: a report labels it "[published]"
PUBLISHED = "published"
#: how the IOPS of a published row is read back (the report table's IOPS row sums reads and writes)
IOPS_OBSERVER, IOPS_FIGURE, OTHER_FIGURE = "disk_io", "total.r_s", "total.w_s"


@dataclass(frozen=True)
class ReferenceRow:
    """One configuration at one user load, as published; None where the table gives no figure."""

    label: str
    users: int
    tps: float | None
    response_s: float | None
    iops: float | None
    source: str
    workload: str = ""


def _has_table(store: ResultsStore) -> bool:
    """Whether the store has the reference table (layouts before 5 have none: no references)."""
    return reference_rows_table.name in sa.inspect(store.engine).get_table_names()


def reference_names(store: ResultsStore) -> list[tuple[str, int, str]]:
    """(name, number of rows, source of its first row) of every reference, by name."""
    if not _has_table(store):
        return []
    c = reference_rows_table.c
    rows = store._read("listing references", sa.select(c.name, c.source).order_by(c.name, c.position))
    out: dict[str, tuple[int, str]] = {}
    for r in rows:
        count, source = out.get(r.name, (0, r.source))
        out[r.name] = (count + 1, source)
    return [(name, count, source) for name, (count, source) in out.items()]


def load_reference(store: ResultsStore, name: str) -> list[ReferenceRow]:
    """The rows of reference ``name`` in the file's order; one line if there is none."""
    c = reference_rows_table.c
    rows = store._read("reading a reference", sa.select(reference_rows_table).where(c.name == name)
                       .order_by(c.position)) if _has_table(store) else []
    if not rows:
        known = ", ".join(repr(n) for n, _, _ in reference_names(store)) or "none"
        raise TpsbenchError(f"results store {store.url} has no reference {name!r}; references: {known}")
    return [ReferenceRow(label=r.label, users=r.users, tps=r.tps, response_s=r.response_s, iops=r.iops,
                         source=r.source, workload=r.workload or "") for r in rows]


def check_name(name: str) -> None:
    """Refuse a name no reference can have (empty, or longer than a storage label)."""
    if not name.strip() or len(name) > STORAGE_LABEL_MOST:
        raise TpsbenchError(f"a reference name is 1 to {STORAGE_LABEL_MOST} characters, not {name!r}")


def add_reference(store: ResultsStore, name: str, rows: Sequence[ReferenceRow]) -> None:
    """Store ``rows`` as reference ``name`` in one transaction; refused if the name is taken."""
    check_name(name)
    if any(n == name for n, _, _ in reference_names(store)):
        raise TpsbenchError(f"results store {store.url} has a reference {name!r} already: remove it first "
                            f"(tpsbench reference remove {name!r}) or choose another --name")
    now = datetime.now(UTC).replace(tzinfo=None)
    values = [dict(name=name, position=i, label=r.label, users=r.users, tps=r.tps, response_s=r.response_s,
                   iops=r.iops, workload=r.workload or None, source=r.source, added_at=now)
              for i, r in enumerate(rows)]
    with store._transaction(f"storing reference {name!r}") as conn:
        conn.execute(reference_rows_table.insert().values(values))


def remove_reference(store: ResultsStore, name: str) -> int:
    """Remove reference ``name``; the number of rows it had. One line if there is none."""
    found = load_reference(store, name)
    with store._transaction(f"removing reference {name!r}") as conn:
        conn.execute(reference_rows_table.delete().where(reference_rows_table.c.name == name))
    return len(found)


def reference_runs(name: str, rows: Sequence[ReferenceRow], first_id: int = -1) -> list[RunData]:
    """A published run per configuration of ``rows``, in their order, with ids counting down
    from ``first_id`` (negative: never a stored run's); a step per user load whose summary
    holds only the published TPS and mean latency, and IOPS as the device observer's total."""
    labels = list(dict.fromkeys(r.label for r in rows))
    out = []
    for n, label in enumerate(labels):
        mine = [r for r in rows if r.label == label]
        run = Run(id=first_id - n, workload=mine[0].workload, started_at=datetime.min.replace(tzinfo=UTC),
                  ended_at=None, status=PUBLISHED, storage=label,
                  config={"reference": name, "source": mine[0].source}, notes=mine[0].source)
        data = RunData(run=run)
        for step, r in enumerate(mine, start=1):
            mean = math.nan if r.response_s is None else r.response_s * 1000.0
            summary = SteadySummary(step=step, users=r.users, tps=math.nan if r.tps is None else r.tps,
                                    latency=LatencyStats(mean=mean))
            data.steps.append(StoredStep(step=step, users=r.users, rampup_s=None, duration_s=None, summary=summary))
            if r.iops is not None:
                data.observations += [StoredObservation(step, None, IOPS_OBSERVER, IOPS_FIGURE, r.iops),
                                      StoredObservation(step, None, IOPS_OBSERVER, OTHER_FIGURE, 0.0)]
        out.append(data)
    return out


def is_published(data: RunData) -> bool:
    """Whether ``data`` was made from a reference table rather than measured."""
    return data.run.status == PUBLISHED


def source_lines(runs: Sequence[RunData]) -> list[str]:
    """One line per reference among ``runs``: its configurations, not measured here, and its source."""
    named: dict[str, list[RunData]] = {}
    for data in runs:
        if is_published(data):
            named.setdefault(str(data.run.config.get("reference")), []).append(data)
    return [f"[{PUBLISHED}] reference {name!r} ({', '.join(d.run.storage for d in found)}): published, not "
            f"measured here; source: {found[0].run.notes}" for name, found in named.items()]


def measured_only(runs: Sequence[RunData]) -> list[RunData]:
    """The runs measured here, for what judges a measurement (warnings, verdicts)."""
    return [data for data in runs if not is_published(data)]
