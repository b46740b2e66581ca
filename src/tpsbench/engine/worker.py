"""A worker: the load generator side of the engine, one per process (or host).

A worker hosts many virtual users (tpsbench.engine.users), each with a thread and its
own synchronous DB-API connection. Threads, not asyncio, by measurement
(bench/experiments/results/engine_threads_vs_asyncio.txt): for the same point select psycopg's sync
API costs the client less CPU per transaction than its asyncio API and gives more
transactions per second in one process, and PyMySQL has no asyncio API at all. Drivers
release the GIL while waiting on the server, so a few hundred mostly waiting users per
process cost little; CPU-bound work is spread by running one process per core. Users
whose sessions send statement by statement on libpq or mysqlclient run on the worker's
shared thread instead, one epoll loop for all of them (tpsbench.engine.multiplex), which
costs less CPU again (bench/results/engine_tpcc.txt), with no thread of their own: a few
connecting threads connect and reconnect them (tpsbench.engine.hosting). The workload's
background components (TPC-C's deferred Delivery) run beside them for the whole step, as
users of their own.

The worker talks to the coordinator only through its :class:`~tpsbench.engine.transport.WorkerLink`,
in the messages of tpsbench.engine.protocol: :class:`WorkerStep` or :class:`Stop` in;
:class:`WorkerReady`, one :class:`~tpsbench.measure.reports.IntervalReport` per interval
and :class:`WorkerStepDone` out.

Statements by kind: a session may count the statements it sent (``Session.statement_counts``).
The worker reads them from its own thread at every interval and reports the growth, so
the hot path pays nothing for it beyond the session's own counting. A statement falls
in the interval in which the worker saw it counted (at most the transaction in flight
at a boundary lands one interval apart from its commit); every statement counted is
reported exactly once.
"""

from __future__ import annotations

import functools
import gc
import os
import threading
import time
from pathlib import Path

from tpsbench.core.delays import waits_of
from tpsbench.core.errors import first_line
from tpsbench.core.session import Background, RunContext
from tpsbench.core.signals import ignore_here
from tpsbench.core.workload import Workload
from tpsbench.engine.descriptors import raise_soft_limit
from tpsbench.engine.hosting import Hosting
from tpsbench.engine.multiplex import Multiplexer
from tpsbench.engine.pacing import TIMINGS, Schedule
from tpsbench.engine.protocol import (
    STOP_GRACE_S,
    EndStep,
    WorkerFailed,
    WorkerReady,
    WorkerStep,
    WorkerStepDone,
    interval_bounds,
)
from tpsbench.engine.transport import WorkerLink
from tpsbench.engine.users import UserStep, VirtualUser, guarded
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.targets import open_target


class Worker:
    """Runs the steps the coordinator sends, reporting interval by interval."""

    def __init__(self, index: int, link: WorkerLink, workload: Workload, ctx: RunContext) -> None:
        self.index = index
        self.link = link
        self.workload = workload
        self.ctx = ctx
        self.target = open_target(ctx.url)
        self.recorder = IntervalRecorder(workload.transaction_names, workload.timing_names)
        self.users: dict[int, VirtualUser] = {}
        #: this step's background components, each run as a user of its own
        self.background: list[tuple[Background, VirtualUser]] = []
        self.last_users_in_step = 0
        self.stopped = False
        #: the step under way, and whether the coordinator ended it (EndStep: it reached steady state)
        self.step, self.ending = 0, False
        #: this step's arrivals per user when it is paced (tpsbench.engine.pacing)
        self.schedules: dict[int, Schedule] = {}
        self.start_mono = 0.0
        #: the schedule's arrivals reported so far in this step
        self.arrived = 0

    def serve(self) -> None:
        self.link.send(WorkerReady(self.index, os.getpid()))
        while not self.stopped:
            msg = self.link.poll(None)
            if isinstance(msg, WorkerStep):
                self.run_step(msg)
            elif not isinstance(msg, EndStep):  # an EndStep of a step over already: nothing to end
                break
        for user in self.users.values():
            user.close()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless the coordinator says stop, or end this step; True then."""
        deadline = time.monotonic() + seconds
        while not (self.stopped or self.ending) and (left := deadline - time.monotonic()) > 0:
            msg = self.link.poll(left)
            if isinstance(msg, EndStep):
                self.ending = msg.step == self.step  # one of a step over already: wait on
            elif msg is not None:
                self.stopped = True  # anything but a plan mid-step means stop
        return self.stopped or self.ending

    def prepare_users(self, plan: WorkerStep) -> None:
        """Keep connections when the step has at least as many users as the last one.

        Connection setup is not part of any measured transaction (users connect during
        ramp-up, before the steady window), so reusing a connection changes no number;
        it only saves the server a burst of forks between steps. A smaller step starts
        from fresh connections, as a run at that user count alone would, and so does a
        step after a server restart (``plan.fresh``: the kept ones are dead).
        """
        if plan.users_in_step < self.last_users_in_step or plan.fresh:
            for user in self.users.values():
                user.close()
            self.users.clear()
        for uid in list(self.users):
            if uid not in plan.users:
                self.users.pop(uid).close()
        for uid in plan.users:
            if uid not in self.users:
                self.users[uid] = VirtualUser(uid, self.target, self.recorder)
        for user in self.users.values():
            user.session, user.counted, user.thread = None, {}, None
            user.trace = [] if plan.trace_dir else None
        self.last_users_in_step = plan.users_in_step

    def run_step(self, plan: WorkerStep) -> None:
        problems: list[str] = []
        self.step, self.ending = plan.step, False
        self.prepare_users(plan)
        start_mono = self.start_mono = time.monotonic() + (plan.start_at - time.time())
        stop = threading.Event()
        self.schedules, self.arrived = self.pace(plan, start_mono), 0
        paced = bool(self.schedules)
        mux = Multiplexer(self.target, self.recorder, stop, plan.think) if plan.multiplex and not paced else None
        hosting = Hosting(mux, stop, problems) if mux is not None else None
        if mux is not None:
            mux.start()
        # before the users open their sessions, which may hand work to them
        self.start_background(plan, start_mono, stop, problems)
        # no take() here: a straggler of the last step that finished late (see below) is
        # counted in this step's first interval rather than lost
        for uid in plan.users:
            user = self.users[uid]
            # user ids are 0..users_in_step-1: the ramp-up stagger is global
            slot = start_mono + plan.rampup_s * uid / max(plan.users_in_step, 1)
            opener = functools.partial(self.workload.open_session, self.ctx, uid, plan.users_in_step)
            step = UserStep(opener, start_mono=slot, stop=stop, think=plan.think, schedule=self.schedules.get(uid))
            if hosting is not None:
                hosting.start(user, f"user {uid}", step)
            else:
                self.start(user, f"user {uid}", step, problems)
        bounds = interval_bounds(plan.rampup_s, plan.duration_s, plan.interval_s)
        number = 0
        for number, (begin, end, steady) in enumerate(bounds):
            if self.wait(start_mono + end - time.monotonic()):
                break
            self.send_report(plan, number, begin, end, steady)
            if mux is not None:  # what users made since they were hosted joins them (Hosting.arrive)
                gc.freeze()
        else:
            number = len(bounds)
        cut = time.monotonic()
        stop.set()
        for component, _ in self.background:
            component.stop()
        if mux is not None and hosting is not None:
            mux.wake()
            hosting.wake()
        deadline = cut + (1.0 if self.stopped else STOP_GRACE_S)
        self.join_all(plan, cut, deadline, problems, hosting.wait(deadline) if hosting is not None else set())
        if mux is not None:
            mux.join(max(0.0, deadline - time.monotonic()))
            gc.unfreeze()  # the step's users, frozen as they were hosted (Hosting.arrive)
            if mux.in_doubt:
                problems.append(f"the shared thread gave up on {mux.in_doubt} transaction(s) still out after"
                                f" {deadline - cut:.0f} s, counted in doubt")
        # the stragglers: transactions in flight at the end (or at a stop) are reported too
        ended = (self.stopped or self.ending) and number < len(bounds)
        begin = bounds[number][0] if ended else (bounds[-1][1] if bounds else 0.0)
        self.send_report(plan, number, begin, time.monotonic() - start_mono, False)
        if plan.trace_dir and self.schedules:
            self.write_trace(plan, problems)
        self.link.send(WorkerStepDone(self.index, plan.step, self.stopped, problems))

    def pace(self, plan: WorkerStep, start_mono: float) -> dict[int, Schedule]:
        """The schedule of each user of a paced step (none: a closed loop), and the recorder
        told of the pacing timings. --rate: one schedule the worker's users share, from
        when the step's last user reaches its ramp-up slot; --interarrival: one per user,
        from its own slot."""
        timings = self.workload.timing_names
        interarrival = waits_of(self.ctx.options).interarrival
        if not plan.users or not (plan.rate > 0 or interarrival.waits):
            self.recorder.set_timings(timings)
            return {}
        self.recorder.set_timings((*timings, *TIMINGS))

        def slot(uid: int) -> float:
            return start_mono + plan.rampup_s * uid / plan.users_in_step

        if plan.rate > 0:
            seed = hash((plan.seed, plan.step, self.index)) & 0x7FFFFFFF
            shared = Schedule.at_rate(plan.rate, plan.arrivals, int(slot(plan.users_in_step - 1) * 1e9), seed,
                                      plan.phase)
            return dict.fromkeys(plan.users, shared)
        return {uid: Schedule(interarrival, int(slot(uid) * 1e9), hash((plan.seed, plan.step, uid)) & 0x7FFFFFFF)
                for uid in plan.users}

    def write_trace(self, plan: WorkerStep, problems: list[str]) -> None:
        """The step's transactions, one line each: user, name, scheduled start, start and
        end (ns since the step's start), committed; a failure to write is a problem of the step."""
        path = Path(plan.trace_dir) / f"step{plan.step}-worker{self.index}.csv"
        zero = int(self.start_mono * 1e9)
        try:
            with path.open("w", encoding="utf-8") as out:
                out.write("user,txn,scheduled_ns,start_ns,end_ns,committed\n")
                for uid, user in self.users.items():
                    for name, intended, started, done, committed in user.trace or ():
                        out.write(f"{uid},{name},{intended - zero},{started - zero},{done - zero},{int(committed)}\n")
        except OSError as exc:
            problems.append(f"could not write the trace {path}: {exc.strerror or exc}")

    def start_background(self, plan: WorkerStep, start_mono: float, stop: threading.Event,
                         problems: list[str]) -> None:
        """The workload's components for this step, each on a thread and connection of its own."""
        self.background = []
        if not plan.users:
            return
        for number, component in enumerate(self.workload.background(self.ctx, self.index, plan.workers)):
            user = VirtualUser(-1 - number, self.target, self.recorder)
            self.background.append((component, user))
            opener = functools.partial(component.open_session, self.ctx, timing=self.recorder.record_timing)
            self.start(user, component.name, UserStep(opener, start_mono=start_mono, stop=stop), problems)

    def start(self, user: VirtualUser, who: str, step: UserStep, problems: list[str]) -> None:
        """``user``'s thread for this step, named ``who``; what ends it is one of ``problems``."""
        user.thread = threading.Thread(target=guarded, args=(functools.partial(user.run, step), who, problems),
                                       name=who, daemon=True)
        user.thread.start()

    def join_all(self, plan: WorkerStep, cut: float, deadline: float, problems: list[str],
                 out: set[VirtualUser]) -> None:
        """Wait for every user's and component's thread until ``deadline``; one that has
        not ended, or a hosted user still ``out`` (Hosting.wait), is given up on, and its
        connection with it: the transaction it has in flight (blocked on a lock, a server
        that stopped answering) may yet commit or not, so it is counted in doubt, which the
        honesty check allows for, and never recorded."""
        for uid in plan.users:
            user = self.users[uid]
            if user in out or not thread_ended(user, deadline):
                problems.append(f"user {uid} did not stop within {deadline - cut:.0f} s; its connection is dropped"
                                + self.in_doubt(user))
                del self.users[uid]
        for component, user in self.background:
            if not thread_ended(user, deadline):
                problems.append(f"{component.name} did not stop within {deadline - cut:.0f} s"
                                + self.in_doubt(user))
            else:
                user.close()

    def in_doubt(self, user: VirtualUser) -> str:
        """Give up on ``user``'s thread: its transaction in flight, if any, counted in doubt
        (it may commit yet, or not), and said as the end of its problem line."""
        busy = user.give_up()
        if not busy:
            return ""
        self.recorder.add(busy, "in_doubt")
        return f"; its {busy} in flight is counted in doubt"

    def send_report(self, plan: WorkerStep, number: int, begin: float, end: float, steady: bool) -> None:
        # statements first: take() swaps the users' buffers at once and then works for
        # milliseconds (histograms), during which the users go on committing; read after
        # it, the statement counts ran ahead of the commits by whatever committed meanwhile
        statements = self.statements_since_last_report()
        report = self.recorder.take(plan.step, number, plan.start_at + begin, plan.start_at + end, steady=steady)
        report.statements = statements
        if self.schedules:
            at = min(int((self.start_mono + end) * 1e9), time.monotonic_ns())
            distinct = {id(schedule): schedule for schedule in self.schedules.values()}.values()
            arrived = sum(schedule.count_until(at) for schedule in distinct)
            report.arrivals, self.arrived = arrived - self.arrived, arrived
            report.queue = sum(schedule.queued(at) for schedule in distinct)
        self.link.send(report)

    def statements_since_last_report(self) -> dict[str, int]:
        """The growth of the sessions' ``statement_counts`` since the last report, by kind."""
        out: dict[str, int] = {}
        for user in [*self.users.values(), *(user for _, user in self.background)]:
            counts = user.session.statement_counts if user.session is not None else None
            if counts is None:
                continue
            now = dict(counts)  # one copy: the user thread goes on counting meanwhile
            for kind, total in now.items():
                out[kind] = out.get(kind, 0) + total - user.counted.get(kind, 0)
            user.counted = now
        return out


def worker_main(index: int, link: WorkerLink, workload: Workload, ctx: RunContext) -> None:
    """Entry point of a worker (a spawned process, or a task on another host): serve until
    Stop or the coordinator is gone."""
    ignore_here()  # a signal to the whole group reaches workers too: the coordinator decides
    raise_soft_limit()  # a Dask worker's process does not inherit the coordinator's
    try:
        Worker(index, link, workload, ctx).serve()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the coordinator is gone: nothing left to report to
    except Exception as exc:  # told to the coordinator as one line, then exit 1
        try:
            link.send(WorkerFailed(index, f"{type(exc).__name__}: {first_line(exc)}"))
        except (OSError, EOFError):
            pass
        raise SystemExit(1) from exc


def thread_ended(user: VirtualUser, deadline: float) -> bool:
    """Whether ``user``'s thread ended, waited for until ``deadline`` (monotonic); a hosted
    user has none (tpsbench.engine.hosting)."""
    thread = user.thread
    if thread is None:
        return True
    thread.join(max(0.0, deadline - time.monotonic()))
    return not thread.is_alive()
