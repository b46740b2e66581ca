"""What a workload provides to be run: one virtual user's :class:`Session`.

The engine owns processes, threads, timing, retries and reconnects; a session owns the
workload's state on one DB-API connection (its mix deck, random streams, prepared
statements). Keeping the two apart is what lets every workload get the same honest
measurement: the engine times exactly ``execute()``, nothing the session does before it
(drawing inputs) or after it (think time) is part of a transaction's latency.

The session runs on the hot path, once per transaction per user: it should allocate
little, compile nothing (SQL text is fixed at :meth:`Session.rebind`, where statements are
prepared) and use the DB-API connection directly.

A :class:`Background` component is a session of its own kind: it runs for a whole step
beside a worker's users, on its own connection, and takes its work from them rather
than from a mix (TPC-C's deferred Delivery); the engine runs and measures its
transactions as it runs a user's.
"""

from __future__ import annotations

import functools
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tpsbench.core.cursor import Cursor, Statement
from tpsbench.core.delays import waits_of
from tpsbench.core.target import Target

#: records a span that is not a transaction (a deferred Delivery's time in its queue):
#: (name, microseconds); the name must be one of the workload's ``timing_names``
TimingSink = Callable[[str, int], None]


@dataclass(frozen=True)
class RunContext:
    """Everything a session needs besides its connection; the same for every user of a run.

    Picklable, because it travels to every worker process. ``url`` may include a password:
    never print or store it (use ``Target.describe()``).
    """

    workload: str
    url: str
    scale: int
    seed: int
    constants: dict[str, int] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)


class Session(ABC):
    """One virtual user's workload state on one DB-API connection."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        self.ctx = ctx
        self.user_id = user_id
        self.users = users
        self.conn = conn
        self.target = target
        waits = waits_of(ctx.options)
        #: --keying and --think (tpsbench.core.delays), drawn from the user's own stream
        self.keying_delay, self.think_delay = waits.keying, waits.think
        #: whether the user waits between its transactions (keying or think times): then it
        #: runs one every few seconds, not one after the other
        self.waits = waits.around

    @functools.cached_property
    def wait_rng(self) -> random.Random:
        """The user's stream of --keying and --think draws, made on first use: a
        workload that draws its rules' waits from a stream of its own never keeps it."""
        return random.Random(f"{self.ctx.seed}:{self.user_id}:waits")

    @abstractmethod
    def next_transaction(self) -> str:
        """The name of the next transaction, from the workload's mix (deck).

        A :class:`Background` session may answer "" instead: nothing to do yet (it waits
        a moment for work first, so that the engine can look at the step's end).
        """

    @abstractmethod
    def inputs(self, name: str) -> object:
        """Random inputs for one attempt of ``name``; retries reuse them."""

    #: The cursor that :meth:`transaction`'s statements run on, for a session that sends
    #: them one at a time in autocommit mode (BEGIN and COMMIT, where it has them, are
    #: statements like the others). When it is a :class:`~tpsbench.core.cursor.SendingCursor`
    #: (the targets' fast cursors), the engine may run the user on a thread shared with
    #: other users that waits on all their sockets at once (tpsbench.engine.multiplex).
    #: None: the session has execute() of its own.
    transaction_cursor: Cursor | None = None

    #: Statements sent since the session opened, by kind ("read", "write", "other"), for
    #: sessions that count them (sysbench): totals that only grow. The worker reports
    #: their growth every interval, so steps show QPS by kind as sysbench's summary does
    #: and the hot path pays for nothing but the session's own counting. None: not counted.
    statement_counts: Mapping[str, int] | None = None

    #: True when every transaction of the session is one statement in autocommit
    #: (TPC-C's stored-procedure calls, sysbench's point select): it then provides
    #: :meth:`call` and :meth:`answered`, and the engine's shared thread runs them without
    #: a generator per transaction (which cost it more than the rest of such a
    #: transaction's bookkeeping, bench/results/client_callgrind.txt).
    one_statement: bool = False

    def call(self, name: str, inputs: object) -> Statement:
        """The one statement that is all of ``name`` (sessions with ``one_statement``)."""
        raise NotImplementedError(f"{type(self).__name__} has no one-statement transactions")

    def answered(self, name: str, inputs: object, error: Exception | None) -> bool:
        """After :meth:`call`'s statement: read its result from ``transaction_cursor``
        (``error`` None) or judge its ``error``. True: committed; False: an expected
        rollback (the server has undone it); a failure is raised as it is."""
        raise NotImplementedError(f"{type(self).__name__} has no one-statement transactions")

    def transaction(self, name: str, inputs: object) -> Generator[Statement, None, bool]:
        """One attempt of ``name``, statement by statement: each ``yield`` hands out a
        (SQL, parameters) pair to run on ``transaction_cursor``, and resumes once its
        result is there to read, or with its error raised at the ``yield`` (roll back by
        yielding ROLLBACK, then raise). Returns True when committed, False for an
        expected rollback; failures are raised as they are. The default serves
        ``one_statement`` sessions: :meth:`call`, then :meth:`answered`."""
        if not self.one_statement:
            raise NotImplementedError(f"{type(self).__name__} runs its transactions through execute() only")
        return (yield from one_call(self, name, inputs))

    def execute(self, name: str, inputs: object) -> bool:
        """Run and commit ``name``; False for an expected rollback (TPC-C's 1% New-Order).

        On failure: roll back, then raise the driver's exception unchanged so that the
        engine can tell retryable and disconnect errors apart through the target. The
        default runs :meth:`transaction` on ``transaction_cursor``, waiting for each result.
        """
        steps, cur = self.transaction(name, inputs), self.transaction_cursor
        assert cur is not None, "a session that runs transaction() names its transaction_cursor"
        try:
            statement = next(steps)
            while True:
                try:
                    cur.execute(*statement)
                except Exception as exc:  # noqa: BLE001 - the transaction decides (roll back, raise)
                    statement = steps.throw(exc)
                else:
                    statement = next(steps)
        except StopIteration as done:
            return bool(done.value)

    def is_retryable(self, exc: BaseException) -> bool:
        """Whether ``exc`` is worth another attempt beyond what the target retries
        (deadlocks, serialization failures): a workload's own rules (custom's retry_on)."""
        return False

    def keying_time(self, name: str) -> float:
        """Seconds to wait before ``name``: a draw of --keying (a workload whose rules set
        keying times answers ``spec`` itself, as TPC-C does)."""
        return self.keying_delay.draw(self.wait_rng)

    def think_time(self, name: str) -> float:
        """Seconds to wait after ``name``: a draw of --think (``spec``: see keying_time)."""
        return self.think_delay.draw(self.wait_rng)

    def rebind(self, conn: Any) -> None:
        """Use ``conn`` from now on (after a reconnect): prepare statements again here."""
        self.conn = conn


def one_call(session: Session, name: str, inputs: object) -> Generator[Statement, None, bool]:
    """A one-statement transaction as a generator of statements: ``session.call()``'s
    statement, then ``session.answered()`` with its result or its error."""
    try:
        yield session.call(name, inputs)
    except Exception as exc:  # noqa: BLE001 - answered() judges it
        return session.answered(name, inputs, exc)
    return session.answered(name, inputs, None)


class Background(ABC):
    """A component that runs for a whole step beside one worker's users.

    Made by :meth:`~tpsbench.core.workload.Workload.background` in every worker process
    before the step's users open their sessions, so that the workload can hand it to
    them (TPC-C's terminals queue their Delivery requests with it). The engine opens
    its session on a connection of its own, runs that session's transactions as it runs
    a user's (retries, reconnects, latency into the same histograms), and calls
    :meth:`stop` at the step's end.
    """

    #: what it is, for the step's problems ("deferred delivery")
    name: ClassVar[str] = "background"

    @abstractmethod
    def open_session(self, ctx: RunContext, conn: Any, target: Target, timing: TimingSink) -> Session:
        """Its session on ``conn``; ``timing`` records its spans that are not transactions."""

    def stop(self) -> None:  # noqa: B027 - a hook: a background with nothing waiting has nothing to wake
        """The step has ended: wake whatever waits for work, so that its thread ends."""
