"""A trace's replay (tpsbench.commands.replay) recorded in the results store as a run of
workload ``replay`` with one step, so that ``report``, ``compare``, ``serve`` and the JSON
export show it as any run: its users are the trace's sessions, its transaction types its
normalised statements, its intervals and histograms cut from when each statement ended,
and the default step observers (host CPU, disk I/O ...) read beside it.

Why after the play rather than live: the player's hot path (one thread multiplexing every
session) must keep up with clients written in C; each statement's latency and start are
already kept per session, so cutting them into intervals afterwards costs the replay nothing.
Latency stays counted from each statement's scheduled start.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import os
import time
from dataclasses import dataclass
from typing import Any

from tpsbench.commands.replay import ReplayResult, open_replay, outcome
from tpsbench.commands.run_setup import default_observers
from tpsbench.commands.step_end import finish_step
from tpsbench.commands.storage import storage_facts
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import MIN_INTERVAL_S, check_text
from tpsbench.core.redact import secrets_of
from tpsbench.engine.coordinator import StepOutcome
from tpsbench.engine.protocol import interval_bounds
from tpsbench.measure.observers import Observers
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.reports import IntervalReport
from tpsbench.measure.summary import SteadySummary
from tpsbench.results.schema import STORAGE_LABEL_MOST
from tpsbench.results.store import ResultsStore
from tpsbench.workloads.replay.normalise import normalise
from tpsbench.workloads.replay.player import Played

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
                  stop_on_error: bool = False, storage: str = "", interval_s: float = 10.0) -> StoredReplay:
    """Replay ``path`` against ``url`` and store it as a run; every refusal (trace, target,
    storage label, interval, results store) comes before the run is stored. Ctrl-C ends
    the run interrupted with what was measured, then goes on up."""
    check_text("the storage label", storage, STORAGE_LABEL_MOST)
    check_interval(interval_s)
    trace, target, player = open_replay(path, url, speed, stop_on_error)
    facts = storage_facts(target, storage, None, None)
    label = storage or (facts.described.name if facts.described else "")
    observers = Observers(default_observers(target, facts.devices))
    store = ResultsStore(results_url)
    texts = [[normalise(st.text)[0] for st in s.statements] for s in trace.sessions]
    names = sorted({t for session in texts for t in session})
    users = len(trace.sessions)
    duration = max((st.offset for s in trace.sessions for st in s.statements), default=0.0) / speed
    bounds = interval_bounds(0.0, max(duration, MIN_INTERVAL_S), min(interval_s, max(duration, MIN_INTERVAL_S)))
    config: dict[str, Any] = {"trace": os.path.basename(path), "trace_sha256": digest(path), "speed": speed,
                              "stop_on_error": stop_on_error, "interval_s": interval_s, "sessions": users,
                              "statements": {txn_name(t): t for t in names}, "storage": facts.stored()}
    run_id = store.start_run(WORKLOAD, db_url=target.describe(), storage=label, config=config,
                             server=target.server_info())
    status, notes = "failed", None
    wall = [0.0]

    def began(start: float) -> None:
        wall[0] = time.time() + (start - time.perf_counter())
        observers.start_step(1, users, wall[0], bounds)

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
            step.intervals = cut(player.played, [[txn_name(t) for t in s] for s in texts], player.start, speed,
                                 wall[0], bounds, elapsed, observers)
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


def cut(played: list[Played], names: list[list[str]], start: float, speed: float, wall_start: float,
        bounds: list[tuple[float, float, bool]], elapsed: float, observers: Observers) -> list[IntervalReport]:
    """Each statement into the interval it ended in (a failure: the one it started in),
    as the engine's users record them; the tail after the last bound goes to the last
    interval, and intervals after ``elapsed`` (a Ctrl-C) are left out."""
    kept = [b for b in bounds if b[0] < elapsed] or bounds[:1]
    if not played or not start:
        return []
    every = sorted({n for session in names for n in session})
    recorders = [IntervalRecorder(every) for _ in kept]
    ends = [b[1] for b in kept]
    for p, session in zip(played, names):
        for i, latency in enumerate(p.latency_s):
            if latency is None:
                at = p.started[i] - start
            else:
                at = p.session.statements[i].offset / speed + latency
            k = min(bisect.bisect_left(ends, at), len(kept) - 1)
            if latency is None:
                recorders[k].error(session[i], p.errors[i])
            else:
                recorders[k].record(session[i], latency * 1e6, True)
    reports = []
    for k, (rec, (b0, b1, _)) in enumerate(zip(recorders, kept)):
        t1 = elapsed if k == len(kept) - 1 else b1
        report = rec.take(1, k, wall_start + b0, wall_start + t1, steady=True)
        report.observations = observers.interval(k)
        reports.append(report)
    return reports
