"""One generic virtual user for any transaction table: :class:`MixSession`.

Why: what every workload's session used to write again (the shuffled deck, dispatch by
name, the choice between a stored-procedure call and the statements, the threaded
``execute()`` with its commit and rollback, the rules' keying and think times) is the
same for all of them once the transactions are a table
(tpsbench.core.transactions). A workload subclasses this only for its real per-user
state: a home warehouse, a random stream, trade ids, its statements and its cursor.

A subclass, in its ``__init__`` after ``super().__init__(...)``:

1. deals its deck: ``self.deal(permuted(gen), self.table.cards(shares))``, with the
   shuffle of its own random stream (tpsbench.core.transactions);
2. turns on the call path where the run sends calls: ``self.use_calls(True)`` (every
   entry that has ``call``) or ``self.use_calls({"trade_order", ...})``;
3. takes its cursor in :meth:`rebind` with :meth:`use_cursor` (the cursor that the
   entries' functions, calls and steps run on, and how a ``run`` transaction commits
   and rolls back), and calls ``rebind(conn)`` once.

The engine then runs each user one of two ways, which this class derives from the table
and the paths in use:

- on a shared thread (tpsbench.engine.multiplex), when every transaction of the table
  goes as a call or as steps and the cursor can send without waiting:
  ``transaction_cursor`` is the cursor, and ``one_statement`` is True when every one is
  a call (the engine then uses :meth:`call` and :meth:`answered` without a generator);
- on the user's own thread otherwise: ``transaction_cursor`` is None and :meth:`execute`
  runs each transaction by its path (call, else ``run``, else its steps).

The hot path is a dict lookup and a call per step: ``next_transaction`` is one ``next()``
of the deck, ``inputs``, ``call`` and ``answered`` each one lookup of the entry's function.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
from collections.abc import Callable, Collection, Generator, Iterator, Mapping, Sequence
from typing import Any

from tpsbench.core.cursor import Statement
from tpsbench.core.session import RunContext, Session, one_call
from tpsbench.core.target import Target
from tpsbench.core.transactions import Deck, Shuffle, TransactionTable


class MixSession(Session):
    """A virtual user that deals, draws and runs the transactions of :attr:`table`
    (see the module docstring for what a subclass adds)."""

    #: the workload's transactions; a subclass names its table here, and a session can
    #: be given another (an extended one) when it is made
    table: TransactionTable[Any]

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target,
                 table: TransactionTable[Any] | None = None) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        if table is not None:
            self.table = table
        entries = self.table.transactions
        self._inputs = {t.name: t.inputs for t in entries}
        self._run = {t.name: t.run for t in entries if t.run is not None}
        self._steps = {t.name: t.steps for t in entries if t.steps is not None}
        #: the rules' waits (--keying spec, --think spec), else the engine's draws
        self.spec_keying, self.spec_think = self.keying_delay.kind == "spec", self.think_delay.kind == "spec"
        self._keying = {t.name: t.keying_s for t in entries}
        self._think = {t.name: (t.think_s, t.think_cap * t.think_s) for t in entries}
        #: the cursor the entries run on, and how a ``run`` transaction ends (use_cursor)
        self.cur: Any = None
        self.commit_transaction: Callable[[], None] = conn.commit
        self.rollback_transaction: Callable[[], None] = conn.rollback
        self.deck: Deck | None = None
        self._cards: Iterator[str] = iter(())
        #: the last committed transaction's output, and a call's answer to decode when read
        self._output: object = None
        self._pending: tuple[Callable[[Sequence[Any], Any], object], Sequence[Any], object] | None = None
        self.use_calls(())

    @functools.cached_property
    def spec_rng(self) -> random.Random:
        """The stream the rules' think times are drawn from: ``wait_rng``, made on first use
        (a subclass may set its own instead)."""
        return self.wait_rng

    # -- set-up (a subclass's __init__ and rebind) --------------------------------------
    def deal(self, shuffle: Shuffle, cards: Mapping[str, int] | None = None) -> None:
        """Deal from a deck of ``cards`` (default: the table's weights), shuffled by ``shuffle``."""
        self.deck = Deck(self.table.cards() if cards is None else cards, shuffle)
        self._cards = iter(self.deck)

    def use_calls(self, names: bool | Collection[str]) -> None:
        """Send these transactions as their one call (True: every entry that has one;
        False or empty: none), the others by their statements; sets ``one_statement``
        and :attr:`sends_statements`. Call :meth:`use_cursor` (rebind) after it."""
        table = self.table
        chosen = {t.name for t in table if t.call is not None} if names is True else set(names or ())
        for name in chosen:
            if name not in table or table[name].call is None:
                raise ValueError(f"{name}: no such transaction with a call in the table")
        self.calls = frozenset(chosen)
        self._call = {name: table[name].call for name in chosen}
        self._answer = {name: table[name].answer for name in chosen}
        self.one_statement = len(chosen) == len(table)
        #: every transaction goes as a call or as steps: the engine may share a thread
        self.sends_statements = all(t.name in chosen or t.steps is not None for t in table)

    def use_cursor(self, cur: Any, commit: Callable[[], None] | None = None,
                   rollback: Callable[[], None] | None = None) -> None:
        """Run on ``cur`` from now on; a ``run`` transaction ends with ``commit`` and
        ``rollback`` (default: the connection's). ``transaction_cursor`` follows: ``cur``
        where every transaction is sent statement by statement, else None."""
        self.cur = cur
        self.commit_transaction = commit if commit is not None else self.conn.commit
        self.rollback_transaction = rollback if rollback is not None else self.conn.rollback
        self.transaction_cursor = cur if self.sends_statements else None

    # -- the Session interface ----------------------------------------------------------
    def next_transaction(self) -> str:
        return next(self._cards)

    def inputs(self, name: str) -> object:
        return self._inputs[name](self)

    def call(self, name: str, inputs: object) -> Statement:
        return self._call[name](self, inputs)  # type: ignore[misc]  # use_calls took only entries with a call

    def answered(self, name: str, inputs: object, error: Exception | None) -> bool:
        return self._answer[name](self, inputs, error)  # type: ignore[misc]  # use_calls took only entries with an answer

    def transaction(self, name: str, inputs: object) -> Generator[Statement, None, bool]:
        """The call as a one-statement transaction where it goes as a call, else its steps."""
        if name in self.calls:
            return one_call(self, name, inputs)
        steps = self._steps.get(name)
        if steps is None:
            raise NotImplementedError(f"{name} runs through execute() only")
        return steps(self, inputs)

    def execute(self, name: str, inputs: object) -> bool:
        """Run ``name`` by its path: its call, else its ``run`` statements and a commit
        (rolled back for an expected rollback, and on a failure, which is raised as it
        is), else its steps on the cursor."""
        if name in self.calls:
            try:
                self.cur.execute(*self.call(name, inputs))
            except Exception as exc:  # noqa: BLE001 - answered() judges it
                return self.answered(name, inputs, exc)
            return self.answered(name, inputs, None)
        run = self._run.get(name)
        if run is None:
            return super().execute(name, inputs)
        try:
            output = run(self, inputs)
            if output is None:
                self.rollback_transaction()
                return False
            self.commit_transaction()
        except BaseException:
            with contextlib.suppress(Exception):  # the connection may be gone; the first error matters
                self.rollback_transaction()
            raise
        self._output, self._pending = output, None
        return True

    def keying_time(self, name: str) -> float:
        if self.spec_keying:
            return self._keying[name]
        return self.keying_delay.draw(self.wait_rng)

    def think_time(self, name: str) -> float:
        """The rules' think time of ``name`` (:meth:`spec_think_time`), else a draw of --think."""
        if self.spec_think:
            return self.spec_think_time(name)
        return self.think_delay.draw(self.wait_rng)

    def spec_think_time(self, name: str) -> float:
        """One draw of the rules' think time of ``name`` from ``spec_rng``: ``-ln(r) * mean``
        with r uniform in (0, 1], cut at its cap."""
        mean, cap = self._think[name]
        return min(-math.log(1.0 - self.spec_rng.random()) * mean, cap)

    # -- outputs ------------------------------------------------------------------------
    def answer_later(self, decode: Callable[[Sequence[Any], Any], object], rows: Sequence[Any],
                     inputs: object) -> None:
        """Keep a call's ``rows`` as the last output, decoded by ``decode(rows, inputs)``
        only when :attr:`last_output` is read: a run only counts its transactions."""
        self._pending = decode, rows, inputs

    @property
    def last_output(self) -> object:
        """The last committed transaction's output, as the user would see it (tests and
        debugging look at it)."""
        if self._pending is not None:
            decode, rows, inputs = self._pending
            self._output, self._pending = decode(rows, inputs), None
        return self._output

    @last_output.setter
    def last_output(self, output: object) -> None:
        self._output, self._pending = output, None
