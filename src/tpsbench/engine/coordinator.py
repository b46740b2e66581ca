"""The coordinator: runs stepped user loads on workers and merges their intervals.

A run is a list of :class:`LoadStep` (users, ramp-up, steady-state duration, interval).
:func:`plan_run` checks it before anything happens (a refused run leaves no trace) and
sizes the worker pool; :func:`run_plan` runs it. The coordinator reaches its workers
only through a :class:`~tpsbench.engine.transport.Transport` (local processes by
default), deals the users of each step round-robin over the first A of them (user u on
worker u % A, so that a user keeps its worker and its connection from one step to the
next while A stays) and sends each a :class:`WorkerStep` with one absolute start time.
Workers answer with one IntervalReport per interval; the coordinator merges the reports
of an interval once every live worker has sent it, adds what the step observers read
over it, prints a live line, hands it to ``on_interval`` (the results store) and, at
the end of the step, summarises the steady-state intervals alone (how many workers:
:func:`plan_run`). A step with ``least_s`` ends once steady (tpsbench.engine.until_steady).

Robustness is part of the measurement's honesty: a Ctrl-C stops the workers and keeps the
finished intervals; a worker that dies is noticed through the transport, recorded, and
the step ends with what arrived (intervals it did not report are not steady). A callback
that raises (the results store cannot be written) stops the run the way a Ctrl-C does,
and its exception is raised once the workers are stopped: a run that cannot keep what it
measures must not go on measuring.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from tpsbench.core.delays import waits_of
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.core.workload import Workload
from tpsbench.engine.descriptors import raise_soft_limit, refuse_descriptors
from tpsbench.engine.interrupts import Interruptible
from tpsbench.engine.local import LocalProcesses
from tpsbench.engine.merge import IntervalMerger, fresh_copy
from tpsbench.engine.pacing import PACING, refuse_rate, share, step_figures
from tpsbench.engine.protocol import (
    STOP_GRACE_S,
    EndStep,
    Stop,
    WorkerFailed,
    WorkerLost,
    WorkerReady,
    WorkerStep,
    WorkerStepDone,
    interval_bounds,
)
from tpsbench.engine.steps import LoadStep, check_steps
from tpsbench.engine.transport import Transport
from tpsbench.engine.until_steady import UNTIL_STEADY, SteadyWatch, watch_for
from tpsbench.measure.host_cpu import worker_hosts
from tpsbench.measure.observers import Observers, Readings, StepObserver
from tpsbench.measure.reports import IntervalReport, clock, live_line, merge_readings
from tpsbench.measure.summary import SteadySummary
from tpsbench.targets import open_target

#: time between sending a plan and its start, so that every worker has it before it starts
START_LEAD_S = 0.3
#: a stopped (Ctrl-C) worker gets this long to report before it is killed; with the exit after, Ctrl-C takes < 5 s
STOP_WAIT_S = 2.5
#: a worker must be up and its imports done within this
READY_TIMEOUT_S = 60.0

T = TypeVar("T")


class RunStatus(str, Enum):
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"  # Ctrl-C: finished intervals kept


@dataclass
class StepOutcome:
    """What one step produced: merged intervals in order, the steady-state summary, the
    step observers' readings over the steady window, and what went wrong."""

    step: int
    users: int
    #: one merged report per interval, ramp-up (steady=False), steady state, then the
    #: transactions still in flight at the end (steady=False): every commit is somewhere
    intervals: list[IntervalReport] = field(default_factory=list)
    summary: SteadySummary | None = None  # None only until the step ends
    worker_pids: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: the workers that ended before their last report (lost, or killed for being late):
    #: what they committed since their last report is in no interval (the honesty check says so)
    unreported: list[str] = field(default_factory=list)
    interrupted: bool = False
    observations: Readings = field(default_factory=dict)

    def total(self) -> IntervalReport | None:
        """All intervals merged, steady or not: what the step did to the database."""
        if not self.intervals:
            return None
        merged = fresh_copy(self.intervals[0])
        for report in self.intervals[1:]:
            merged.merge(report)
        return merged


@dataclass
class RunOutcome:
    status: RunStatus
    steps: list[StepOutcome]
    #: what interrupted the run: signal.SIGINT (Ctrl-C), SIGTERM or SIGHUP; None if nothing did
    signal: int | None = None
    #: the warm-up before the first step (step 0), if any: its intervals are never steady
    warmup: StepOutcome | None = None

    def phases(self) -> list[StepOutcome]:
        """The warm-up, if any, then the steps: everything the run did to the database."""
        return [self.warmup, *self.steps] if self.warmup is not None else list(self.steps)


@dataclass(frozen=True)
class RunPlan:
    """A checked run: its steps and the size of its worker pool (see :func:`plan_run`)."""

    ctx: RunContext
    workload: Workload
    steps: tuple[LoadStep, ...]
    #: the driver processes (workers) the steps run on
    processes: int
    #: users a worker hosts before a step spreads over the next one
    per_worker: int
    #: a preconditioning phase run as step 0 before the first step, never measured (None: none)
    warmup: LoadStep | None = None


def plan_run(ctx: RunContext, workload: Workload, steps: Sequence[LoadStep], *, processes: int | None = None,
             target: Target | None = None, beside: int = 0, capacity: int | None = None,
             warmup: LoadStep | None = None) -> RunPlan:
    """Check a run before it starts and size its workers; a one-line error refuses it.

    Refused: no steps, a step that cannot be measured, a process count below 1, a largest
    step that needs more connections than the server has free, or more sockets in one
    worker than the hard limit on open files allows (whose soft limit is raised here
    first, for this process and the workers it starts: tpsbench.engine.descriptors).
    ``processes`` fixes the number of workers (driver processes), every step spread over all
    of them (never more than the largest step's users); by default a step of ``u`` users
    runs on ceil(u / n) of them, at most one per core, n being the workload's
    ``users_per_worker``. ``beside``:
    connections the caller holds through the steps besides the users' (an observer's).
    ``capacity``: how many workers there is room for by default (None: this host's
    cores; a Dask cluster's Dask workers, tpsbench.engine.dask.cluster). ``warmup``: a step
    run first as step 0, at no more users than the largest step.
    """
    check_steps([*steps, *([warmup] if warmup else [])])
    if processes is not None and processes < 1:
        raise TpsbenchError(f"processes must be at least 1, not {processes}")
    raise_soft_limit()
    target = target or open_target(ctx.url)
    most = max(step.users for step in steps)
    limit = target.connection_limit()
    if limit is not None and most + beside > limit:
        hint = target.connection_limit_hint()
        extra = f" (and {beside} for tpsbench's observers)" if beside else ""
        raise TpsbenchError(f"{most} users need {most} connections{extra} but {target.describe()} accepts {limit} "
                            f"more{'; ' + hint if hint else ''}")
    per_worker = 1 if processes else max(1, workload.users_per_worker(target, ctx.options))
    # the cores this process may run on (taskset, a container's cpuset), not the machine's:
    # a driver pinned beside its server must not start a worker per core it cannot use
    count = max(1, min(processes or capacity or len(os.sched_getaffinity(0)), -(-most // per_worker)))
    refuse_descriptors(most, count)
    for step in steps:
        refuse_rate(step.rate, step.users, count)
    return RunPlan(ctx, workload, tuple(steps), count, per_worker, warmup)


def run_plan(plan: RunPlan, on_interval: Callable[[IntervalReport], None] | None = None,
             on_step: Callable[[StepOutcome], None] | None = None, *, live: Callable[[str], None] | None = print,
             observers: Sequence[StepObserver] = (), transport: Transport | None = None,
             before_step: Callable[[int], None] | None = None) -> RunOutcome:
    """Run the plan's steps one after the other; each step's outcome and the run status.

    ``live`` gets one progress line per interval (None: quiet). ``on_interval`` gets every merged interval as it
    completes (steady or not; store them all, report only steady ones), with the ``observers``' readings over it;
    ``on_step`` each finished :class:`StepOutcome`. ``transport`` reaches the workers (default: local processes; the
    workload must be picklable). Ctrl-C ends the run within a few seconds with status INTERRUPTED; so does an
    exception from ``on_interval`` or ``on_step``, which is then raised here once the workers are stopped.
    ``before_step(n)`` runs before step n is sent (a server restart): its users then start on new connections.
    """
    transport = transport or LocalProcesses(plan.processes)
    coordinator = Coordinator(plan, transport, Observers(observers), on_interval, live)
    results: list[StepOutcome] = []
    warmup: StepOutcome | None = None
    with coordinator.sigint_handler():
        try:
            for number, step in ([(0, plan.warmup)] if plan.warmup else []) + list(enumerate(plan.steps, start=1)):
                if coordinator.interrupted:
                    break
                coordinator.ensure_workers()
                coordinator.deliver(before_step, number)
                if coordinator.interrupted:
                    break
                result = coordinator.run_step(number, step, fresh=before_step is not None)
                if number == 0:  # the warm-up: kept apart, and not handed on as a step
                    warmup = result
                else:
                    results.append(result)
                    coordinator.deliver(on_step, result)
        finally:
            transport.close(1.0 if coordinator.interrupted else STOP_WAIT_S)
    if coordinator.failure is not None:
        raise coordinator.failure
    return RunOutcome(RunStatus.INTERRUPTED if coordinator.interrupted else RunStatus.COMPLETED, results,
                      coordinator.signal, warmup)


def run_steps(ctx: RunContext, workload: Workload, steps: Sequence[LoadStep],
              on_interval: Callable[[IntervalReport], None] | None = None,
              on_step: Callable[[StepOutcome], None] | None = None, *,
              processes: int | None = None, live: Callable[[str], None] | None = print,
              observers: Sequence[StepObserver] = ()) -> RunOutcome:
    """:func:`plan_run`, then :func:`run_plan`: the engine in one call."""
    return run_plan(plan_run(ctx, workload, steps, processes=processes), on_interval, on_step, live=live,
                    observers=observers)


class Coordinator(Interruptible):
    """The workers of one run and the merging of their reports, step by step."""

    def __init__(self, plan: RunPlan, transport: Transport, observers: Observers,
                 on_interval: Callable[[IntervalReport], None] | None, live: Callable[[str], None] | None) -> None:
        self.plan, self.transport, self.observers = plan, transport, observers
        self.on_interval, self.live = on_interval, live
        super().__init__()
        #: what a callback raised, if one did: run_plan raises it once the workers are stopped
        self.failure: Exception | None = None
        #: the step's steadiness watch (--until-steady) and the workers to end it on
        self.watch: SteadyWatch | None = None
        self.watched: set[int] = set()

    def deliver(self, callback: Callable[[T], None] | None, value: T) -> None:
        """Hand ``value`` to the caller's callback; one that raises stops the run as a
        Ctrl-C does, and nothing more is handed on (the store that failed would only fail
        again, or keep a run with holes in it)."""
        if callback is None or self.failure is not None:
            return
        try:
            callback(value)
        except Exception as exc:  # noqa: BLE001 - any failure stops the run; run_plan raises it
            self.interrupted, self.failure = True, exc

    # -- workers ----------------------------------------------------------------------
    def ensure_workers(self) -> None:
        """Start the workers that are not running (all at first; replacements after a death)."""
        starting = set()
        for index in range(self.plan.processes):
            if not self.transport.alive(index):
                self.transport.start(index, self.plan.workload, self.plan.ctx)
                starting.add(index)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while starting and not self.interrupted:
            for index, msg in self.transport.receive(min(0.2, max(0.0, deadline - time.monotonic()))):
                if index not in starting:
                    continue
                if isinstance(msg, WorkerFailed):
                    raise TpsbenchError(f"worker {index} failed to start: {msg.message}")
                if isinstance(msg, WorkerLost):
                    raise TpsbenchError(f"{msg.why} while starting")
                if isinstance(msg, WorkerReady):
                    starting.discard(index)
            if starting and time.monotonic() > deadline:
                raise TpsbenchError(f"worker processes did not start within {READY_TIMEOUT_S:.0f} s")

    # -- one step ---------------------------------------------------------------------
    def run_step(self, number: int, step: LoadStep, fresh: bool = False) -> StepOutcome:
        plan, transport = self.plan, self.transport
        result = StepOutcome(number, step.users, worker_pids=transport.pids())
        start_at = time.time() + START_LEAD_S
        waits = waits_of(plan.ctx.options)
        think, paced = waits.around, step.rate > 0 or waits.interarrival.waits
        active = min(plan.processes, -(-step.users // plan.per_worker))
        sent: set[int] = set()
        for index in range(plan.processes):
            users = list(range(index, step.users, active)) if index < active else []
            message = WorkerStep(number, users, step.users, step.rampup_s, step.duration_s, step.interval_s,
                                 start_at, think, step.multiplex, active, rate=share(step.rate, len(users), step.users),
                                 arrivals=step.arrivals, phase=index / active, seed=plan.ctx.seed,
                                 trace_dir=step.trace_dir, fresh=fresh)
            if transport.send(index, message):
                sent.add(index)
            else:
                result.problems.append(f"{transport.describe(index)} could not be reached before step {number}")
        bounds = interval_bounds(step.rampup_s, step.duration_s, step.interval_s)
        self.observers.start_step(number, step.users, start_at, bounds)
        merger = IntervalMerger(sent, functools.partial(self.emit, number, step, start_at, [b[2] for b in bounds],
                                                        paced))
        hosts: Readings = {}  # what workers on other hosts read of them over the steady window
        self.watch, self.watched = watch_for(step), sent
        try:
            self.collect(number, step, start_at, sent, merger, result, hosts)
        finally:
            self.observers.end_step(number)
        result.intervals = merger.flush()
        result.summary = SteadySummary.from_reports(result.intervals, step.users, number)
        result.observations = self.observers.steady() | worker_hosts(hosts)
        if self.watch is not None:  # which happened, said and stored with the step
            result.observations[UNTIL_STEADY] = self.watch.reading()
            if self.live is not None:
                self.live(self.watch.line(f"step {number}" if number else "the warm-up"))
        if paced:
            steady = [(r.seconds, r.arrivals, r.total("commits") + r.total("rollbacks"), r.queue)
                      for r in result.intervals if r.steady]
            if steady:
                result.observations[PACING] = step_figures(steady)
        return result

    def collect(self, number: int, step: LoadStep, start_at: float, pending: set[int], merger: IntervalMerger,
                result: StepOutcome, hosts: Readings) -> None:
        """Take the workers' messages until each is done with the step, stopped or lost;
        ``hosts`` gets the worker hosts' readings over the steady window."""
        transport = self.transport
        hard_deadline = start_at + step.rampup_s + step.duration_s + STOP_GRACE_S + 30.0
        stop_deadline: float | None = None
        while pending:
            if self.interrupted and stop_deadline is None:
                stop_deadline = time.monotonic() + STOP_WAIT_S
                result.interrupted = True
                self.observers.halt()  # the partial interval is not worth a wait
                for index in pending:
                    transport.send(index, Stop())
            for index, msg in transport.receive(0.2):
                if index not in pending:
                    continue
                if isinstance(msg, IntervalReport):
                    merger.add(index, msg)
                elif isinstance(msg, WorkerStepDone):
                    result.problems.extend(f"worker {index}: {p}" for p in msg.problems)
                    merge_readings(hosts, msg.hosts)
                    merger.done(index)
                    pending.discard(index)
                elif isinstance(msg, WorkerFailed):
                    result.problems.append(f"worker {index} failed: {msg.message}")
                elif isinstance(msg, WorkerLost):
                    result.problems.append(f"{msg.why} during step {number}; the step ends with what arrived")
                    result.unreported.append(f"{msg.why} during step {number}")
                    merger.lost(index)
                    pending.discard(index)
            late = (stop_deadline is not None and time.monotonic() > stop_deadline) or time.time() > hard_deadline
            if late:
                for index in sorted(pending):
                    result.problems.append(f"{transport.describe(index)} did not finish step {number} in time "
                                           "and was killed")
                    result.unreported.append(f"{transport.describe(index)} was killed in step {number}")
                    transport.kill(index)
                    merger.lost(index)
                pending.clear()

    def emit(self, number: int, step: LoadStep, start_at: float, planned: list[bool], paced: bool,
             report: IntervalReport) -> None:
        """Hand a merged interval on, with the observers' readings over it; the live line
        skips the in-flight tail (a fraction of a second). Once a callback failed, what
        arrives while the workers stop is neither kept nor said. The warm-up's (step 0) are
        never steady: no reader of the store can count them in a step's figures."""
        if self.failure is not None:
            return
        if self.watch is not None and self.watch.add(report, report.steady) and not self.interrupted:
            for index in self.watched:
                self.transport.send(index, EndStep(number))
        report.steady = report.steady and number > 0
        report.observations = self.observers.interval(report.interval) | worker_hosts(report.hosts)
        pacing: tuple[str, ...] = ()
        if paced and report.seconds:
            report.observations[PACING] = {"offered_per_s": report.arrivals / report.seconds,
                                           "queue": float(report.queue)}
            pacing = (f"offered {report.arrivals / report.seconds:.1f}/s, queue {report.queue}",)
        if self.live is not None and report.interval < len(planned):
            steady = report.steady or (number == 0 and planned[report.interval])  # the warm-up says so in its place
            notes = (*pacing, *(() if steady else ("ramp-up",) if not planned[report.interval] else ("partial",)))
            elapsed = report.t_end - start_at
            left = f"{clock(step.rampup_s + step.duration_s - elapsed)} left"
            where = f"{number}/{len(self.plan.steps)}" if number else "warm-up"
            self.live(live_line(report, step.users, elapsed, where, (*notes, left)))
        self.deliver(self.on_interval, report)
