"""The parallel, deterministic load of a build: load tasks on loader processes.

Each loader process holds one connection and loads whole tasks through the target's
bulk path, committing once per chunk; the rows of a task depend only on the build seed
and the task, so the data is the same for any number of loaders.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from queue import Empty
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.signals import held, ignore_here
from tpsbench.core.target import Target
from tpsbench.core.workload import LoadParams, LoadTask, Workload
from tpsbench.targets import open_target

ChunkCallback = Callable[[str, int, int], None]


def load(
    target: Target, wl: Workload, tasks: list[LoadTask], params: LoadParams, loaders: int, on_chunk: ChunkCallback
) -> dict[str, int]:
    """Run every task; returns rows loaded per table (counted from task results, not progress)."""
    rows: Counter[str] = Counter()
    if loaders == 1:
        conn = target.connect()
        try:
            for task in tasks:
                rows.update(_load_task(target, conn, wl, task, params, on_chunk))
        finally:
            conn.close()
        return dict(rows)
    ctx = multiprocessing.get_context("spawn")
    pool: ProcessPoolExecutor | None = None
    try:
        with held():  # the loader processes (and multiprocessing's resource tracker) start here: tpsbench.core.signals
            queue = ctx.Queue()
            pool = ProcessPoolExecutor(max_workers=loaders, mp_context=ctx, initializer=_loader_init,
                                       initargs=(target.url.render_as_string(hide_password=False), wl, params, queue))
            futures = [pool.submit(_loader_task, task) for task in tasks]
        while not all(f.done() for f in futures) or not queue.empty():
            try:
                on_chunk(*queue.get(timeout=0.2))
            except Empty:
                pass
            failed = next((f for f in futures if f.done() and f.exception() is not None), None)
            if failed is not None:
                raise failed.exception()  # type: ignore[misc]  # not None: failed was chosen for it
    except BrokenProcessPool as exc:
        raise TpsbenchError(f"a loader process died ({exc}); the build is incomplete") from exc
    except BaseException:  # a signal, or a task's error: the loaders ignore signals, so they are ended here
        if pool is not None:
            _end_loaders(pool)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    for future in futures:
        rows.update(future.result())
    return dict(rows)


def _end_loaders(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's processes (before its shutdown, which forgets them), which would
    otherwise finish the task each has in hand first (a whole table's part of a build
    that was just interrupted, or failed)."""
    processes = getattr(pool, "_processes", None) or {}  # no public way to reach them before Python 3.14
    for process in list(processes.values()):
        process.kill()


_loader: dict[str, Any] = {}


def _loader_init(url: str, wl: Workload, params: LoadParams, queue: Any) -> None:
    """A loader process: its connection, and the build's workload as configured (pickled,
    as a run's workers get theirs), so that build options reach generate(). Signals are
    the build's to act on (tpsbench.core.signals)."""
    ignore_here()
    target = open_target(url)
    _loader.update(target=target, conn=target.connect(), wl=wl, params=params, queue=queue)


def _loader_task(task: LoadTask) -> dict[str, int]:
    w = _loader
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
