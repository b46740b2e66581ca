"""What a workload provides to be run: one virtual user's :class:`Session`.

The engine owns processes, threads, timing, retries and reconnects; a session owns the
workload's state on one DB-API connection (its mix deck, random streams, prepared
statements). Keeping the two apart is what lets every workload get the same honest
measurement: the engine times exactly ``execute()``, nothing the session does before it
(drawing inputs) or after it (think time) is part of a transaction's latency.

The session runs on the hot path, once per transaction per user: it should allocate
little, compile nothing (SQL text is fixed at :meth:`Session.rebind`, where statements are
prepared) and use the DB-API connection directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tpsbench.targets.base import Target


#: one statement to send: SQL text (``%s`` or ``?`` markers, the target's) and its parameters
Statement = tuple[str, Sequence[Any]]


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

    @abstractmethod
    def next_transaction(self) -> str:
        """The name of the next transaction, from the workload's mix (deck)."""

    @abstractmethod
    def inputs(self, name: str) -> object:
        """Random inputs for one attempt of ``name``; retries reuse them."""

    #: The cursor that :meth:`transaction`'s statements run on, for a session that sends
    #: them one at a time in autocommit mode (BEGIN and COMMIT, where it has them, are
    #: statements like the others). When it can send without waiting (``encode`` and
    #: ``send_encoded``, ``fileno``, ``receive``: the targets' fast cursors), the engine
    #: may run the user on a thread shared with other users that waits on all their
    #: sockets at once (tpsbench.api.multiplex). None: the session has execute() of its own.
    transaction_cursor: Any = None

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
        try:
            yield self.call(name, inputs)
        except Exception as exc:  # noqa: BLE001 - answered() judges it
            return self.answered(name, inputs, exc)
        return self.answered(name, inputs, None)

    def execute(self, name: str, inputs: object) -> bool:
        """Run and commit ``name``; False for an expected rollback (TPC-C's 1% New-Order).

        On failure: roll back, then raise the driver's exception unchanged so that the
        engine can tell retryable and disconnect errors apart through the target. The
        default runs :meth:`transaction` on ``transaction_cursor``, waiting for each result.
        """
        steps, cur = self.transaction(name, inputs), self.transaction_cursor
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

    def keying_time(self, name: str) -> float:
        """Seconds to wait before ``name`` (TPC-C keying time); 0.0 when think is off."""
        return 0.0

    def think_time(self, name: str) -> float:
        """Seconds to wait after ``name`` (TPC-C think time); 0.0 when think is off."""
        return 0.0

    def rebind(self, conn: Any) -> None:
        """Use ``conn`` from now on (after a reconnect): prepare statements again here."""
        self.conn = conn

    # A session may also keep ``statement_counts``, a mapping of statement kind ("read",
    # "write", "other") to a running total: the worker reports its growth per interval
    # and steps show QPS by kind (see tpsbench.api.worker). Not an abstract member: most
    # workloads count transactions only.


class RunnableWorkload(ABC):
    """The run side of a workload: a mixin next to :class:`tpsbench.api.workload.Workload`."""

    #: every transaction name next_transaction() can return, in report order
    transaction_names: tuple[str, ...] = ()

    @abstractmethod
    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        """A session for user ``user_id`` (0-based) of ``users`` on ``conn``."""

    @abstractmethod
    def verify_schema(self, target: Target) -> dict[str, str]:
        """The run metadata (scale, constants ...) of a built schema.

        Raises TpsbenchError (one line) when the schema is missing, incomplete or another
        workload's, so that a run never starts against the wrong tables.
        """

    def prepare_run(self, target: Target, options: Mapping[str, str]) -> str | None:
        """Make the database ready for this run's sessions (e.g. install stored procedures).

        Called once, after the schema was verified and the run's checks passed, before
        the first user connects. Returns a line to show the user, or None.
        """
        return None

    def users_per_worker(self, target: Target, options: Mapping[str, str]) -> int:
        """How many users one worker process hosts before a step spreads over another.

        The engine's default: a step of ``u`` users runs on ceil(u / this) workers, at most
        one per core. 1 spreads every step over all cores, which suits workloads whose
        transactions are short, where the client's CPU per second is high. A workload
        whose transactions keep the server busy far longer than the client says more:
        users sharing one worker's thread then cost the client less CPU each, because
        each wake-up of that thread finds more results in (see TpccWorkload).
        """
        return 1

    @abstractmethod
    def evidence(self, conn: Any) -> dict[str, int]:
        """The database's own counters (e.g. order counts), read before and after a run."""

    @abstractmethod
    def expected_evidence(self, commits: dict[str, int]) -> dict[str, int]:
        """The change of :meth:`evidence` that the driver's commit counts imply."""
