"""The ``tpsbench_meta`` table: what tpsbench knows about a database it built.

It records, per workload, the build's state (``building`` until the last index is in,
then ``complete``), its id, the tables it created (written before any of them is, so an
interrupted build still owns them), its scale, seed and constants (TPC-C's C-load must
be known to every later run), and how many runs have touched the data since the build
(TPC-C condition 11 holds only before the first). An interrupted build leaves
``building`` behind, which ``check`` reports and ``build --drop-existing`` clears.

Why the tables are named: a database may hold someone else's ``customer`` or ``sbtest1``;
tpsbench drops or replaces only the tables its metadata says it built (:func:`built_tables`).
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target

if TYPE_CHECKING:
    from tpsbench.core.workload import Workload

META = sa.MetaData()
META_TABLE = sa.Table(
    "tpsbench_meta",
    META,
    sa.Column("workload", sa.String(32), primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(2000), nullable=False),
)

STATE_BUILDING = "building"
STATE_COMPLETE = "complete"
#: the metadata entry that names the tables a build created, comma-separated
TABLES = "tables"
#: the metadata entry of a run in progress on the data: "host pid started-at [run-id]"
ACTIVE = "active_run"


def read_meta(target: Target, workload: str) -> dict[str, str]:
    """The workload's metadata, empty when tpsbench never built it here."""
    if META_TABLE.name not in target.table_names():
        return {}
    with target.translate_errors("reading tpsbench_meta"), target.engine.connect() as conn:
        rows = conn.execute(sa.select(META_TABLE.c.name, META_TABLE.c.value).where(META_TABLE.c.workload == workload))
        return {name: value for name, value in rows}


def write_meta(target: Target, workload: str, values: dict[str, object]) -> None:
    """Insert or replace metadata entries (delete + insert: portable across dialects)."""
    with target.translate_errors("writing tpsbench_meta"), target.engine.begin() as conn:
        META.create_all(conn, checkfirst=True)
        names = list(values)
        conn.execute(
            META_TABLE.delete().where(META_TABLE.c.workload == workload, META_TABLE.c.name.in_(names))
        )
        conn.execute(
            META_TABLE.insert(), [{"workload": workload, "name": n, "value": str(values[n])} for n in names]
        )


def clear_meta(target: Target, workload: str) -> None:
    """Forget the workload's metadata; drop the table when no workload is left in it."""
    if META_TABLE.name not in target.table_names():
        return
    with target.translate_errors("clearing tpsbench_meta"), target.engine.begin() as conn:
        conn.execute(META_TABLE.delete().where(META_TABLE.c.workload == workload))
        if conn.execute(sa.select(sa.func.count()).select_from(META_TABLE)).scalar_one() == 0:
            META_TABLE.drop(conn)


def active_run(target: Target, workload: str) -> str | None:
    """The run in progress on this build's data (its ACTIVE entry), unless that entry was
    left by a process of this host that is gone (a crash, a kill -9): None then."""
    entry = read_meta(target, workload).get(ACTIVE)
    if not entry:
        return None
    host, _, rest = entry.partition(" ")
    pid = rest.partition(" ")[0]
    if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
        return None
    return entry


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def built_tables(target: Target, workload: Workload) -> set[str]:
    """The tables tpsbench's build of ``workload`` created here, as its metadata names them
    (none when it never built here). A build recorded before the names were kept owns
    the tables its scale makes."""
    meta = read_meta(target, workload.name)
    if not meta:
        return set()
    if TABLES in meta:
        return {name for name in meta[TABLES].split(",") if name}
    return set(workload.table_names(int(meta.get("scale", "1"))))


def foreign_tables(target: Target, workload: Workload) -> list[str]:
    """Tables named like ``workload``'s that tpsbench did not build here: never to be
    touched (dropped, replaced, loaded into)."""
    return sorted(set(workload.owned_tables(target.table_names())) - built_tables(target, workload))


def note_run_started(target: Target, workload: str, run_id: int | None = None) -> str:
    """Count a run against the data, so that checks know the data is no longer as built,
    and mark it active (:func:`active_run`) until :func:`note_run_ended`; the mark names
    the run's id in the results store, so that a refusal can say which run holds it."""
    runs = int(read_meta(target, workload).get("runs", "0"))
    mark = f"{socket.gethostname()} {os.getpid()} {datetime.now(UTC).isoformat(timespec='seconds')}"
    mark += "" if run_id is None else f" {run_id}"
    try:
        write_meta(target, workload, {"runs": runs + 1, ACTIVE: mark})
    except KeyboardInterrupt:  # Ctrl-C (SIGTERM) may come once the mark is in, as the connection closes
        note_run_ended(target, workload, mark)
        raise
    return mark


def describe_mark(mark: str) -> str:
    """A run's mark as a person reads it: "run 7 started 2026-01-02T03:04:05+00:00 by pid 123 on db1"."""
    host, pid, since, run_id = (mark.split(" ") + ["", "", ""])[:4]
    return f"run {run_id or '(id not recorded)'} started {since or '(unknown)'} by pid {pid} on {host}"


def refuse_while_running(target: Target, workload: str, doing: str, force: bool) -> None:
    """Refuse in one line to ``doing`` (drop, rebuild) the data a run is using: that run
    would fail and be left 'running'. ``force``: the user knows the mark is stale (the run's
    host is gone); a mark left by a dead process of this host is not counted at all."""
    mark = active_run(target, workload)
    if mark and not force:
        raise TpsbenchError(f"a run is active on the {workload} database at {target.describe()} "
                            f"({describe_mark(mark)}): tpsbench will not {doing} under it; wait for it to end, "
                            "or add --force if that run is gone and its mark is stale")


def note_run_ended(target: Target, workload: str, mark: str) -> None:
    """Remove the run's mark, if it is still its own (a --force run may have replaced it)."""
    if META_TABLE.name not in target.table_names():
        return
    c = META_TABLE.c
    with target.translate_errors("writing tpsbench_meta"), target.engine.begin() as conn:
        conn.execute(META_TABLE.delete().where(c.workload == workload, c.name == ACTIVE, c.value == mark))


def require_complete(target: Target, workload: str, tables: tuple[str, ...]) -> dict[str, str]:
    """The metadata of a complete build of ``workload``, or a one-line error saying what is wrong.

    Checks and runs call this first: conditions on half-loaded data mean nothing, and a
    run against missing tables or another workload's tables would only measure errors.
    """
    meta = read_meta(target, workload)
    if not meta:
        others = _built_workloads(target)
        built = f" (it holds a {', '.join(others)} build)" if others else ""
        raise TpsbenchError(f"no {workload} database at {target.describe()}{built}: "
                            f"build one with `tpsbench build {workload}`")
    if meta.get("state") != STATE_COMPLETE:
        raise TpsbenchError(
            f"the {workload} build at {target.describe()} is incomplete (interrupted?): "
            f"rebuild with `tpsbench build {workload} --drop-existing`", exit_code=1)
    missing = sorted(set(tables) - target.table_names())
    if missing:
        raise TpsbenchError(f"the {workload} database at {target.describe()} lacks tables: {', '.join(missing)}; "
                            f"rebuild with `tpsbench build {workload} --drop-existing`", exit_code=1)
    return meta


def _built_workloads(target: Target) -> list[str]:
    if META_TABLE.name not in target.table_names():
        return []
    with target.translate_errors("reading tpsbench_meta"), target.engine.connect() as conn:
        return sorted(conn.execute(sa.select(META_TABLE.c.workload).distinct()).scalars())
