"""Build a workload's database: schema, parallel deterministic load, indexes, statistics.

The coordinator (this process) creates the tables, hands load tasks to loader processes
(tpsbench.commands.load), shows their progress, then builds the secondary indexes once
the data is in (faster than maintaining them row by row), creates the stored procedures
the schema file has, and refreshes planner statistics.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from tpsbench import __version__
from tpsbench.commands.load import load
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import (
    STATE_BUILDING,
    STATE_COMPLETE,
    TABLES,
    built_tables,
    clear_meta,
    foreign_tables,
    read_meta,
    refuse_while_running,
    write_meta,
)
from tpsbench.core.parse import check_seed
from tpsbench.core.schema import execute_ddl, install_routines, routines
from tpsbench.core.target import Target
from tpsbench.core.workload import LoadParams, SizeEstimate, Workload
from tpsbench.report.progress import LoadProgress
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload


@dataclass
class BuildResult:
    workload: str
    scale: int
    seed: int
    loaders: int
    seconds: float
    rows: dict[str, int]


def build(
    workload: str,
    scale: int,
    url: str | None = None,
    *,
    loaders: int | None = None,
    seed: int = 0,
    drop_existing: bool = False,
    force: bool = False,
    load_time: str | None = None,
    show_progress: bool = True,
    options: Mapping[str, str] | None = None,
) -> BuildResult:
    """Create and load ``workload`` at ``scale`` in the database at ``url``.

    Refuses to touch existing tables of the workload unless ``drop_existing``, and to
    replace them while a run is active on them unless ``force`` (a stale mark); the data
    depends only on ``seed`` (and ``load_time``, the value of every "now" column),
    never on ``loaders`` (the loader processes). ``options`` are the workload's build options (sysbench's
    table_size ...).
    """
    wl = get_workload(workload)
    wl.configure(options or {})
    if scale < 1:
        raise TpsbenchError(f"scale must be a whole number >= 1, got {scale}")
    check_seed(seed)
    target = open_target(url)
    ddl = wl.ddl(target.dialect)
    if ddl is None:
        raise TpsbenchError(f"{wl.name} has no DDL for {target.dialect} ({wl.schema_file(target.dialect)} is missing)")
    _refuse_too_big(target, wl, scale)
    target.ensure_database()
    _refuse_foreign(target, wl, "build into it")
    found = sorted(wl.owned_tables(target.table_names()))
    if (found or read_meta(target, wl.name)) and not drop_existing:
        listed = ", ".join(found) or "tpsbench_meta entries"
        raise TpsbenchError(
            f"{target.describe()} already has {wl.name} tables ({listed}); add --drop-existing to replace them"
        )
    refuse_while_running(target, wl.name, "rebuild it", force)
    drop(wl, target, force=True)  # just checked

    loaders = _loader_count(loaders, target)
    params = LoadParams(
        scale=scale,
        seed=seed,
        load_time=load_time or dt.datetime.now().replace(microsecond=0).isoformat(sep=" "),
        constants=wl.constants(seed),
    )
    started = time.monotonic()
    write_meta(target, wl.name, {
        "state": STATE_BUILDING, "build_id": uuid.uuid4().hex, TABLES: ",".join(wl.table_names(scale)),
        "scale": scale, "seed": seed, "load_time": params.load_time,
        "tool_version": __version__, "loaders": loaders, "runs": 0,
        **{f"const_{k}": v for k, v in params.constants.items()},
    })
    tables_ddl, index_ddl = ddl
    execute_ddl(target, wl.expand_ddl(tables_ddl, scale), "creating tables")

    title = f"build {wl.name} {wl.describe_scale(scale)} on {target.describe()} with {loaders} loader(s)"
    with LoadProgress(title, wl.expected_rows(scale, seed), enabled=show_progress) as progress:
        rows = load(target, wl, wl.tasks(scale), params, loaders, progress.add)
    execute_ddl(target, wl.expand_ddl(index_ddl, scale), "building indexes")
    install_routines(wl, target)
    conn = target.connect()
    try:
        with target.translate_errors("refreshing statistics"):
            target.after_load(conn, list(wl.table_names(scale)))
    finally:
        conn.close()
    seconds = time.monotonic() - started
    write_meta(target, wl.name, {"state": STATE_COMPLETE, "built_seconds": f"{seconds:.1f}"})
    return BuildResult(wl.name, scale, seed, loaders, seconds, rows)


def drop(workload: str | Workload, target: Target | str | None = None,
         options: Mapping[str, str] | None = None, *, force: bool = False) -> list[str]:
    """Drop the tables and metadata of tpsbench's build of the workload, nothing else;
    returns what was dropped. Tables named like the workload's that tpsbench did not
    build here are refused in one line, and nothing is dropped. ``workload``: a name, its
    ``options`` (custom's file) configuring it, or a configured workload (a build's).
    Refused while a run is active on the data, unless ``force`` (its mark is stale)."""
    if isinstance(workload, Workload):
        wl = workload
    else:
        wl = get_workload(workload)
        if options:
            wl.configure(options)
    target = target if isinstance(target, Target) else open_target(target)
    _refuse_foreign(target, wl, "drop anything")
    refuse_while_running(target, wl.name, "drop its tables", force)
    built = built_tables(target, wl)
    dropped = [table for table in wl.owned_tables(target.table_names()) if table in built]
    execute_ddl(target, [f"DROP TABLE {t}" for t in dropped], "dropping tables")
    execute_ddl(target, [f"DROP {kind} IF EXISTS {name}" for kind, name, _ in routines(wl, target)],
                "dropping stored procedures")
    clear_meta(target, wl.name)
    return dropped


def _refuse_foreign(target: Target, wl: Workload, what: str) -> None:
    foreign = foreign_tables(target, wl)
    if foreign:
        raise TpsbenchError(f"{target.describe()} has {len(foreign)} table(s) named like {wl.name}'s that tpsbench "
                            f"did not build ({', '.join(foreign[:12])}{' ...' if len(foreign) > 12 else ''}); "
                            f"tpsbench will not {what}: use another database")


def build_if_missing(wl: Workload, scale: int, target: Target, url: str | None, seed: int,
                     options: Mapping[str, str]) -> None:
    """A run's --build-if-missing: :func:`build` at ``scale`` where the database has no
    build of ``wl``, one that would not fit refused before the database is even made.
    The run's ``options`` that are build options too (custom's file) shape the build."""
    shape = {o.name: options[o.name] for o in wl.build_options if options.get(o.name)}
    try:
        if read_meta(target, wl.name):
            return
    except TpsbenchError:  # no database yet, so no build either
        pass
    sized = get_workload(wl.name)
    sized.configure(shape)
    _refuse_too_big(target, sized, scale)
    target.ensure_database()
    build(wl.name, scale, url, seed=seed, options=shape)


def _refuse_too_big(target: Target, wl: Workload, scale: int) -> None:
    """Refuse a build that would not fit on the disk that holds the database, where that
    disk is on this host: better one line now than a full disk hours from now."""
    estimate, path = wl.estimate_size(scale, target.dialect), target.storage_path()
    if estimate is None or path is None or not os.path.isdir(path):
        return
    free = shutil.disk_usage(path).free / 1e6
    if estimate.megabytes > free:
        raise TpsbenchError(f"a {wl.name} build of {wl.describe_scale(scale)} takes about {estimate.megabytes:,.0f} MB "
                            f"on {target.dialect}, but {path} has {free:,.0f} MB free: "
                            "build a smaller scale or make room")


def _loader_count(requested: int | None, target: Target) -> int:
    count = requested if requested is not None else len(os.sched_getaffinity(0))  # the cores we may use
    if count < 1:
        raise TpsbenchError(f"--loaders must be >= 1, got {count}")
    if target.max_loaders is not None:
        count = min(count, target.max_loaders)
    return count


def estimate_size(workload: str, scale: int, url: str | None = None, options: Mapping[str, str] | None = None,
                  ) -> SizeEstimate:
    """On-disk size of ``workload`` built at ``scale`` on the database at ``url``, from the
    sizes measured on that engine (the workload's scale_factors.toml); ``options`` are
    build options that shape it (sysbench's table_size)."""
    wl = get_workload(workload)
    wl.configure(options or {})
    dialect = open_target(url).dialect
    estimate = wl.estimate_size(scale, dialect)
    if estimate is None:
        known = ", ".join(wl.scale_factors().get("size", {})) or "none"
        raise TpsbenchError(f"no measured {workload} sizes for {dialect}; measured: {known}")
    return estimate
