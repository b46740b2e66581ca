"""Deferred Delivery (TPC-C §2.7.2, run option ``delivery=deferred``): queued, run behind.

The spec's terminal does not run a Delivery itself: it queues the request and goes on to
its next transaction, and a deferred worker delivers all ten districts, logging when
the request was queued and when it completed (90% must be done within 80 s of
queueing, §5.2.5.3). Here:

- :class:`DeferringTerminal`, the terminal's session, skips every Delivery card of its
  deck: it draws the request's inputs where the inline terminal would draw them (the
  same random values, in the same order), hands the request to the
  :class:`DeliveryQueue` of its warehouse's executor and answers the next card
  instead, so its ``next_transaction()`` never says "delivery".
- :class:`DeferredDelivery` is the engine's background component
  (tpsbench.core.session.Background) whose session, :class:`DeliveryExecutor`, takes the
  requests from the queue and runs each as inline mode does (one procedure call, or
  the statements of delivery.py). The engine records its commit as the "delivery"
  transaction, so that latency is the execution time; the session records the two
  spans the spec logs through the TimingSink, ``delivery_queue`` (queued, to execution
  start) and ``delivery_execution`` (start to commit, retries included), in the
  report's rows "delivery_queue avg/p90 (ms)" and "delivery_execution avg/p90 (ms)".

When a request counts as queued: at the moment the terminal would have submitted it,
which the terminal cannot know when it deals the card, because the engine's shared
thread (tpsbench.engine.multiplex) deals 16 transactions ahead of their turn. So a
request waits on the terminal, attached to the transaction dealt before it, until the
terminal really gets past that one (its answer, :meth:`DeferringTerminal.answered`, or
its ``execute()`` on the statement path; a retried transaction is past at its first
answer). With think times off the request is queued right then. With think times on
(``think=spec``) the terminal still spends the skipped Delivery's keying time and
think time: they are added to the next transaction's keying time, and the request is
stamped with the time its keying ends (its *due* time), before which no executor
starts it; the queue time is counted from then. A reconnect makes the shared thread
deal afresh: the requests of the transactions it had dealt ahead are queued then.

Executors per worker (:func:`executors`): each worker runs its own, and each executor
takes the requests of its share of the warehouses (W_ID modulo the executors). Why by
warehouse: two Deliveries of one warehouse lock its districts' oldest NEW-ORDER rows in
the same order, so they run one after the other whatever the number of executors; a
second executor on the same warehouse would only sit on the first one's locks while
other warehouses' requests wait. So with think times off, when requests come as fast as
the server answers (4% of the transactions), a worker runs one executor per warehouse,
up to ``MAX_EXECUTORS`` (which bounds the connections a worker adds): more could not run
at once, and an executor with no work costs only a connection and a wake-up every
``WAIT_S``. With think times on a terminal queues a Delivery about every nine minutes
(one card in 25, some 21 s of keying, thinking and waiting per card), and one executor
keeps up with thousands of terminals. (The executors' connections come on top of the
users': the run's connection check, which counts users, does not know them.)

What a step's results mean in deferred mode: a Delivery is counted when an executor
commits it, so the mix shows the Deliveries that completed, not those queued; once the
executors keep up the two differ only by the requests in the queue at the step's edges.
Requests still queued when the step ends are dropped, never run (a step's measurement
ends with it, and a next step starts with an empty queue); the honesty check counts
New-Orders and Payments only, so it is not affected. The queue counts them
(:attr:`DeliveryQueue.dropped`), but no report shows the number: a background component
has no channel to the step's results besides its transactions and timings.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar, cast

from tpsbench.core.delays import waits_of
from tpsbench.core.mix_session import MixSession
from tpsbench.core.session import Background, RunContext, Session, TimingSink
from tpsbench.core.target import Target
from tpsbench.core.transactions import TransactionTable
from tpsbench.workloads.tpcc.delivery import DeliveryInputs
from tpsbench.workloads.tpcc.session import TpccSession

#: the spans recorded beside the transactions, in report order (Workload.timing_names)
TIMINGS = ("delivery_queue", "delivery_execution")
#: longest an executor waits for a due request before it answers "no work yet", so that
#: the engine looks at the step's end at least this often
WAIT_S = 0.2
#: the most executors a worker runs (executors)
MAX_EXECUTORS = 8


class DeliveryQueue:
    """One executor's queued Delivery requests, earliest due first; thread-safe.

    A heap rather than a FIFO: with think times on, a request is due when its terminal's
    keying time ends, and terminals key for different times, so the order of queueing is
    not the order of due times. ``put`` is called from the terminals' threads (or the
    shared thread), ``take`` from the executors'. A closed queue (the step has ended)
    takes nothing more and drops what it is given.
    """

    def __init__(self) -> None:
        self._ready = threading.Condition(threading.Lock())
        #: (due on the monotonic clock, order of queueing, the request's inputs)
        self._heap: list[tuple[float, int, DeliveryInputs]] = []
        self._order = itertools.count()
        self.closed = False
        #: requests queued in all, and those dropped unrun at the step's end
        self.queued = 0
        self.dropped = 0

    def put(self, inputs: DeliveryInputs, due: float) -> None:
        """Queue a request that no executor may start before ``due`` (time.monotonic())."""
        with self._ready:
            if self.closed:
                self.dropped += 1
                return
            self.queued += 1
            heapq.heappush(self._heap, (due, next(self._order), inputs))
            self._ready.notify()

    def take(self, timeout: float) -> tuple[float, DeliveryInputs] | None:
        """The earliest request that is due, as (due, inputs), waiting up to ``timeout``
        seconds for one; None when there is none by then or the queue is closed."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while not self.closed:
                now, heap = time.monotonic(), self._heap
                if heap and heap[0][0] <= now:
                    due, _, inputs = heapq.heappop(heap)
                    return due, inputs
                if now >= deadline:
                    return None
                self._ready.wait((min(deadline, heap[0][0]) if heap else deadline) - now)
            return None

    def close(self) -> None:
        """The step has ended: wake every waiting executor, drop what is still queued."""
        with self._ready:
            if not self.closed:
                self.closed = True
                self.dropped += len(self._heap)
                self._heap.clear()
            self._ready.notify_all()


def executors(ctx: RunContext) -> int:
    """How many executors each worker runs (module docstring): one with think times on,
    else one per warehouse, at most ``MAX_EXECUTORS``."""
    if waits_of(ctx.options).around:
        return 1
    return max(1, min(MAX_EXECUTORS, ctx.scale))


def components(ctx: RunContext, table: TransactionTable[Any] | None = None) -> list[DeferredDelivery]:
    """A worker's executors for one step, each with a queue of its own (fresh every step:
    what a step left queued is not the next step's work); ``table``: the workload's."""
    return [DeferredDelivery(DeliveryQueue(), table) for _ in range(executors(ctx))]


class DeferringTerminal(TpccSession):
    """A terminal that queues its Deliveries instead of running them (module docstring).

    Only deferred mode makes these; inline terminals are plain TpccSessions, whose
    per-transaction path this class leaves as it is.
    """

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target,
                 queues: Sequence[DeliveryQueue], table: TransactionTable[Any] | None = None) -> None:
        #: the worker's executors' queues: a request goes to that of its warehouse
        self.queues = tuple(queues)
        #: the inputs of the last transaction dealt, and of the last one the terminal got past
        self._dealt: object = None
        self._passed: object = None
        #: requests waiting for the terminal to get past the transaction dealt before them:
        #: (that transaction's inputs, the requests), in the order dealt
        self._waiting: deque[tuple[object, list[DeliveryInputs]]] = deque()
        #: with think times on, requests the terminal got to, queued at its next keying time
        self._keyed: list[DeliveryInputs] = []
        super().__init__(ctx, user_id, users, conn, target, table)

    def next_transaction(self) -> str:
        deal = super().next_transaction
        name = deal()
        while name == "delivery":
            # the inline terminal's draws, in its order
            request = cast(DeliveryInputs, MixSession.inputs(self, name))
            if self._dealt is self._passed:  # nothing dealt is still ahead of the terminal
                self._reached([request])
            elif self._waiting and self._waiting[-1][0] is self._dealt:
                self._waiting[-1][1].append(request)
            else:
                self._waiting.append((self._dealt, [request]))
            name = deal()
        return name

    def inputs(self, name: str) -> object:
        self._dealt = inputs = super().inputs(name)
        return inputs

    def answered(self, name: str, inputs: object, error: Exception | None) -> bool:
        self._passing(inputs)  # first: answered() raises for a failure
        return super().answered(name, inputs, error)

    def execute(self, name: str, inputs: object) -> bool:
        try:
            return super().execute(name, inputs)
        finally:  # with procedures answered() has seen it already, which changes nothing
            self._passing(inputs)

    def keying_time(self, name: str) -> float:
        """The keying time of ``name``, and before it those of the Deliveries skipped since
        the last transaction and their think times; each Delivery is due when its keying ends."""
        wait = super().keying_time(name)
        if not self._keyed:
            return wait
        now, ahead, keying = time.monotonic(), 0.0, self.table["delivery"].keying_s
        for request in self._keyed:
            ahead += keying
            self._queue(request, now + ahead)
            ahead += self.spec_think_time("delivery")
        self._keyed.clear()
        return ahead + wait

    def rebind(self, conn: Any) -> None:
        """After a reconnect the shared thread deals afresh: the transactions dealt before
        it are left behind, so their requests are the terminal's to queue now."""
        while self._waiting:
            self._reached(self._waiting.popleft()[1])
        self._dealt = self._passed
        super().rebind(conn)

    def _passing(self, inputs: object) -> None:
        """The terminal got past the transaction of ``inputs``: the requests dealt after it
        (and after any transaction dealt before it) are reached."""
        self._passed = inputs
        waiting = self._waiting
        if waiting and any(before is inputs for before, _ in waiting):
            while True:
                before, requests = waiting.popleft()
                self._reached(requests)
                if before is inputs:
                    break

    def _reached(self, requests: list[DeliveryInputs]) -> None:
        """The terminal is where it submits ``requests``: after their keying times with
        TPC-C's (keying_time), else at once."""
        if self.spec_keying:
            self._keyed.extend(requests)
            return
        now = time.monotonic()
        for request in requests:
            self._queue(request, now)

    def _queue(self, request: DeliveryInputs, due: float) -> None:
        queues = self.queues
        queues[request.w_id % len(queues)].put(request, due)


class DeliveryExecutor(TpccSession):
    """An executor's session: the queue's requests, run as an inline terminal runs a
    Delivery (a TpccSession for its statements, procedure calls and connection set-up;
    its own deck and draws go unused)."""

    def __init__(self, ctx: RunContext, conn: Any, target: Target, queue: DeliveryQueue, timing: TimingSink,
                 table: TransactionTable[Any] | None = None) -> None:
        super().__init__(ctx, 0, 1, conn, target, table)
        self.queue = queue
        self.timing = timing
        #: the request at hand: when it was due, when its execution started
        self._due = self._started = 0.0
        self._request: DeliveryInputs | None = None

    def next_transaction(self) -> str:
        taken = self.queue.take(WAIT_S)
        if taken is None:
            return ""  # no work yet: the engine looks at the step's end and asks again
        self._due, self._request = taken
        return "delivery"

    def inputs(self, name: str) -> object:
        self._started = time.monotonic()  # the engine starts its clock next
        return self._request

    def execute(self, name: str, inputs: object) -> bool:
        committed = super().execute(name, inputs)
        if committed:
            done = time.monotonic()
            self.timing("delivery_queue", int((self._started - self._due) * 1e6))
            self.timing("delivery_execution", int((done - self._started) * 1e6))
        return committed


class DeferredDelivery(Background):
    """One executor of a worker's Delivery requests, on a connection and thread of its
    own (the engine's): it runs the requests of its queue, its share of the warehouses."""

    name: ClassVar[str] = "deferred delivery"

    def __init__(self, queue: DeliveryQueue, table: TransactionTable[Any] | None = None) -> None:
        self.queue = queue
        self.table = table

    def open_session(self, ctx: RunContext, conn: Any, target: Target, timing: TimingSink) -> Session:
        return DeliveryExecutor(ctx, conn, target, self.queue, timing, self.table)

    def stop(self) -> None:
        self.queue.close()
