"""A multiplexed step's users: connected, opened and reconnected by a few threads, and run
on the worker's shared thread (tpsbench.engine.multiplex) with no thread of their own.

Why: a hosted user used to keep a thread of its own that only connected it at its
ramp-up slot, handed it over, and then waited for it to come back, to reconnect it; that
thread's stack and state were a large share of a sleeping user's memory
(bench/results/fifteen_thousand.txt). Here a few threads (:class:`Connector`) do that
work for all of a worker's users, in the order of their ramp-up slots, so connection
set-up stays paced over the ramp-up as before. A user whose session cannot be hosted (its
cursor cannot send without waiting) gets a thread of its own, as in a step that is not
multiplexed.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from functools import partial

from tpsbench.core.session import Session
from tpsbench.engine.hosted import Hosted
from tpsbench.engine.multiplex import Multiplexer
from tpsbench.engine.users import UserStep, VirtualUser, ended, guarded

#: threads a worker starts to connect its users, and the most it grows to while users are
#: overdue (a server slow to accept): enough that slow connects do not hold up the next
#: users' ramp-up slots, few enough to cost nothing beside the users
CONNECT_THREADS = 16
CONNECT_THREADS_MAX = 64


class Connector:
    """A few threads that run jobs at their time (monotonic), earliest first; once ``stop``
    is set, whatever is left at once. One more starts while jobs are overdue and no
    thread is free, up to CONNECT_THREADS_MAX; a thread ends when no job is left (after
    the ramp-up only reconnects start one again)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.cond = threading.Condition()
        self.jobs: list[tuple[float, int, Callable[[], None]]] = []
        self.order = itertools.count()
        self.threads = self.idle = 0
        #: whether a thread waits for the first job's time already: the others then sleep
        #: until told, not all waking at every ramp-up slot
        self.timing = False

    def submit(self, at: float, job: Callable[[], None]) -> None:
        """Run ``job`` at ``at`` (monotonic), or as soon as a thread is free after it."""
        with self.cond:
            heapq.heappush(self.jobs, (at, next(self.order), job))
            if self.idle == 0 and self.threads < CONNECT_THREADS:
                self.another()
            elif self.jobs[0][2] is job:  # earlier than the one the timing thread waits for
                self.cond.notify_all()

    def another(self) -> None:
        """Start one more thread (``cond`` held)."""
        self.threads += 1
        threading.Thread(target=self.serve, name="connecting", daemon=True).start()

    def wake(self) -> None:
        """Have the threads look at ``stop`` now (call after setting it)."""
        with self.cond:
            self.cond.notify_all()

    def serve(self) -> None:
        jobs, cond = self.jobs, self.cond
        while True:
            with cond:
                while True:
                    if not jobs:
                        self.threads -= 1
                        return
                    wait = jobs[0][0] - time.monotonic()
                    if wait <= 0 or self.stop.is_set():
                        job = heapq.heappop(jobs)[2]
                        if jobs and jobs[0][0] <= time.monotonic() and not self.idle \
                                and self.threads < CONNECT_THREADS_MAX and not self.stop.is_set():
                            self.another()  # behind: the next is due already and no thread is free
                        if jobs:
                            cond.notify()  # another thread times the next job
                        else:
                            cond.notify_all()  # none left: the others end
                        break
                    self.idle += 1
                    if self.timing:
                        cond.wait()
                    else:
                        self.timing = True
                        cond.wait(wait)
                        self.timing = False
                    self.idle -= 1
            job()


class Hosting:
    """The users of one multiplexed step (see the module docstring): who is still out,
    and what ended any of them early, as one of the step's ``problems``."""

    def __init__(self, mux: Multiplexer, stop: threading.Event, problems: list[str]) -> None:
        self.mux = mux
        self.problems = problems
        self.connector = Connector(stop)
        self.cond = threading.Condition()
        #: users not back yet: waiting for their slot, connecting, or hosted
        self.out: set[VirtualUser] = set()

    def start(self, user: VirtualUser, who: str, step: UserStep) -> None:
        """``user`` (named ``who``) connects at its ramp-up slot, ``step.start_mono``."""
        with self.cond:
            self.out.add(user)
        self.connector.submit(step.start_mono, partial(self.arrive, user, who, step))

    def wake(self) -> None:
        """The step has ended: users still waiting for their slot leave at once."""
        self.connector.wake()

    def wait(self, deadline: float) -> set[VirtualUser]:
        """Wait until every user is back or ``deadline`` (monotonic); those still out."""
        with self.cond:
            self.cond.wait_for(lambda: not self.out, max(0.0, deadline - time.monotonic()))
            return set(self.out)

    def arrive(self, user: VirtualUser, who: str, step: UserStep) -> None:
        """On a connecting thread at the user's slot: connect, open its session, host it."""
        try:
            session = user.open(step)
        except Exception as exc:  # noqa: BLE001 - a problem of the step, as on the user's own thread
            self.problems.append(ended(who, exc))
            session = None
        if session is not None and Multiplexer.can_host(session):
            self.mux.adopt(session, partial(self.came_back, user, who, step))
            # what the user keeps (its session, connection, random pools) lives until the
            # step's end: out of the collector's sight, so that no full collection walks
            # thousands of sleeping users, stalling the shared thread and every wake-up due
            # meanwhile (bench/results/fifteen_thousand.txt); the worker hands them back to
            # the collector once the step has ended (Worker.run_step)
            gc.freeze()
            return
        if session is not None:  # its transactions block: on a thread of its own
            user.thread = threading.Thread(target=guarded, args=(partial(user.loop, session, step), who,
                                                                 self.problems), name=who, daemon=True)
            user.thread.start()
        self.back(user)

    def came_back(self, user: VirtualUser, who: str, step: UserStep, slot: Hosted) -> None:
        """On the shared thread (it must not block): the user is handed back."""
        if self.mux.failure is not None:
            self.problems.append(f"{who} ended: the shared thread ended: {self.mux.failure}")
        elif slot.lost is not None:
            self.connector.submit(time.monotonic(), partial(self.reconnect, user, who, step, slot.session, slot.name))
            return
        self.back(user)

    def reconnect(self, user: VirtualUser, who: str, step: UserStep, session: Session, lost_in: str) -> None:
        """On a connecting thread: a new connection for a user that lost its own, hosted again."""
        try:
            again = user.reconnect(session, step.stop, lost_in)
        except Exception as exc:  # noqa: BLE001 - a problem of the step, as on the user's own thread
            self.problems.append(ended(who, exc))
            again = False
        if again:
            self.mux.adopt(session, partial(self.came_back, user, who, step))
        else:
            self.back(user)

    def back(self, user: VirtualUser) -> None:
        """``user`` is done with the step (a thread of its own, if it has one, is the worker's to join)."""
        with self.cond:
            self.out.discard(user)
            if not self.out:
                self.cond.notify_all()

