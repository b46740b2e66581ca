"""The coordinator: runs stepped user loads on worker processes and merges their intervals.

A run is a list of :class:`Step` (users, ramp-up, steady-state duration, interval). The
coordinator starts K worker processes ("spawn", so that nothing of the parent's state,
threads or connections leaks into them), deals the users of each step round-robin over
the first A of them (user u on worker u % A, so that a user keeps its worker and its
connection from one step to the next while A stays) and sends each a :class:`StepPlan`
with one absolute start time. Workers answer with one IntervalReport per interval; the
coordinator merges the reports of an interval once every live worker has sent it, prints
a live line, hands it to ``on_interval`` (the results store) and, at the end of the step,
summarises the steady-state intervals alone. K and A are ``--workers`` when given; by
default a step of u users gets ceil(u / n) workers, at most one per core, n being the
workload's ``users_per_worker`` (1, every core, unless fewer and fuller workers measured
cheaper).

Robustness is part of the measurement's honesty: a Ctrl-C stops the workers and keeps the
finished intervals; a worker that dies is noticed through its process sentinel, recorded,
and the step ends with what arrived (intervals it did not report are not steady).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from multiprocessing.connection import Connection, wait
from typing import Any

from tpsbench.api.metrics import IntervalReport, StepSummary, live_line
from tpsbench.api.session import RunContext, RunnableWorkload
from tpsbench.api.worker import (STOP_GRACE_S, StepDone, StepPlan, Stop, WorkerFailed, WorkerReady, interval_bounds,
                                 worker_main)
from tpsbench.errors import TpsbenchError
from tpsbench.targets import open_target
from tpsbench.targets.base import Target

__all__ = ["Step", "StepPlan", "StepResult", "RunOutcome", "RunStatus", "run_steps", "check_connection_limit"]

#: time between sending a plan and its start, so that every worker has it before it starts
START_LEAD_S = 0.3
#: a stopped (Ctrl-C) worker gets this long to report before it is killed; with the exit
#: that follows, a Ctrl-C returns within 5 s
STOP_WAIT_S = 2.5
#: a worker process must be up and importing done within this
READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Step:
    """One user load: ``users`` start over ``rampup_s``, then ``duration_s`` is measured.

    Users connect (when they have no connection yet) at their start, so without a ramp-up
    connection setup falls into the first measured interval: give every step a ramp-up.
    """

    users: int
    duration_s: float
    rampup_s: float = 0.0
    interval_s: float = 10.0
    #: host users whose sessions allow it on one shared thread per worker (tpsbench.api.multiplex)
    multiplex: bool = True


class RunStatus(str, Enum):
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"  # Ctrl-C: finished intervals kept


@dataclass
class StepResult:
    """What one step produced: merged intervals in order, and the steady-state summary."""

    step: int
    users: int
    #: one merged report per interval, ramp-up (steady=False), steady state, then the
    #: transactions still in flight at the end (steady=False): every commit is somewhere
    intervals: list[IntervalReport] = field(default_factory=list)
    summary: StepSummary | None = None  # None only until the step ends
    worker_pids: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    interrupted: bool = False

    def total(self) -> IntervalReport | None:
        """All intervals merged, steady or not: what the step did to the database."""
        if not self.intervals:
            return None
        merged = _copy(self.intervals[0])
        for report in self.intervals[1:]:
            merged.merge(report)
        return merged


@dataclass
class RunOutcome:
    status: RunStatus
    steps: list[StepResult]


def check_connection_limit(ctx: RunContext, steps: Sequence[Step], target: Target | None = None) -> None:
    """Refuse, in one line, a run whose largest step needs more connections than the server
    has (``target``: the run's, when the caller has it open already)."""
    target = target or open_target(ctx.url)
    most = max(step.users for step in steps)
    limit = target.connection_limit()
    if limit is not None and most > limit:
        hint = target.connection_limit_hint()
        raise TpsbenchError(f"{most} users need {most} connections but {target.describe()} accepts {limit} more"
                            f"{'; ' + hint if hint else ''}")


def run_steps(ctx: RunContext, workload: RunnableWorkload, steps: Sequence[Step],
              on_interval: Callable[[IntervalReport], None] | None = None,
              on_step: Callable[[StepResult], None] | None = None, *,
              workers: int | None = None, live: Callable[[str], None] | None = print) -> RunOutcome:
    """Run ``steps`` one after the other and return each step's result and the run status.

    ``workload`` must be picklable (it is sent to spawned processes). ``workers`` fixes
    the number of processes, every step spread over all of them (never more than the
    largest step's users). By default a step of ``u`` users runs on ceil(u / n) processes,
    at most one per core, where n is the workload's ``users_per_worker`` (1 unless the
    workload measured that fewer, fuller workers cost the client less). ``live`` gets one
    progress line per interval (None: quiet). ``on_interval`` gets every merged interval as it completes (steady or not; store them
    all, report only steady ones), ``on_step`` each finished :class:`StepResult`. Ctrl-C
    ends the run within a few seconds with status INTERRUPTED.
    """
    if not steps:
        raise TpsbenchError("no steps to run")
    for step in steps:
        if step.users < 1 or step.duration_s <= 0 or step.interval_s <= 0 or step.rampup_s < 0:
            raise TpsbenchError(f"bad step {step}: users >= 1, duration > 0, interval > 0, ramp-up >= 0")
    if workers is not None and workers < 1:
        raise TpsbenchError(f"workers must be at least 1, not {workers}")
    target = open_target(ctx.url)
    check_connection_limit(ctx, steps, target)
    most = max(step.users for step in steps)
    per_worker = 1 if workers else max(1, workload.users_per_worker(target, ctx.options))
    count = max(1, min(workers or os.cpu_count() or 1, -(-most // per_worker)))
    coordinator = Coordinator(ctx, workload, count, per_worker, on_interval, live)
    results: list[StepResult] = []
    with coordinator.sigint_handler():
        try:
            for number, step in enumerate(steps, start=1):
                if coordinator.interrupted:
                    break
                coordinator.ensure_workers()
                if coordinator.interrupted:
                    break
                result = coordinator.run_step(number, step)
                results.append(result)
                if on_step is not None:
                    on_step(result)
        finally:
            coordinator.shutdown()
    return RunOutcome(RunStatus.INTERRUPTED if coordinator.interrupted else RunStatus.COMPLETED, results)


class _WorkerHandle:
    def __init__(self, index: int, process: Any, pipe: Connection) -> None:
        self.index, self.process, self.pipe = index, process, pipe
        self.pid: int = process.pid

    def send(self, msg: object) -> bool:
        try:
            self.pipe.send(msg)
            return True
        except (OSError, EOFError):
            return False

    def exit_text(self) -> str:
        code = self.process.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return f"worker {self.index} (pid {self.pid}) {how}"


class Coordinator:
    """The worker pool of one run and the merging of their reports, step by step."""

    def __init__(self, ctx: RunContext, workload: RunnableWorkload, count: int, per_worker: int,
                 on_interval: Callable[[IntervalReport], None] | None, live: Callable[[str], None] | None) -> None:
        self.ctx, self.workload, self.count, self.per_worker = ctx, workload, count, per_worker
        self.on_interval, self.live = on_interval, live
        self.mp = mp.get_context("spawn")
        self.workers: list[_WorkerHandle | None] = [None] * count
        self.interrupted = False

    # -- Ctrl-C -----------------------------------------------------------------------
    @contextlib.contextmanager
    def sigint_handler(self) -> Iterator[None]:
        """Turn the first Ctrl-C into a flag the step loop acts on (signals reach the main thread only)."""
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            yield
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, signum: int, frame: object) -> None:
        if self.interrupted:  # a second Ctrl-C: stop waiting for anything
            raise KeyboardInterrupt
        self.interrupted = True

    # -- processes --------------------------------------------------------------------
    def ensure_workers(self) -> None:
        """Start the workers that are not running (all at first; replacements after a death)."""
        starting: dict[Connection, int] = {}
        for index, handle in enumerate(self.workers):
            if handle is not None and handle.process.is_alive():
                continue
            if handle is not None:
                handle.pipe.close()
            ours, theirs = self.mp.Pipe(duplex=True)
            process = self.mp.Process(target=worker_main, args=(index, theirs, self.workload, self.ctx),
                                      name=f"tpsbench-worker-{index}", daemon=True)
            process.start()
            theirs.close()  # so that the worker's death reads as EOF here
            self.workers[index] = _WorkerHandle(index, process, ours)
            starting[ours] = index
        deadline = time.monotonic() + READY_TIMEOUT_S
        while starting and not self.interrupted:
            sentinels = {self.workers[i].process.sentinel: i for i in starting.values()}
            ready = wait([*starting, *sentinels], timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            for item in ready:
                if item in starting:
                    index = starting.pop(item)
                    try:
                        msg = item.recv()
                    except (EOFError, OSError):
                        msg = None
                    if isinstance(msg, WorkerFailed):
                        raise TpsbenchError(f"worker {index} failed to start: {msg.message}")
                    if not isinstance(msg, WorkerReady):
                        raise TpsbenchError(f"{self.workers[index].exit_text()} while starting")
                elif sentinels.get(item) in starting.values():
                    raise TpsbenchError(f"{self.workers[sentinels[item]].exit_text()} while starting")
            if time.monotonic() > deadline:
                raise TpsbenchError(f"worker processes did not start within {READY_TIMEOUT_S:.0f} s")

    def shutdown(self) -> None:
        for handle in self.workers:
            if handle is not None:
                handle.send(Stop())
        deadline = time.monotonic() + (1.0 if self.interrupted else STOP_WAIT_S)
        for handle in self.workers:
            if handle is not None:
                handle.process.join(max(0.0, deadline - time.monotonic()))
                if handle.process.is_alive():
                    handle.process.kill()
                    handle.process.join(1.0)
                handle.pipe.close()

    # -- one step ---------------------------------------------------------------------
    def run_step(self, number: int, step: Step) -> StepResult:
        handles = [h for h in self.workers if h is not None]
        result = StepResult(number, step.users, worker_pids=[h.pid for h in handles])
        start_at = time.time() + START_LEAD_S
        think = self.ctx.options.get("think", "off") != "off"
        sent: set[int] = set()
        active = min(self.count, -(-step.users // self.per_worker))
        for handle in handles:
            users = list(range(handle.index, step.users, active)) if handle.index < active else []
            plan = StepPlan(number, users, step.users,
                            step.rampup_s, step.duration_s, step.interval_s, start_at, think, step.multiplex)
            if handle.send(plan):
                sent.add(handle.index)
            else:
                result.problems.append(f"{handle.exit_text()} before step {number}")
        emit = functools.partial(self.emit, step.users, start_at, [b[2] for b in interval_bounds(plan)])
        merger = _IntervalMerger(sent, emit)
        pending = {h.pipe: h for h in handles if h.index in sent}
        hard_deadline = start_at + step.rampup_s + step.duration_s + STOP_GRACE_S + 30.0
        stop_deadline: float | None = None
        while pending:
            if self.interrupted and stop_deadline is None:
                stop_deadline = time.monotonic() + STOP_WAIT_S
                result.interrupted = True
                for handle in pending.values():
                    handle.send(Stop())
            sentinels = {h.process.sentinel: h for h in pending.values()}
            for item in wait([*pending, *sentinels], timeout=0.2):
                handle = pending.get(item) or sentinels[item]
                if handle.pipe not in pending:
                    continue
                if not self.drain(handle, merger, result):
                    del pending[handle.pipe]
            late = (stop_deadline is not None and time.monotonic() > stop_deadline) or time.time() > hard_deadline
            if late:
                for handle in list(pending.values()):
                    handle.process.kill()
                    handle.process.join(1.0)
                    result.problems.append(f"worker {handle.index} (pid {handle.pid}) did not finish step "
                                           f"{number} in time and was killed")
                    merger.lost(handle.index)
                    del pending[handle.pipe]
        result.intervals = merger.flush()
        result.summary = StepSummary.from_reports(result.intervals, step.users, number)
        return result

    def drain(self, handle: _WorkerHandle, merger: _IntervalMerger, result: StepResult) -> bool:
        """Read everything the worker sent; False once it is done with the step (or dead)."""
        try:
            while handle.pipe.poll():
                msg = handle.pipe.recv()
                if isinstance(msg, WorkerFailed):
                    result.problems.append(f"worker {handle.index} failed: {msg.message}")
                elif isinstance(msg, StepDone):
                    result.problems.extend(f"worker {handle.index}: {p}" for p in msg.problems)
                    merger.done(handle.index)
                    return False
                else:
                    merger.add(handle.index, msg)
            if handle.process.exitcode is None:
                return True
        except (EOFError, OSError):
            pass  # the pipe reads as closed once the worker is gone
        handle.process.join(1.0)
        result.problems.append(f"{handle.exit_text()} during step {result.step}; the step ends with what arrived")
        merger.lost(handle.index)
        return False

    def emit(self, users: int, start_at: float, planned: list[bool], report: IntervalReport) -> None:
        """Hand a merged interval on; the live line skips the in-flight tail (a fraction of a second)."""
        if self.live is not None and report.interval < len(planned):
            note = "" if report.steady else " (ramp-up)" if not planned[report.interval] else " (partial)"
            self.live(live_line(report, users, report.t_end - start_at) + note)
        if self.on_interval is not None:
            self.on_interval(report)


class _IntervalMerger:
    """Merges the workers' reports interval by interval, in order.

    An interval is emitted once every worker still expected has sent it. A worker that
    dies stops being expected; the intervals it did not report are kept but marked not
    steady, so that the summary covers only intervals that saw the whole load.
    """

    def __init__(self, expected: set[int], emit: Callable[[IntervalReport], None]) -> None:
        self.expected = set(expected)
        self.everyone = frozenset(expected)
        self.emit = emit
        self.parts: dict[int, dict[int, IntervalReport]] = {}
        self.out: list[IntervalReport] = []
        self.next = 0

    def add(self, worker: int, report: IntervalReport) -> None:
        self.parts.setdefault(report.interval, {})[worker] = report
        self.release()

    def done(self, worker: int) -> None:
        self.expected.discard(worker)
        self.release()

    def lost(self, worker: int) -> None:
        self.expected.discard(worker)
        self.release()

    def release(self, force: bool = False) -> None:
        while self.next in self.parts:
            parts = self.parts[self.next]
            if not force and not self.expected <= parts.keys():
                return
            del self.parts[self.next]
            self.next += 1
            reports = [parts[w] for w in sorted(parts)]
            merged = _copy(reports[0])
            for report in reports[1:]:
                merged.merge(report)
            merged.steady = all(r.steady for r in reports) and parts.keys() >= self.everyone
            self.out.append(merged)
            self.emit(merged)

    def flush(self) -> list[IntervalReport]:
        self.release(force=True)
        for number in sorted(self.parts):  # gaps can only follow a lost worker
            self.next = number
            self.release(force=True)
        return self.out


def _copy(report: IntervalReport) -> IntervalReport:
    """A fresh report to merge into, so that the workers' reports stay as they were sent."""
    return copy.deepcopy(report)
