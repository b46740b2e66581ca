"""A trace's replay (tpsbench.commands.replay) recorded in the results store as a run of
workload ``replay`` with one step, so that ``report``, ``compare``, ``serve`` and the JSON
export show it as any run: its users are the trace's sessions, its transaction types its
normalised statements, its intervals and histograms cut from when each statement ended,
and the default step observers (host CPU, disk I/O ...) read beside it.

The intervals are cut while the replay runs, by a thread of their own (replay_live): the
player's hot path, which must keep up with clients written in C, only keeps each
statement's start and latency. Latency stays counted from each statement's scheduled start.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tpsbench.commands.replay import ReplayResult, open_replay, outcome
from tpsbench.commands.replay_live import LiveCut
from tpsbench.commands.run_setup import default_observers
from tpsbench.commands.step_end import finish_step
from tpsbench.commands.storage import storage_facts
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import MIN_INTERVAL_S, check_text
from tpsbench.core.redact import secrets_of
from tpsbench.engine.coordinator import StepOutcome
from tpsbench.engine.protocol import interval_bounds
from tpsbench.measure.observers import Observers
from tpsbench.measure.summary import SteadySummary
from tpsbench.results.schema import STORAGE_LABEL_MOST
from tpsbench.results.store import ResultsStore

#: the workload name a replay is stored under
WORKLOAD = "replay"
#: the longest transaction name the store keeps (results.schema)
NAME_MOST = 64
_HONESTY = {"match": None, "skipped": "a replay sends the trace's own statements: no workload counts to check"}


@dataclass
class StoredReplay:
    """The replay's outcome, and the run that holds it."""

    result: ReplayResult
    run_id: int
    status: str
    store_url: str


def txn_name(text: str) -> str:
    """A normalised statement as a transaction name the store keeps: itself when short
    enough, else its start and a digest of the whole (two statements never share one)."""
    if len(text) <= NAME_MOST:
        return text
    return f"{text[:NAME_MOST - 9]}~{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def check_interval(interval_s: float) -> float:
    if not (math.isfinite(interval_s) and interval_s >= MIN_INTERVAL_S):
        raise TpsbenchError(f"--interval must be at least {MIN_INTERVAL_S:g}s, got {interval_s:g}s")
    return interval_s


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def replay_stored(path: str, url: str | None, results_url: str | None, *, speed: float = 1.0,
                  stop_on_error: bool = False, storage: str = "", interval_s: float = 10.0,
                  live: Callable[[str], None] | None = None) -> StoredReplay:
    """Replay ``path`` against ``url`` and store it as a run; every refusal (trace, target,
    storage label, interval, results store) comes before the run is stored. ``live`` gets
    a line per interval as it ends. Ctrl-C ends the run interrupted with what was
    measured, then goes on up."""
    check_text("the storage label", storage, STORAGE_LABEL_MOST)
    check_interval(interval_s)
    trace, target, player = open_replay(path, url, speed, stop_on_error)
    facts = storage_facts(target, storage, None, None)
    label = storage or (facts.described.name if facts.described else "")
    observers = Observers(default_observers(target, facts.devices))
    store = ResultsStore(results_url)
    texts = trace.shapes()
    names = sorted({t for session in texts for t in session})
    short = {t: txn_name(t) for t in names}
    users = len(trace.sessions)
    duration = max((st.offset for s in trace.sessions for st in s.statements), default=0.0) / speed
    bounds = interval_bounds(0.0, max(duration, MIN_INTERVAL_S), min(interval_s, max(duration, MIN_INTERVAL_S)))
    config: dict[str, Any] = {"trace": os.path.basename(path), "trace_sha256": digest(path), "speed": speed,
                              "stop_on_error": stop_on_error, "interval_s": interval_s, "sessions": users,
                              "statements": {short[t]: t for t in names}, "storage": facts.stored()}
    run_id = store.start_run(WORKLOAD, db_url=target.describe(), storage=label, config=config,
                             server=target.server_info())
    status, notes = "failed", None

    live_cut = LiveCut(lambda: player.played, [[short[t] for t in s] for s in texts], speed, bounds, observers, live)

    def began(start: float) -> None:
        wall = time.time() + (start - time.perf_counter())
        observers.start_step(1, users, wall, bounds)
        live_cut.begin(start, wall)

    player.on_start = began
    store.start_step(run_id, 1, users, 0.0, duration)
    try:
        try:
            player.play()
            status = "completed"
        except KeyboardInterrupt:
            status = "interrupted"
            observers.halt()
            raise
        finally:
            elapsed = time.perf_counter() - player.start if player.start else 0.0
            step = StepOutcome(1, users, interrupted=status == "interrupted")
            step.intervals = live_cut.end(elapsed)
            step.summary = SteadySummary.from_reports(step.intervals, users, 1)
            step.observations = observers.steady()
            observers.end_step(1)
            if step.intervals:
                for report in step.intervals:
                    store.add_interval(run_id, report, users)
                finish_step(store, run_id, step, None, secrets_of(target.url))
        if player.first_error:
            status, notes = "failed", f"stopped at the first error (--stop-on-error): {player.first_error}"
        elif step.summary.total("commits") == 0:
            status, notes = "failed", "not one statement of the trace succeeded on the target"
    finally:
        store.finish_run(run_id, status, _HONESTY, notes)
    result = outcome(trace, player.played, speed, player.start, player.first_error)
    return StoredReplay(result, run_id, status, store.url)
