"""Worker processes and their virtual users: the load generator side of the engine.

One worker process hosts many virtual users, each with a thread and its own synchronous
DB-API connection. Threads, not asyncio, by measurement (bench/engine_threads_vs_asyncio.py):
for the same point select psycopg's sync API costs the client less CPU per transaction
than its asyncio API and gives more transactions per second in one process, and PyMySQL
has no asyncio API at all. Drivers release the GIL while waiting on the server, so a few
hundred mostly waiting users per process cost little; CPU-bound work is spread by running
one process per core. Users whose sessions send statement by statement on libpq or
mysqlclient run on the worker's shared thread instead, one epoll loop for all of them
(tpsbench.api.multiplex), which costs less CPU again (bench/results/engine_tpcc.txt);
their own threads only connect, and reconnect, for them.

The line to the coordinator is a plain message protocol over one duplex
:mod:`multiprocessing` connection per worker: :class:`StepPlan` or :class:`Stop` in;
:class:`WorkerReady`, :class:`~tpsbench.api.metrics.IntervalReport` and :class:`StepDone`
out. Nothing is shared but these picklable messages, so a worker could equally sit behind
a socket on another host. One pipe per worker (rather than one shared queue) means a
worker killed while writing cannot block the others' writes.

Statements by kind: a session may count the statements it sent (sysbench's read/write/other)
in an optional attribute ``statement_counts``, a mapping of kind to a total since the
session opened that only grows. The worker reads it from its own thread at every interval
and reports the growth, so the hot path pays nothing for it beyond the session's own
counting. A statement falls in the interval in which the worker saw it counted (at most
the transaction in flight at a boundary lands one interval apart from its commit); every
statement counted is reported exactly once.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from tpsbench.api.metrics import IntervalRecorder
from tpsbench.api.multiplex import Multiplexer, can_multiplex, triage
from tpsbench.api.session import RunContext, RunnableWorkload, Session
from tpsbench.errors import TpsbenchError, first_line
from tpsbench.targets import open_target
from tpsbench.targets.base import Target

#: reconnect back-off: first wait, cap (seconds); doubled per failed attempt, with jitter
BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 2.0
#: how long the users of a stopping step may take to finish their transaction in flight
STOP_GRACE_S = 10.0


# -- the protocol ---------------------------------------------------------------------
@dataclass(frozen=True)
class StepPlan:
    """One step as one worker runs it.

    ``users`` are the global ids (0-based) of the users this worker hosts; ``users_in_step``
    counts all users of the step on all workers. ``start_at`` is wall-clock (time.time())
    so that workers on other hosts with synchronised clocks start together.
    """

    step: int
    users: list[int]
    users_in_step: int
    rampup_s: float
    duration_s: float
    interval_s: float
    start_at: float
    think: bool = True
    #: users whose sessions allow it share one thread (tpsbench.api.multiplex)
    multiplex: bool = True


@dataclass(frozen=True)
class Stop:
    """Coordinator -> worker: end the current step now and exit."""


@dataclass(frozen=True)
class WorkerReady:
    worker: int
    pid: int


@dataclass(frozen=True)
class StepDone:
    """Worker -> coordinator, after the step's last report. ``problems`` are one-liners."""

    worker: int
    step: int
    interrupted: bool = False
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WorkerFailed:
    """Worker -> coordinator: the worker cannot go on (it exits after sending this)."""

    worker: int
    message: str


def interval_bounds(plan: StepPlan) -> list[tuple[float, float, bool]]:
    """(start offset, end offset, steady) of each interval, relative to ``plan.start_at``.

    Ramp-up and steady state are cut separately so that no interval straddles the two:
    the steady window is measured alone, from its first second to its last.
    """
    bounds: list[tuple[float, float, bool]] = []
    for begin, length, steady in ((0.0, plan.rampup_s, False), (plan.rampup_s, plan.duration_s, True)):
        t = 0.0
        while length - t > 1e-9:
            end = min(t + plan.interval_s, length)
            bounds.append((begin + t, begin + end, steady))
            t = end
    return bounds


# -- virtual users --------------------------------------------------------------------
class VirtualUser:
    """One user: its connection outlives steps, its session and thread belong to one step."""

    def __init__(self, user_id: int, target: Target, recorder: IntervalRecorder) -> None:
        self.user_id = user_id
        self.target = target
        self.recorder = recorder
        self.conn: Any = None
        self.thread: threading.Thread | None = None
        self.rng = random.Random(user_id)
        #: this step's session once open; ``counted``: its statement counts already reported
        #: (both reset by the worker between steps, when no user thread runs)
        self.session: Session | None = None
        self.counted: dict[str, int] = {}

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - a dead connection may fail to close; it is gone either way
                pass
            self.conn = None

    def connect(self, stop: threading.Event, name: str) -> bool:
        """Connect with exponential back-off until it works or the step ends."""
        wait = BACKOFF_FIRST_S
        while not stop.is_set():
            try:
                self.conn = self.target.connect()
                return True
            except Exception as exc:  # noqa: BLE001 - any failure to connect is retried
                # counted against ``name``: the recorder knows transactions only
                self.recorder.add(name, "errors")
                self.recorder.error(name, f"connect: {first_line(exc)}")
            if stop.wait(wait * (0.5 + self.rng.random())):
                break
            wait = min(wait * 2, BACKOFF_MAX_S)
        return False

    def run(self, workload: RunnableWorkload, ctx: RunContext, plan: StepPlan, start_mono: float,
            stop: threading.Event, mux: Multiplexer | None) -> None:
        """The user: wait for its ramp-up slot, connect, open a session, loop until stop."""
        first = workload.transaction_names[0]
        rank = self.user_id  # user ids are 0..users_in_step-1: the stagger is global
        delay = start_mono + plan.rampup_s * rank / max(plan.users_in_step, 1) - time.monotonic()
        if delay > 0 and stop.wait(delay):
            return
        while not stop.is_set():
            if self.conn is None and not self.connect(stop, first):
                return
            try:
                session = workload.open_session(ctx, self.user_id, plan.users_in_step, self.conn, self.target)
            except Exception as exc:  # noqa: BLE001 - counted below
                if not self.target.is_disconnect(exc):
                    self.recorder.add(first, "errors")
                    self.recorder.error(first, f"open session: {first_line(exc)}")
                    # the user sits this step out: a problem of the step (guarded() keeps
                    # it), so that the step's results do not pass for the full load
                    raise TpsbenchError(f"could not open its session, so it sat the step out: "
                                        f"{first_line(exc)}") from exc
                self.recorder.add(first, "reconnects")  # e.g. a kept connection died between steps
                self.close()
                stop.wait(BACKOFF_FIRST_S)
                continue
            self.session = session
            self.loop(session, stop, plan.think, mux)
            return

    def reconnect(self, session: Session, stop: threading.Event, name: str) -> bool:
        """After a disconnect: a new connection with back-off, and the session rebound to it."""
        while True:
            self.close()
            if not self.connect(stop, name):
                return False
            try:
                session.rebind(self.conn)
                return True
            except Exception as exc:
                if not self.target.is_disconnect(exc):
                    raise
            self.recorder.add(name, "reconnects")
            if stop.wait(BACKOFF_FIRST_S):
                return False

    def loop(self, session: Session, stop: threading.Event, think: bool, mux: Multiplexer | None) -> None:
        """Until the step stops: on the worker's shared thread where the session allows
        it (tpsbench.api.multiplex), reconnecting here whenever its connection is lost;
        else on this thread (hot_loop)."""
        if mux is None or not can_multiplex(session):
            self.hot_loop(session, stop, think)
            return
        while (lost_in := mux.host(session)) is not None:
            if not self.reconnect(session, stop, lost_in):
                return

    def hot_loop(self, session: Session, stop: threading.Event, think: bool) -> None:
        """Hot path: nothing here allocates beyond the session's own work and one record()."""
        target, rec, clock = self.target, self.recorder, time.perf_counter_ns
        while not stop.is_set():
            name = session.next_transaction()
            if think:
                wait = session.keying_time(name)
                if wait > 0 and stop.wait(wait):
                    break
            inputs = session.inputs(name)
            retries = 0
            t0 = clock()
            while True:
                try:
                    committed = session.execute(name, inputs)
                except Exception as exc:  # noqa: BLE001 - sorted by the target in triage()
                    outcome = triage(target, rec, name, exc, retries)
                    if outcome == "retry":
                        retries += 1
                        continue
                    if outcome == "reconnect":
                        if not self.reconnect(session, stop, name):
                            return
                    else:
                        self.rollback_quietly()
                    break
                rec.record(name, (clock() - t0) // 1000, committed)
                break
            if think:
                wait = session.think_time(name)
                if wait > 0 and stop.wait(wait):
                    break

    def rollback_quietly(self) -> None:
        try:
            self.conn.rollback()
        except Exception:  # noqa: BLE001 - the session should have rolled back already
            pass


# -- the worker process -----------------------------------------------------------------
class Worker:
    """Runs the steps the coordinator sends, reporting interval by interval."""

    def __init__(self, index: int, conn: Connection, workload: RunnableWorkload, ctx: RunContext) -> None:
        self.index = index
        self.pipe = conn
        self.workload = workload
        self.ctx = ctx
        self.target = open_target(ctx.url)
        self.recorder = IntervalRecorder(workload.transaction_names)
        self.users: dict[int, VirtualUser] = {}
        self.last_users_in_step = 0
        self.stopped = False

    def serve(self) -> None:
        self.pipe.send(WorkerReady(self.index, os.getpid()))
        while not self.stopped:
            msg = self.pipe.recv()
            if isinstance(msg, StepPlan):
                self.run_step(msg)
            else:
                break
        for user in self.users.values():
            user.close()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless the coordinator says stop; True when stopped."""
        if self.stopped:
            return True
        if seconds > 0 and self.pipe.poll(seconds):
            self.pipe.recv()  # anything but a plan mid-step means stop
            self.stopped = True
        return self.stopped

    def prepare_users(self, plan: StepPlan) -> None:
        """Keep connections when the step has at least as many users as the last one.

        Connection setup is not part of any measured transaction (users connect during
        ramp-up, before the steady window), so reusing a connection changes no number;
        it only saves the server a burst of forks between steps. A smaller step starts
        from fresh connections, as a run at that user count alone would.
        """
        if plan.users_in_step < self.last_users_in_step:
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
            user.session, user.counted = None, {}
        self.last_users_in_step = plan.users_in_step

    def run_step(self, plan: StepPlan) -> None:
        problems: list[str] = []
        self.prepare_users(plan)
        start_mono = time.monotonic() + (plan.start_at - time.time())
        stop = threading.Event()
        mux = Multiplexer(self.target, self.recorder, stop, plan.think) if plan.multiplex else None
        if mux is not None:
            mux.start()
        # no take() here: a straggler of the last step that finished late (see below) is
        # counted in this step's first interval rather than lost
        for uid in plan.users:
            user = self.users[uid]
            user.thread = threading.Thread(target=self.guarded, args=(user, plan, start_mono, stop, mux, problems),
                                           name=f"user-{uid}", daemon=True)
            user.thread.start()
        bounds = interval_bounds(plan)
        number = 0
        for number, (begin, end, steady) in enumerate(bounds):
            if self.wait(start_mono + end - time.monotonic()):
                break
            self.send_report(plan, number, begin, end, steady)
        else:
            number = len(bounds)
        cut = time.monotonic()
        stop.set()
        if mux is not None:
            mux.wake()
        deadline = cut + (1.0 if self.stopped else STOP_GRACE_S)
        for uid in plan.users:
            user = self.users[uid]
            user.thread.join(max(0.0, deadline - time.monotonic()))
            if user.thread.is_alive():
                problems.append(f"user {uid} did not stop within {deadline - cut:.0f} s; its connection is dropped")
                del self.users[uid]
        if mux is not None:
            mux.join(max(0.0, deadline - time.monotonic()))
        # the stragglers: transactions in flight at the end (or at a stop) are reported too
        begin = bounds[number][0] if self.stopped and number < len(bounds) else (bounds[-1][1] if bounds else 0.0)
        self.send_report(plan, number, begin, time.monotonic() - start_mono, False)
        self.pipe.send(StepDone(self.index, plan.step, self.stopped, problems))

    def send_report(self, plan: StepPlan, number: int, begin: float, end: float, steady: bool) -> None:
        # statements first: take() swaps the users' buffers at once and then works for
        # milliseconds (histograms), during which the users go on committing; read after
        # it, the statement counts ran ahead of the commits by whatever committed meanwhile
        statements = self.statements_since_last_report()
        report = self.recorder.take(plan.step, number, plan.start_at + begin, plan.start_at + end, steady=steady)
        report.statements = statements
        self.pipe.send(report)

    def statements_since_last_report(self) -> dict[str, int]:
        """The growth of the sessions' ``statement_counts`` since the last report, by kind."""
        out: dict[str, int] = {}
        for user in self.users.values():
            counts = getattr(user.session, "statement_counts", None)
            if counts is None:
                continue
            now = dict(counts)  # one copy: the user thread goes on counting meanwhile
            for kind, total in now.items():
                out[kind] = out.get(kind, 0) + total - user.counted.get(kind, 0)
            user.counted = now
        return out

    def guarded(self, user: VirtualUser, plan: StepPlan, start_mono: float, stop: threading.Event,
                mux: Multiplexer | None, problems: list[str]) -> None:
        try:
            user.run(self.workload, self.ctx, plan, start_mono, stop, mux)
        except Exception as exc:  # noqa: BLE001 - a session bug ends this user, not the worker
            kind = "" if isinstance(exc, TpsbenchError) else f"{type(exc).__name__}: "
            problems.append(f"user {user.user_id} ended: {kind}{first_line(exc)}")


def worker_main(index: int, conn: Connection, workload: RunnableWorkload, ctx: RunContext) -> None:
    """Entry point of a worker process (spawned): serve until Stop or the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the coordinator decides
    try:
        Worker(index, conn, workload, ctx).serve()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the coordinator is gone: nothing left to report to
    except Exception as exc:  # noqa: BLE001 - told to the coordinator as one line, then exit 1
        try:
            conn.send(WorkerFailed(index, f"{type(exc).__name__}: {first_line(exc)}"))
        except (OSError, EOFError):
            pass
        raise SystemExit(1) from exc
