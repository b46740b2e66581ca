"""Build a workload's database: schema, parallel deterministic load, indexes, statistics.

The coordinator (this process) creates the tables, hands :class:`LoadTask` objects to
worker processes, shows their progress, then builds the secondary indexes once the data
is in (faster than maintaining them row by row), creates the stored procedures the
schema file has, and refreshes planner statistics. Each worker holds one connection and loads whole tasks through the target's bulk
path, committing once per chunk.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import time
from queue import Empty
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from tpsbench import __version__
from tpsbench.api.meta import STATE_BUILDING, STATE_COMPLETE, clear_meta, read_meta, write_meta
from tpsbench.api.workload import LoadParams, LoadTask, Workload
from tpsbench.errors import TpsbenchError
from tpsbench.progress import LoadProgress
from tpsbench.resources import schema_file, split_ddl, split_routines
from tpsbench.targets import open_target
from tpsbench.targets.base import Target
from tpsbench.workloads import get_workload


@dataclass
class BuildResult:
    workload: str
    scale: int
    seed: int
    workers: int
    seconds: float
    rows: dict[str, int]


def build(
    workload: str,
    scale: int,
    url: str | None = None,
    *,
    workers: int | None = None,
    seed: int = 0,
    drop_existing: bool = False,
    load_time: str | None = None,
    show_progress: bool = True,
    options: Mapping[str, str] | None = None,
) -> BuildResult:
    """Create and load ``workload`` at ``scale`` in the database at ``url``.

    Refuses to touch existing tables of the workload unless ``drop_existing``; the data
    depends only on ``seed`` (and ``load_time``, the value of every "now" column),
    never on ``workers``. ``options`` are the workload's build options (sysbench's
    table_size ...).
    """
    wl = get_workload(workload)
    wl.configure(options or {})
    if scale < 1:
        raise TpsbenchError(f"scale must be a whole number >= 1, got {scale}")
    target = open_target(url)
    target.ensure_database()
    found = sorted(wl.owned_tables(target.table_names()))
    if (found or read_meta(target, wl.name)) and not drop_existing:
        listed = ", ".join(found) or "tpsbench_meta entries"
        raise TpsbenchError(
            f"{target.describe()} already has {wl.name} tables ({listed}); add --drop-existing to replace them"
        )
    drop(wl.name, target)

    workers = _worker_count(workers, target)
    params = LoadParams(
        scale=scale,
        seed=seed,
        load_time=load_time or dt.datetime.now().replace(microsecond=0).isoformat(sep=" "),
        constants=wl.constants(seed),
    )
    started = time.monotonic()
    write_meta(target, wl.name, {
        "state": STATE_BUILDING, "scale": scale, "seed": seed, "load_time": params.load_time,
        "tool_version": __version__, "workers": workers, "runs": 0,
        **{f"const_{k}": v for k, v in params.constants.items()},
    })
    tables_ddl, index_ddl = split_ddl(schema_file(wl.name, target.dialect).read_text())
    _execute_ddl(target, wl.expand_ddl(tables_ddl, scale), "creating tables")

    title = f"build {wl.name} {wl.describe_scale(scale)} on {target.describe()} with {workers} worker(s)"
    with LoadProgress(title, wl.expected_rows(scale, seed), enabled=show_progress) as progress:
        rows = _load(target, wl, wl.tasks(scale), params, workers, progress.add)
    _execute_ddl(target, wl.expand_ddl(index_ddl, scale), "building indexes")
    install_routines(wl.name, target)
    conn = target.connect()
    try:
        with target.translate_errors("refreshing statistics"):
            target.after_load(conn, list(wl.table_names(scale)))
    finally:
        conn.close()
    seconds = time.monotonic() - started
    write_meta(target, wl.name, {"state": STATE_COMPLETE, "built_seconds": f"{seconds:.1f}"})
    return BuildResult(wl.name, scale, seed, workers, seconds, rows)


def drop(workload: str, target: Target | str | None = None) -> list[str]:
    """Drop the workload's own tables and metadata, nothing else; returns what was dropped."""
    wl = get_workload(workload)
    target = target if isinstance(target, Target) else open_target(target)
    present = target.table_names()
    dropped = wl.owned_tables(present)
    _execute_ddl(target, [f"DROP TABLE {t}" for t in dropped], "dropping tables")
    _execute_ddl(target, [f"DROP {kind} IF EXISTS {name}" for kind, name, _ in _routines(wl.name, target)],
                 "dropping stored procedures")
    clear_meta(target, wl.name)
    return dropped


def install_routines(workload: str, target: Target) -> list[str]:
    """Create the stored routines of the workload's schema file, replacing older ones.

    Runs call this before their first step, so the routines a run calls are always the
    ones of the tpsbench that runs it, also on a database built by an older version.
    Returns their names.
    """
    routines = _routines(workload, target)
    if not routines:
        return []
    # through the DB-API cursor without parameters: SQLAlchemy would have the driver
    # read the %, : and ? of the routine bodies as parameter markers
    with target.session("installing stored procedures") as conn:
        cur = conn.cursor()
        for kind, name, body in routines:
            cur.execute(f"DROP {kind} IF EXISTS {name}")
            cur.execute(body)
        conn.commit()
    return [name for _, name, _ in routines]


def _routines(workload: str, target: Target) -> list[tuple[str, str, str]]:
    path = schema_file(workload, target.dialect)
    return split_routines(path.read_text()) if path.exists() else []


def _worker_count(requested: int | None, target: Target) -> int:
    count = requested if requested is not None else (os.cpu_count() or 1)
    if count < 1:
        raise TpsbenchError(f"--workers must be >= 1, got {count}")
    if target.max_load_workers is not None:
        count = min(count, target.max_load_workers)
    return count


def _execute_ddl(target: Target, statements: list[str], doing: str) -> None:
    with target.translate_errors(doing), target.engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)


ChunkCallback = Callable[[str, int, int], None]


def _load(
    target: Target, wl: Workload, tasks: list[LoadTask], params: LoadParams, workers: int, on_chunk: ChunkCallback
) -> dict[str, int]:
    """Run every task; returns rows loaded per table (counted from task results, not progress)."""
    rows: Counter[str] = Counter()
    if workers == 1:
        conn = target.connect()
        try:
            for task in tasks:
                rows.update(_load_task(target, conn, wl, task, params, on_chunk))
        finally:
            conn.close()
        return dict(rows)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_worker_init, initargs=(target.url.render_as_string(hide_password=False), wl.name, params, queue),
    ) as pool:
        futures = [pool.submit(_worker_task, task) for task in tasks]
        try:
            while not all(f.done() for f in futures) or not queue.empty():
                try:
                    on_chunk(*queue.get(timeout=0.2))
                except Empty:
                    pass
                failed = next((f for f in futures if f.done() and f.exception() is not None), None)
                if failed is not None:
                    raise failed.exception()  # type: ignore[misc]
        except BrokenProcessPool as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            raise TpsbenchError(f"a build worker process died ({exc}); the build is incomplete") from exc
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    for future in futures:
        rows.update(future.result())
    return dict(rows)


_worker: dict[str, Any] = {}


def _worker_init(url: str, workload: str, params: LoadParams, queue: Any) -> None:
    target = open_target(url)
    _worker.update(target=target, conn=target.connect(), wl=get_workload(workload), params=params, queue=queue)


def _worker_task(task: LoadTask) -> dict[str, int]:
    w = _worker
    return _load_task(w["target"], w["conn"], w["wl"], task, w["params"], lambda *m: w["queue"].put(m))


def _load_task(
    target: Target, conn: Any, wl: Workload, task: LoadTask, params: LoadParams, on_chunk: ChunkCallback
) -> dict[str, int]:
    rows: Counter[str] = Counter()
    with target.translate_errors(f"loading {task.kind} {task.key}"):
        for batch in wl.generate(task, params):
            target.bulk_load(conn, batch)
            conn.commit()
            rows[batch.table] += len(batch)
            on_chunk(batch.table, len(batch), batch.nbytes_text())
    return dict(rows)
