"""Many virtual users on one thread: the engine's path for sessions that send their
statements one at a time.

Why: on a 2-core machine every cycle the driver spends is taken from the database. A user on
a thread of its own puts that thread to sleep on every statement and wakes it again when the
result comes: one sleep and wake-up per round trip, a large share of a call's client CPU
(bench/experiments/results/round_trip_cost.txt). One thread that waits on all of a worker's
sockets at once (epoll) sleeps only when no result at all is in, and hands no GIL between
threads (bench/results/engine_tpcc.txt, ``multiplex``).

What it needs: a session that writes its transactions as generators of statements
(:meth:`tpsbench.core.session.Session.transaction`, in autocommit mode: TPC-C's stored
procedures, sysbench's statements with BEGIN and COMMIT as statements) on a cursor that can
send without waiting (``Session.transaction_cursor`` a
:class:`~tpsbench.core.cursor.SendingCursor`: the targets' fast cursors on libpq and
mysqlclient). Each user is still one connection with one statement at a time, the same
inputs, statements, retries and think times as on a thread of its own; only the waiting is
shared.

Connecting, which blocks, is done elsewhere, so that it never stalls the others: the
worker's few connecting threads (tpsbench.engine.hosting) connect a user at its ramp-up
slot, open its session and hand it over with :meth:`Multiplexer.adopt`, which calls back
when the user comes back, either because the step stopped or because the connection was
lost (then they reconnect it with back-off and hand it over again). A hosted user keeps
no thread of its own while it sleeps. :meth:`Multiplexer.host` is the same for a caller
that waits on a thread of its own.

Latency is timed from the end of the keying time (else just before the first statement
is sent) to the last result read, as on the threaded path: a late wake-up or a result
waiting while the thread served another user counts in it."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import select
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable

from tpsbench.core.cursor import SendingCursor, Statement
from tpsbench.core.errors import first_line
from tpsbench.core.session import Session
from tpsbench.core.target import Target
from tpsbench.engine.hosted import Hosted, hand_back
from tpsbench.engine.users import triage
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.waits import LAG

#: how long join() waits for the shared thread to end once it gave up on answers still out
GIVE_UP_WAIT_S = 2.0
#: transactions a user draws at once, each begun and its first statement encoded (Multiplexer.draw_ahead);
#: with think times one: a user then waits some 20 s between transactions, and what it drew ahead
#: would only sit in memory (the caches it was drawn for are cold by then anyway)
DRAW_AHEAD = 16


class Multiplexer:
    """The shared thread of one worker for one step (see the module docstring)."""

    def __init__(self, target: Target, recorder: IntervalRecorder, stop: threading.Event, think: bool) -> None:
        self.target = target
        self.rec = recorder
        self.stop = stop
        self.think = think
        self.inbox: deque[Hosted] = deque()
        self.poller = select.epoll()
        #: rung (wake) for a user to admit, the step's end or giving up: the shared thread
        #: then sleeps with no timeout while no keying or think time is due. A timeout on
        #: every sleep armed a kernel timer per wake-up, and a wake-up comes with most
        #: transactions. Closed with the object only: a hosting thread that rings late must
        #: never write into a file descriptor the number was reused for
        self.bell = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        weakref.finalize(self, os.close, self.bell)
        self.poller.register(self.bell, select.EPOLLIN)
        #: users by socket: all of them, and those waiting for a result
        self.hosted: dict[int, Hosted] = {}
        self.in_flight: dict[int, Hosted] = {}
        #: users answered as their statement was sent (SendingCursor.send_encoded): resumed
        #: on the thread's next pass, never waited on
        self.ready: deque[Hosted] = deque()
        #: (due on the monotonic clock, tie-breaker, user, what to do then): keying and think times
        self.timers: list[tuple[float, int, Hosted, Callable[[Hosted], None]]] = []
        self.order = itertools.count()
        self.abandon = False  # set when the worker stops waiting for answers still out
        self.ended = False  # set as the shared thread ends, before it lets go of its inbox
        #: ``stop`` as the shared thread last saw it (once per wake-up: an attribute is read
        #: per transaction for a fraction of what ``stop.is_set()`` costs)
        self.stopping = False
        #: transactions still out when the thread ended (given up on): counted in doubt
        self.in_doubt = 0
        #: what ended the shared thread early (a session's bug), told to every user it hosted
        self.failure: str | None = None
        self.thread = threading.Thread(target=self.serve, name="multiplexer", daemon=True)
        #: what follows a transaction: its think time, or with think times off the next
        #: transaction at once (a call fewer per transaction)
        self.after_transaction = self.finished if think else self.next_transaction
        #: transactions a user draws at once (draw_ahead)
        self.draw_count = 1 if think else DRAW_AHEAD

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float) -> None:
        """Wait for the thread to end; past ``timeout`` it gives up on answers still out
        (their users' threads have been given up on by then too) and ends."""
        self.thread.join(timeout)
        self.abandon = True
        self.wake()
        self.thread.join(GIVE_UP_WAIT_S)

    def wake(self) -> None:
        """Have the shared thread look at its inbox and at ``stop`` now (call after setting
        ``stop``; a hosting thread rings anyway when it sees ``stop`` set)."""
        with contextlib.suppress(OSError):  # the counter is full: it is rung already
            os.eventfd_write(self.bell, 1)

    @staticmethod
    def can_host(session: Session) -> bool:
        """Whether ``session`` can be hosted: statement by statement, on a cursor that
        sends without waiting (a SendingCursor)."""
        return isinstance(session.transaction_cursor, SendingCursor)

    def adopt(self, session: Session, back: Callable[[Hosted], None]) -> Hosted:
        """Run ``session``'s transactions on the shared thread until the step ends or its
        connection is lost, then call ``back`` with its slot, once: ``slot.lost`` is then
        the connection's error and ``slot.name`` the transaction it was lost in (the
        reconnect is counted already), else None; ``failure`` says whether the shared
        thread ended on a session's bug. ``back`` runs on the shared thread, or on the
        caller's when the shared thread has ended already: it must not block."""
        slot = Hosted(session, back)
        self.inbox.append(slot)
        if self.ended:  # it ended before it could see this user: whichever takes it from the inbox hands it back
            with contextlib.suppress(ValueError):
                self.inbox.remove(slot)
                hand_back(slot)
        self.wake()
        return slot

    # -- the shared thread ------------------------------------------------------------
    def serve(self) -> None:
        poll, in_flight, timers, stop, bell = self.poller.poll, self.in_flight, self.timers, self.stop.is_set, self.bell
        ready = self.ready
        try:
            while True:
                while self.inbox:
                    self.admit(self.inbox.popleft())
                if stop():
                    self.stopping = True
                    for _, _, slot, _ in timers:  # waiting for a keying or think time
                        self.release(slot)
                    timers.clear()
                    if not in_flight and not ready or self.abandon:
                        break
                timeout = 0.0 if ready else max(timers[0][0] - time.monotonic(), 0.0) if timers else -1.0
                for fd, _ in poll(timeout):
                    answered = in_flight.pop(fd, None)
                    if answered is not None:
                        self.complete(answered)
                    elif fd == bell:
                        os.eventfd_read(bell)
                    else:
                        self.quiet(fd)
                for _ in range(len(ready)):  # those answered since: the next pass takes theirs
                    self.advance(ready.popleft(), None)
                if timers:
                    now = time.monotonic()
                    while timers and timers[0][0] <= now:
                        _, _, slot, then = heapq.heappop(timers)
                        self.woke(slot)
                        then(slot)
        except Exception as exc:  # noqa: BLE001 - e.g. a session's inputs() failing: its users are told
            self.failure = f"{type(exc).__name__}: {first_line(exc)}"
        finally:
            self.ended = True  # first: a user handed over from now on is handed back by adopt()
            # given up on (the worker stopped waiting) or cut short by a failure: the
            # transactions still out may commit or not, and are counted in doubt
            for slot in (*in_flight.values(), *ready):
                self.rec.add(slot.name, "in_doubt")
                self.in_doubt += 1
            for slot in list(self.hosted.values()):
                self.release(slot)
            while self.inbox:
                hand_back(self.inbox.popleft())
            self.poller.close()

    def admit(self, slot: Hosted) -> None:
        if self.stopping:
            hand_back(slot)
            return
        try:
            slot.fd = slot.cur.fileno()
            self.poller.register(slot.fd, select.EPOLLIN)
            slot.armed = True
            self.hosted[slot.fd] = slot
        except Exception as exc:  # noqa: BLE001 - a connection that died while it was handed over
            slot.name, slot.lost = self.rec.names[0], exc  # counted as the threaded path does
            self.rec.add(slot.name, "reconnects")
            hand_back(slot)
            return
        self.next_transaction(slot)

    def next_transaction(self, slot: Hosted) -> None:
        if self.stopping:
            self.release(slot)
            return
        if not slot.ahead:
            self.draw_ahead(slot)
        name, slot.inputs, slot.steps, slot.encoded = slot.ahead.popleft()
        slot.name = name
        slot.due = 0
        if self.think:
            wait = slot.session.keying_time(name)
            if wait > 0:
                self.after(wait, slot, self.begin, self.rec.keying_names[name])
                return
        self.begin(slot)

    def draw_ahead(self, slot: Hosted) -> None:
        """Draw the user's next ``draw_count`` transactions in one go, each as far as the bytes
        of its first statement: its name, its inputs (in the order one at a time draws
        them: the same values), the transaction begun and that statement encoded.

        Why: done one at a time, between results, this ran on caches the database had just
        filled, at several times the cost (bench/experiments/results/python_floor.txt). None of it
        depends on the answers, so doing it early changes no value and no timing: the clock
        starts at the send (begin). A transaction that fails to begin here is begun again in its
        turn, where its error counts. A reconnect brings a new hosting, with a new queue."""
        session, ahead, encode = slot.session, slot.ahead, slot.cur.encode
        one = session.one_statement
        for _ in range(self.draw_count):
            name = session.next_transaction()
            inputs = session.inputs(name)
            steps = None if one else session.transaction(name, inputs)
            try:
                statement = session.call(name, inputs) if steps is None else next(steps)
                ahead.append((name, inputs, steps, encode(*statement)))
            except Exception:  # noqa: BLE001 - begun again in its turn, where it counts
                if steps is not None:
                    steps.close()
                ahead.append((name, inputs, None, None))

    def begin(self, slot: Hosted) -> None:
        """Send the transaction's first statement, encoded ahead (draw_ahead), else start
        its first attempt; the clock starts here."""
        slot.retries = 0
        # from the end of its keying time when it had one: a late wake-up counts in its latency
        slot.t0 = slot.due or time.perf_counter_ns()
        if slot.encoded is None:
            self.attempt(slot)
            return
        self.transmit(slot, None)

    def attempt(self, slot: Hosted) -> None:
        """Start the transaction (again, on a retry) with the drawn inputs."""
        session = slot.session
        if session.one_statement:  # slot.steps is None throughout
            try:
                statement = session.call(slot.name, slot.inputs)
            except Exception as exc:  # noqa: BLE001 - sorted by the target
                self.failed(slot, exc)
                return
            self.transmit(slot, statement)
            return
        slot.steps = session.transaction(slot.name, slot.inputs)
        self.advance(slot, None)

    def advance(self, slot: Hosted, error: Exception | None) -> None:
        """Resume the transaction with its last statement's result (or error): send its
        next statement, or record it when it has ended. A one-statement session's
        transaction has ended: its answered() reads the result or judges the error."""
        steps, statement = slot.steps, None
        try:
            if steps is None:
                committed = slot.session.answered(slot.name, slot.inputs, error)
            else:
                statement = steps.send(None) if error is None else steps.throw(error)
        except StopIteration as done:
            committed = bool(done.value)
        except Exception as exc:  # noqa: BLE001 - sorted by the target
            self.failed(slot, exc)
            return
        if statement is not None:
            self.transmit(slot, statement)
            return
        self.rec.record(slot.name, (time.perf_counter_ns() - slot.t0) // 1000, committed)
        self.after_transaction(slot)

    def transmit(self, slot: Hosted, statement: Statement | None) -> None:
        """Send the statement at hand, ``statement`` or with None the first one, encoded
        ahead (draw_ahead), and wait for its result; a failure to encode or send it is the
        statement's error, handed to the transaction."""
        cur = slot.cur
        try:
            answered = cur.send_encoded(slot.encoded if statement is None else cur.encode(*statement))
            if not slot.armed:
                self.poller.modify(slot.fd, select.EPOLLIN)
                slot.armed = True
        except Exception as exc:  # noqa: BLE001 - the transaction sees it as its statement's error
            self.advance(slot, exc)
            return
        if answered:
            self.ready.append(slot)
        else:
            self.in_flight[slot.fd] = slot

    def complete(self, slot: Hosted) -> None:
        """The socket is readable: take the result if it is whole, else wait again."""
        try:
            if not slot.cur.receive():
                self.in_flight[slot.fd] = slot
                return
        except Exception as exc:  # noqa: BLE001 - the transaction decides what it means
            self.advance(slot, exc)
            return
        self.advance(slot, None)

    def failed(self, slot: Hosted, exc: BaseException) -> None:
        outcome = triage(self.target, self.rec, slot.name, exc, slot.retries, slot.session)
        if outcome == "retry":
            slot.retries += 1
            self.attempt(slot)
        elif outcome == "reconnect":
            slot.lost = exc
            self.release(slot)
        else:
            self.after_transaction(slot)

    def finished(self, slot: Hosted) -> None:
        """After a transaction (committed, rolled back or failed), with think times on:
        think, then the next."""
        wait = slot.session.think_time(slot.name)
        if wait > 0 and not self.stop.is_set():
            self.after(wait, slot, self.next_transaction, self.rec.think_names[slot.name])
            return
        self.next_transaction(slot)

    def after(self, seconds: float, slot: Hosted, then: Callable[[Hosted], None], waiting: str) -> None:
        """Do ``then`` in ``seconds``: a keying or think time (``waiting``), its draw recorded."""
        slot.due = time.perf_counter_ns() + int(seconds * 1e9)
        self.rec.record_wait(waiting, seconds * 1e6)
        heapq.heappush(self.timers, (time.monotonic() + seconds, next(self.order), slot, then))

    def woke(self, slot: Hosted) -> None:  # a wait ended: how late against its draw
        self.rec.record_wait(LAG, (time.perf_counter_ns() - slot.due) // 1000)

    def quiet(self, fd: int) -> None:
        """A socket readable with no statement out (a server closing the connection while
        its user thinks): stop watching it until its next send, which will fail or not."""
        slot = self.hosted.get(fd)
        if slot is not None and slot.armed:
            self.poller.modify(fd, 0)
            slot.armed = False

    def release(self, slot: Hosted) -> None:
        """Hand the user back to its thread (the step is over, or its connection is lost)."""
        self.in_flight.pop(slot.fd, None)
        with contextlib.suppress(ValueError):  # answered as sent, not yet resumed
            self.ready.remove(slot)
        if self.hosted.get(slot.fd) is slot:
            del self.hosted[slot.fd]
        with contextlib.suppress(OSError, ValueError):  # a closed socket has left epoll already
            self.poller.unregister(slot.fd)
        hand_back(slot)

