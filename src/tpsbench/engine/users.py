"""Virtual users: a connection each, and the loop that runs a session's transactions.

A user's connection outlives steps (a step at least as large as the last keeps it); its
session and thread belong to one step. The thread waits for the user's ramp-up slot,
connects with back-off, opens the session and runs it here (:meth:`VirtualUser.hot_loop`),
which times exactly ``execute()``. In a multiplexed step the worker's few connecting
threads connect and open it instead (tpsbench.engine.hosting), and where the session sends
statement by statement on a cursor that can send without waiting it runs on the worker's
shared thread (tpsbench.engine.multiplex), with no thread of its own; else on a thread of
its own here. Background components (tpsbench.core.session.Background) run as users too,
on their own threads.

What happens to a failed attempt is decided in one place, :func:`triage`, for both ways
of running users, so that they count failures alike. The two ways remain two loops over
the same cycle (draw, keying time, attempts, record, think time): this one blocks in
``execute()``, whatever a session does there; the shared thread is driven by results
arriving, statement by statement, and draws transactions ahead. One loop for both would
put a generator or callbacks on this path, or take the draw-ahead from the other, and
both were measured to cost the client CPU (bench/results/client_callgrind.txt,
bench/experiments/results/python_floor.txt).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tpsbench.core.errors import TpsbenchError, first_line
from tpsbench.core.session import Session
from tpsbench.core.target import Target, close_quietly
from tpsbench.engine.pacing import LAG, SERVICE, Schedule
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.waits import LAG as LATE

#: attempts of one transaction after the first on a retryable error (deadlock, serialization)
MAX_RETRIES = 10
#: what attempts() says of a transaction: committed, rolled back as expected, failed (counted),
#: or failed with the connection and no new one before the step ended
COMMITTED, ROLLED_BACK, FAILED, GONE = 1, 0, -1, -2
#: reconnect back-off: first wait, cap (seconds); doubled per failed attempt, with jitter
BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 2.0


def triage(target: Target, rec: IntervalRecorder, name: str, exc: BaseException, retries: int,
           session: Session) -> str:
    """Sort a failed attempt of ``name``, count it, and say what comes next.

    "retry": retryable (deadlock, serialization) with attempts left; "reconnect": the
    connection is lost, and with it the outcome, so the transaction is counted in doubt
    (its commit may have happened before the loss); "error": anything else, or retries
    used up (the message is kept). Shared by both ways of running users, so that they
    count failures alike.
    """
    if (target.is_retryable(exc) or session.is_retryable(exc)) and retries < MAX_RETRIES:
        rec.add(name, "retries")
        return "retry"
    if target.is_disconnect(exc):
        rec.add(name, "reconnects")
        rec.add(name, "in_doubt")
        return "reconnect"
    rec.add(name, "errors")
    text = first_line(exc)
    rec.error(name, f"gave up after {retries} retries: {text}" if retries else text)
    return "error"


def ended(who: str, exc: BaseException) -> str:
    """The step's problem line for user ``who`` ended early by ``exc``."""
    kind = "" if isinstance(exc, TpsbenchError) else f"{type(exc).__name__}: "
    return f"{who} ended: {kind}{first_line(exc)}"


def guarded(run: Callable[[], None], who: str, problems: list[str]) -> None:
    """A user's thread: whatever ends it early is a problem of the step, not of the worker."""
    try:
        run()
    except Exception as exc:  # noqa: BLE001 - a session bug ends this user, not the worker
        problems.append(ended(who, exc))


@dataclass(frozen=True, slots=True)
class UserStep:
    """What one user's thread needs for one step, handed from the worker to the user in one
    piece. Read once at the step's start: the hot loops bind what they use as locals."""

    #: opens the user's session on its connection: ``open_session(conn=, target=)``
    open_session: Callable[..., Session]
    #: the user's ramp-up slot, on the monotonic clock
    start_mono: float
    #: set when the step ends
    stop: threading.Event
    #: whether the spec's keying and think times are waited
    think: bool = False
    #: a paced step's arrivals (tpsbench.engine.pacing; None: a closed loop)
    schedule: Schedule | None = None


class VirtualUser:
    """One user: its connection outlives steps, its session and thread belong to one step."""

    def __init__(self, user_id: int, target: Target, recorder: IntervalRecorder) -> None:
        self.user_id = user_id
        self.target = target
        self.recorder = recorder
        self.conn: Any = None
        self.thread: threading.Thread | None = None
        #: this step's session once open; ``counted``: its statement counts already reported
        #: (both reset by the worker between steps, when no user thread runs)
        self.session: Session | None = None
        self.counted: dict[str, int] = {}
        #: a paced step's trace when asked for (tpsbench.engine.pacing): per transaction
        #: (name, scheduled start, start, end in ns, committed or not); None: not traced
        self.trace: list[tuple[str, int, int, int, bool]] | None = None
        #: the transaction this user's thread has in flight ("": none), and whether the
        #: worker gave up on it at the end of a step (then counted in doubt, never recorded:
        #: :meth:`settle` and :meth:`give_up` decide which of the two, under ``settling``)
        self.busy = ""
        self.given_up = False
        self.settling = threading.Lock()

    def close(self) -> None:
        close_quietly(self.conn)
        self.conn = None

    def settle(self) -> bool:
        """After a transaction that ended once the step had: whether its outcome is still
        this thread's to record, not if the worker gave up on it (which it does only after
        the grace period, so the lock is taken in a step's tail alone, never in its run)."""
        with self.settling:
            if self.given_up:
                return False
            self.busy = ""
            return True

    def give_up(self) -> str:
        """The worker's side, once the user's thread outlived the grace period: the
        transaction it has in flight ("" if none), which its thread will then not record,
        so that the caller counts it in doubt exactly once."""
        with self.settling:
            self.given_up = True
            return self.busy

    def connect(self, stop: threading.Event, name: str) -> bool:
        """Connect with exponential back-off until it works or the step ends."""
        wait = BACKOFF_FIRST_S
        jitter: random.Random | None = None  # made on a first failure: not kept by every user
        while not stop.is_set():
            try:
                self.conn = self.target.connect()
                return True
            except Exception as exc:  # noqa: BLE001 - any failure to connect is retried
                # counted against ``name``: the recorder knows transactions only
                self.recorder.add(name, "errors")
                self.recorder.error(name, f"connect: {first_line(exc)}")
            jitter = jitter or random.Random(self.user_id)
            if stop.wait(wait * (0.5 + jitter.random())):
                break
            wait = min(wait * 2, BACKOFF_MAX_S)
        return False

    def run(self, step: UserStep) -> None:
        """The user on a thread of its own: wait for its ramp-up slot, connect, open its
        session, loop until the step stops (paced by its schedule in a paced step)."""
        delay = step.start_mono - time.monotonic()
        if delay > 0 and step.stop.wait(delay):
            return
        session = self.open(step)
        if session is not None:
            self.loop(session, step)

    def open(self, step: UserStep) -> Session | None:
        """Connect (with back-off) and open the user's session for the step; None when the
        step ended first. A session that cannot be opened but for a lost connection raises."""
        first = self.recorder.names[0]
        stop = step.stop
        while not stop.is_set():
            if self.conn is None and not self.connect(stop, first):
                return None
            try:
                session = step.open_session(conn=self.conn, target=self.target)
            except Exception as exc:  # counted below
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
            return session
        return None

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

    def loop(self, session: Session, step: UserStep) -> None:
        """Until the step stops, on this thread: paced by its schedule (paced_loop), else hot_loop."""
        if step.schedule is not None:
            self.paced_loop(session, step.stop, step.schedule)
            return
        self.hot_loop(session, step.stop, step.think)

    def hot_loop(self, session: Session, stop: threading.Event, think: bool) -> None:
        """Hot path: nothing here allocates beyond the session's own work and one record()."""
        rec, clock = self.recorder, time.perf_counter_ns
        keyed, thought = rec.keying_names, rec.think_names
        if stop.is_set():
            return
        # ``while True``: CPython 3.11 specializes a function's bytecode only once it has
        # been called or looped back unconditionally 8 times, and a thread calls this once
        while True:
            name = session.next_transaction()
            if not name:  # a background session with no work yet (it waited for some)
                if stop.is_set():
                    return
                continue
            due = 0
            if think and (wait := session.keying_time(name)) > 0:
                # the transaction's clock starts when its keying time ends (due), not when
                # the user woke: a late wake-up counts in its latency
                due = self.sleep(stop, wait, keyed[name])
                if due < 0:
                    return
            inputs = session.inputs(name)
            t0 = due or clock()
            self.busy = name
            outcome = self.attempts(session, name, inputs, stop)
            # the one look at ``stop`` per transaction, for the loop too: once the step has
            # ended, the worker may have given up on this transaction (settle)
            stopped = stop.is_set()
            if stopped and not self.settle():
                return
            self.busy = ""
            if outcome >= ROLLED_BACK:
                rec.record(name, (clock() - t0) // 1000, outcome == COMMITTED)
            elif outcome == GONE:
                return
            if think and (wait := session.think_time(name)) > 0 and self.sleep(stop, wait, thought[name]) < 0:
                return
            if stopped:
                return

    def sleep(self, stop: threading.Event, seconds: float, name: str) -> int:
        """A keying or think time (``name``, its timing): its draw recorded, then how late
        the user woke (tpsbench.measure.waits); when it was due (perf_counter ns), or -1
        when the step ended during it."""
        rec = self.recorder
        due = time.perf_counter_ns() + int(seconds * 1e9)
        rec.record_wait(name, seconds * 1e6)
        if stop.wait(seconds):
            return -1
        rec.record_wait(LATE, (time.perf_counter_ns() - due) // 1000)
        return due

    def paced_loop(self, session: Session, stop: threading.Event, schedule: Schedule) -> None:
        """A paced step (tpsbench.engine.pacing): take the next scheduled arrival, start it
        when it is due (at once when it is overdue: it waited in the queue), and time it
        from its scheduled start; the wait for a free user and the service are timings."""
        rec, clock = self.recorder, time.monotonic_ns
        stopped = stop.is_set()
        while not stopped:
            intended = schedule.take()
            wait = intended - clock()
            if wait > 0 and stop.wait(wait / 1e9):
                break
            name = session.next_transaction()
            inputs = session.inputs(name)
            started = clock()
            self.busy = name
            outcome = self.attempts(session, name, inputs, stop)
            stopped = stop.is_set()  # once per transaction, as in hot_loop
            if stopped and not self.settle():
                return
            self.busy = ""
            if outcome >= ROLLED_BACK:
                done = clock()
                rec.record(name, (done - intended) // 1000, outcome == COMMITTED)
                rec.record_timing(LAG, (started - intended) // 1000)
                rec.record_timing(SERVICE, (done - started) // 1000)
                if self.trace is not None:
                    self.trace.append((name, intended, started, done, outcome == COMMITTED))
            elif outcome == GONE:
                return

    def attempts(self, session: Session, name: str, inputs: object, stop: threading.Event) -> int:
        """Run ``name`` until it commits, rolls back as expected or fails for good
        (retries and reconnects counted in triage): COMMITTED, ROLLED_BACK, FAILED, or
        GONE when the connection was lost and the step ended before a new one."""
        target, rec, retries = self.target, self.recorder, 0
        while True:
            try:
                return COMMITTED if session.execute(name, inputs) else ROLLED_BACK
            except Exception as exc:  # noqa: BLE001 - sorted by the target in triage()
                with self.settling:  # the worker may have counted it in doubt already: then nothing more
                    if self.given_up:
                        return GONE
                    outcome = triage(target, rec, name, exc, retries, session)
                if outcome == "retry":
                    retries += 1
                    continue
                if outcome == "reconnect":
                    return FAILED if self.reconnect(session, stop, name) else GONE
                self.rollback_quietly()
                return FAILED

    def rollback_quietly(self) -> None:
        try:
            self.conn.rollback()
        except Exception:  # noqa: BLE001 - the session should have rolled back already
            pass
