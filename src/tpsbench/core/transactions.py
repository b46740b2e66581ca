"""A workload's transactions as one table: a typed record per transaction type, and its deck.

Why a table: a transaction type is its name, its weight in the mix, how its inputs are
drawn, how it runs (its statements, and where the run sends it so, one call of its stored
procedure with the answer read back) and the rules' keying and think times. With all of
that in one :class:`Transaction` per type and the types in one :class:`TransactionTable`,
adding a transaction is one module (its inputs, statements, call and answer) and one
entry; the generic session (tpsbench.core.mix_session.MixSession) deals the deck,
dispatches by name, picks the path and waits the rules' waits for every workload alike.

A transaction may run three ways; an entry gives those it has:

- ``run(session, inputs)``: its statements on the session's own cursor, on the user's
  thread, inside a transaction the session commits afterwards. It returns the output
  (anything but None), or None for an expected rollback (TPC-C's 1% New-Order), which
  the session then rolls back. A failure is raised as it is.
- ``steps(session, inputs)``: a generator of statements in autocommit mode, BEGIN and
  COMMIT included where it has them (``Session.transaction``'s contract), which the
  engine may run for many users on one thread (tpsbench.engine.multiplex).
- ``call(session, inputs)`` and ``answer(session, inputs, error)``: one statement that
  is the whole transaction in autocommit (a stored procedure's call, or a lone query),
  then its result read from the session's cursor (``error`` None) or its error judged:
  True committed, False an expected rollback, a failure raised
  (``Session.call``/``Session.answered``). Used only where the session turns calls on
  (MixSession.use_calls: the run option ``procedures``, or a one-statement mode).

Every function takes the session first, so that it reaches the session's per-user
state (draws, home warehouse, statements) as plain attributes; the entry is generic over
the session's type ``S`` and the inputs' type ``I``, and mypy checks that ``run``,
``steps``, ``call`` and ``answer`` take what ``inputs`` returns. Entries name
module-level functions, never lambdas: a workload and its table travel to spawned
worker processes by pickling.

:class:`Deck` deals the mix: a shuffled deck dealt to its end before the next shuffle,
so every window of one deck holds each transaction exactly its weight (short runs meet
the rules' minimums instead of missing them by chance). Each workload shuffles with
its own random stream (:func:`permuted`, :func:`shuffled_copy`, :func:`shuffled_in_place`),
so that the seeded sequences of cards it dealt before the table existed stay the same.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any, Generic, TypeVar

import numpy as np

from tpsbench.core.cursor import Statement
from tpsbench.core.parse import parse_mix

S = TypeVar("S")
I = TypeVar("I")  # noqa: E741 - the inputs' type, as the docstring names it

#: cards per 1,000 when --mix gives shares rather than the rules' whole weights
SHARE_CARDS = 1000
#: a negative exponential think time is cut at this many times its mean (TPC-C's clause 5.2.5.4)
THINK_CAP = 10.0


@dataclass(frozen=True, slots=True)
class Transaction(Generic[S, I]):
    """One transaction type: its name, weight, inputs, paths and the rules' waits.

    See the module docstring for what ``run``, ``steps``, ``call`` and ``answer`` do;
    an entry has at least one of ``run``, ``steps`` and ``call``, and ``answer`` exactly
    when it has ``call``.
    """

    #: the name reports and --mix use (a Python identifier)
    name: str
    #: its weight in the rules' mix, as cards in the deck (TransactionTable.cards); 0:
    #: never dealt (the session picks it itself, as TPC-E's market transactions)
    weight: float
    #: one attempt's inputs, drawn from the session's streams; a retry reuses them
    inputs: Callable[[S], I]
    #: the statements on the user's thread, committed by the session; None: roll back
    run: Callable[[S, I], object] | None = None
    #: the statements one at a time in autocommit (BEGIN/COMMIT as statements)
    steps: Callable[[S, I], Generator[Statement, None, bool]] | None = None
    #: the one statement that is the whole transaction, in autocommit
    call: Callable[[S, I], Statement] | None = None
    #: after ``call``'s statement: read its result or judge its error
    answer: Callable[[S, I, Exception | None], bool] | None = None
    #: the rules' keying time (``--keying spec``), seconds
    keying_s: float = 0.0
    #: the rules' mean think time (``--think spec``): negative exponential, seconds
    think_s: float = 0.0
    #: a spec think time is cut at this many times its mean
    think_cap: float = THINK_CAP

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"transaction name {self.name!r} is not an identifier")
        if isinstance(self.weight, bool) or not (math.isfinite(self.weight) and self.weight >= 0):
            raise ValueError(f"{self.name}: weight {self.weight!r} is not a finite number >= 0")
        if self.run is None and self.steps is None and self.call is None:
            raise ValueError(f"{self.name}: give at least one of run, steps and call")
        if (self.call is None) != (self.answer is None):
            raise ValueError(f"{self.name}: call and answer go together")
        for what, value in (("keying_s", self.keying_s), ("think_s", self.think_s)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{self.name}: {what} {value!r} is not a finite number of seconds >= 0")
        if not (math.isfinite(self.think_cap) and self.think_cap >= 1):
            raise ValueError(f"{self.name}: think_cap {self.think_cap!r} is not a finite multiple >= 1")


class TransactionTable(Generic[S]):
    """A workload's transaction types, in report order; immutable.

    ``Workload.transaction_names`` is its :attr:`names`; a session subclass names it as
    its ``table`` (tpsbench.core.mix_session). :meth:`extended` makes a table with more
    entries, which is how a test or a derived workload adds a transaction.
    """

    __slots__ = ("transactions", "by_name")

    def __init__(self, transactions: Iterable[Transaction[S, Any]]) -> None:
        entries = tuple(transactions)
        by_name: dict[str, Transaction[S, Any]] = {}
        for entry in entries:
            if entry.name in by_name:
                raise ValueError(f"transaction {entry.name!r} is in the table twice")
            by_name[entry.name] = entry
        if not any(entry.weight for entry in entries):
            raise ValueError("a transaction table needs at least one transaction with cards in the deck")
        #: the entries, in report order
        self.transactions: tuple[Transaction[S, Any], ...] = entries
        self.by_name: Mapping[str, Transaction[S, Any]] = by_name

    @property
    def names(self) -> tuple[str, ...]:
        """Every transaction's name, in report order."""
        return tuple(entry.name for entry in self.transactions)

    @property
    def dealt(self) -> tuple[str, ...]:
        """The names the deck deals (weight above 0): those --mix may name."""
        return tuple(entry.name for entry in self.transactions if entry.weight)

    @property
    def weights(self) -> dict[str, float]:
        """The rules' weights, by name (dealt transactions only)."""
        return {entry.name: entry.weight for entry in self.transactions if entry.weight}

    def __getitem__(self, name: str) -> Transaction[S, Any]:
        return self.by_name[name]

    def __iter__(self) -> Iterator[Transaction[S, Any]]:
        return iter(self.transactions)

    def __len__(self) -> int:
        return len(self.transactions)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def extended(self, *more: Transaction[S, Any]) -> TransactionTable[S]:
        """This table with ``more`` entries after its own (a name already here is refused)."""
        return TransactionTable((*self.transactions, *more))

    def shares(self, text: str) -> dict[str, float] | None:
        """The mix ``--mix text`` asks for, each dealt transaction's share summing to 1
        (None for an empty text: the rules' weights), or a one-line error."""
        return parse_mix(text, self.dealt) if text else None

    def cards(self, shares: Mapping[str, float] | None = None) -> dict[str, int]:
        """Cards per deck by name: ``shares`` (:meth:`shares`) dealt as cards per
        ``SHARE_CARDS``; else the rules' weights, as many cards each where they are whole
        numbers, else in proportion per ``SHARE_CARDS``."""
        if shares is None:
            weights = self.weights
            if all(float(w).is_integer() for w in weights.values()):
                return {name: int(w) for name, w in weights.items()}
            total = sum(weights.values())
            shares = {name: w / total for name, w in weights.items()}
        return {name: round(SHARE_CARDS * share) for name, share in shares.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (TransactionTable, (self.transactions,))


#: given the cards in table order, a function that returns them in the order of one
#: deck's deal (called once per deck; it may keep state between decks)
Shuffle = Callable[[list[str]], Callable[[], list[str]]]


class Deck:
    """Transaction names dealt from a shuffled deck, reshuffled whenever it runs out.

    The deal is an endless iterator in C (one shuffled deck after another), so a card
    is one ``next()`` (:meth:`draw`, or ``next()`` of the deck itself).
    """

    __slots__ = ("_deal",)

    def __init__(self, counts: Mapping[str, int], shuffle: Shuffle) -> None:
        """``counts``: cards by name (TransactionTable.cards); ``shuffle``: how each deck
        is shuffled, from the workload's own random stream."""
        cards = [name for name, count in counts.items() for _ in range(count)]
        if not cards:
            raise ValueError("a deck needs at least one card")
        one_deck = shuffle(cards)
        self._deal: Iterator[str] = chain.from_iterable(iter(one_deck, None))

    def draw(self) -> str:
        """The next card."""
        return next(self._deal)

    def __iter__(self) -> Iterator[str]:
        return self._deal


def permuted(gen: np.random.Generator) -> Shuffle:
    """Each deck a numpy permutation of the cards by ``gen`` (TPC-C's deal)."""

    def deal(cards: list[str]) -> Callable[[], list[str]]:
        deck, n = np.array(cards, dtype=object), len(cards)
        return lambda: deck[gen.permutation(n)].tolist()

    return deal


def shuffled_copy(rng: random.Random) -> Shuffle:
    """Each deck a fresh copy of the cards in table order, shuffled by ``rng`` (TPC-E's deal)."""

    def deal(cards: list[str]) -> Callable[[], list[str]]:
        def one() -> list[str]:
            out = cards[:]
            rng.shuffle(out)
            return out

        return one

    return deal


def shuffled_in_place(rng: random.Random) -> Shuffle:
    """Each deck the last one shuffled again by ``rng`` (custom workloads' deal)."""

    def deal(cards: list[str]) -> Callable[[], list[str]]:
        def one() -> list[str]:
            rng.shuffle(cards)
            return list(cards)

        return one

    return deal
