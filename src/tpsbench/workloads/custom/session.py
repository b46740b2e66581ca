"""One virtual user of a workload file: its deck of transactions, its parameters, its statements.

Everything that can be done once is done when the session opens: each statement's text
is rendered for the target's driver (its placeholder, sqltext.py) and its parameters'
order fixed, each parameter gets an endless stream of values drawn by numpy a pool at a
time (generators.py), and each rule is resolved to the codes the target's dialect
reports. A transaction then only deals a card, takes values from the streams and sends
its statements, with bound parameters, on the target's fast cursor where it has one
(libpq's prepared statements, mysqlclient's C connection; else the DB-API cursor).

The connection is in autocommit mode and BEGIN, COMMIT and ROLLBACK are statements of
their own (the dialect's), as sysbench sends them: so :meth:`CustomSession.transaction`
is a generator of statements, which the engine may run for many users on one thread
(tpsbench.engine.multiplex), or on the user's own through Session.execute.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from tpsbench.core.cursor import Statement
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.workloads.custom import generators
from tpsbench.workloads.custom.rules import Errors
from tpsbench.workloads.custom.spec import Spec, Transaction
from tpsbench.workloads.custom.sqltext import for_driver, parse

#: values drawn per numpy call for a parameter's stream
POOL = 256
#: cards of a deck whose weights are not all whole numbers (or too many to deal as they are)
DECK_CARDS = 1000


class IntoMismatch(TpsbenchError):
    """A statement's row has fewer columns than its ``into`` names: the file's mistake,
    counted as the transaction's error."""


@dataclass(frozen=True)
class Step:
    """One statement ready for the driver: its text, how its values are taken from a
    transaction's parameters, and what its result means."""

    sql: str
    values: Callable[[Mapping[str, Any]], Sequence[Any]]
    into: tuple[str, ...]
    rollback_if_no_rows: bool
    rollback_on: Errors


def steps(txn: Transaction, dialect: str, placeholder: str) -> tuple[Step, ...]:
    """The statements of ``txn`` for a target (its dialect's variants; prepare.py has
    checked that each has one)."""
    out = []
    for statement in txn.statements:
        text = statement.sql.for_dialect(dialect)
        assert text is not None, "prepare_run refuses a statement without SQL for the dialect"
        named = parse(text)
        out.append(Step(for_driver(named, placeholder), _getter(named.names), statement.into,
                        statement.rollback_if_no_rows, statement.rollback_on.for_dialect(dialect)))
    return tuple(out)


def _getter(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], Sequence[Any]]:
    if not names:
        return lambda values: ()
    if len(names) == 1:
        name = names[0]
        return lambda values: (values[name],)
    return itemgetter(*names)


def deck(weights: Mapping[str, float], rng: random.Random) -> Iterator[str]:
    """Transaction names dealt from shuffled decks of cards in the weights' proportions,
    deck after deck: every full deck holds each transaction exactly its share, so a short
    run meets the weights instead of missing them by chance (as TPC-C's deck does).
    Whole weights make a deck of their sum (divided by their common divisor); others
    a deck of 1000 cards, each share rounded (at least one card)."""
    whole = all(float(w).is_integer() for w in weights.values())
    if whole:
        divisor = reduce(math.gcd, (int(w) for w in weights.values()))
        counts = {name: int(w) // divisor for name, w in weights.items()}
    if not whole or sum(counts.values()) > 100 * DECK_CARDS:
        total = sum(weights.values())
        counts = {name: max(1, round(w / total * DECK_CARDS)) for name, w in weights.items()}
    cards = [name for name, count in counts.items() for _ in range(count)]

    def shuffled(_: None) -> list[str]:
        rng.shuffle(cards)
        return list(cards)

    return chain.from_iterable(map(shuffled, repeat(None)))


def stream(fill: Callable[[int], list[Any]]) -> Iterator[Any]:
    """Endless values, ``POOL`` at a time from ``fill(n)``: one numpy call per pool, one
    ``next()`` in C per value."""
    return chain.from_iterable(map(fill, repeat(POOL)))


def python_values(values: np.ndarray) -> list[Any]:
    """numpy's values as the driver takes them: texts as str, numbers as int or float."""
    if values.dtype.kind == "S":
        return [v.decode() for v in values.tolist()]
    return values.tolist()


def _indexes(rng: np.random.Generator, count: int) -> Callable[[int], list[Any]]:
    """``fill(n)`` for :func:`stream`: n row numbers of ``count`` rows, uniform."""
    return lambda n: rng.integers(0, count, n).tolist()


def _values(rng: np.random.Generator, draw: generators.Draw) -> Callable[[int], list[Any]]:
    """``fill(n)`` for :func:`stream`: n values of a generator, as the driver takes them."""
    return lambda n: python_values(draw(rng, 0, n))


class Inputs:
    """One transaction's parameters for one user: a stream per drawn parameter, constants
    as they are, ranges as pairs, and the time at each draw."""

    def __init__(self, txn: Transaction, rng: np.random.Generator, sizes: Mapping[str, int], seed: int,
                 queried: Mapping[str, list[Any]]) -> None:
        self.constants: dict[str, Any] = {}
        self.streams: list[tuple[str, Iterator[Any]]] = []
        self.ranges: list[tuple[str, str, int, Iterator[int]]] = []
        self.now: list[str] = []
        for name, gen in txn.params.items():
            key = f"{txn.name}.{name}"
            if gen.kind == "value":
                self.constants[name] = gen.args["value"]
            elif gen.kind == "now":
                self.now.append(name)
            elif gen.kind == "query":
                rows = queried[key]
                self.streams.append((name, map(rows.__getitem__, stream(_indexes(rng, len(rows))))))
            else:
                values = stream(_values(rng, generators.drawer(gen, key, sizes, seed)))
                if gen.kind == "range":
                    low, high = gen.names(name)
                    self.ranges.append((low, high, generators.bound(gen.args["size"], sizes) - 1, values))
                else:
                    self.streams.append((name, values))

    def draw(self) -> dict[str, Any]:
        values = dict(self.constants)
        for name, values_of in self.streams:
            values[name] = next(values_of)
        for low, high, span, lows in self.ranges:
            values[low] = start = next(lows)
            values[high] = start + span
        if self.now:
            stamp = dt.datetime.now().isoformat(sep=" ", timespec="seconds")
            for name in self.now:
                values[name] = stamp
        return values


class CustomSession(Session):
    """A user of a workload file on one connection (see the module docstring)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target, spec: Spec,
                 queried: Mapping[str, list[Any]]) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        dialect, mark = target.sql, target.placeholder()
        rng = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([ctx.seed, 0xC5, user_id])))
        sizes = spec.sizes(ctx.scale)
        self.plan = {t.name: steps(t, target.dialect, mark) for t in spec.transactions}
        self.inputs_of = {t.name: Inputs(t, rng, sizes, ctx.seed, queried) for t in spec.transactions}
        self.deal = deck({t.name: t.weight for t in spec.transactions}, random.Random(int(rng.integers(1 << 62))))
        self.begin: Statement = (dialect.begin, ())
        self.commit: Statement = (dialect.commit, ())
        self.rollback: Statement = (dialect.rollback, ())
        #: the file's retry_on errors, retried and counted as deadlocks are
        self.retry_on = spec.retry_on.for_dialect(target.dialect)
        self.rebind(conn)

    def is_retryable(self, exc: BaseException) -> bool:
        return bool(self.retry_on) and self.retry_on.matches(exc)

    def rebind(self, conn: Any) -> None:
        """The target's fast cursor on ``conn`` (else its DB-API cursor), in autocommit."""
        self.conn = conn
        cur = self.target.fast_cursor(conn)  # first: it reads what a kept connection holds
        self.target.set_autocommit(conn)
        self.transaction_cursor = cur if cur is not None else conn.cursor()

    def next_transaction(self) -> str:
        return next(self.deal)

    def inputs(self, name: str) -> dict[str, Any]:
        return self.inputs_of[name].draw()

    def transaction(self, name: str, inputs: object) -> Generator[Statement, None, bool]:
        """BEGIN, the statements, COMMIT; False (an expected rollback) where a statement's
        rule says so: it returned or changed no row (rollback_if), or failed with one of
        its rollback_on errors. Any other failure rolls back and is raised as it is, for
        the engine to retry, reconnect or count."""
        values: dict[str, Any] = inputs  # type: ignore[assignment]  # inputs() gave this dict of the transaction's parameters
        cur = self.transaction_cursor
        assert cur is not None
        step: Step | None = None
        try:
            yield self.begin
            for step in self.plan[name]:
                yield step.sql, step.values(values)
                if step.into:
                    row = cur.fetchone()
                    if row is None:
                        values.update(dict.fromkeys(step.into))
                    elif len(row) < len(step.into):
                        raise IntoMismatch(f"a row of {len(row)} column(s) for into {', '.join(step.into)}")
                    else:
                        values.update(zip(step.into, row))
                    if step.rollback_if_no_rows and row is None:
                        break
                elif step.rollback_if_no_rows and _no_rows(cur):
                    break
            else:
                step = None
                yield self.commit
                return True
        except Exception as exc:
            try:
                yield self.rollback
            except Exception:  # noqa: BLE001 - the connection may be gone; the first error matters
                pass
            if step is not None and step.rollback_on and step.rollback_on.matches(exc):
                return False
            raise
        yield self.rollback
        return False


def _no_rows(cur: Any) -> bool:
    """Whether the statement just run returned no row (a query) or changed none (DML).

    DB-API cursors describe a query's result (``description``) and may not count its rows
    (sqlite3 says -1), so a query's first row is fetched there; the targets' fast cursors
    count both kinds in ``rowcount``. MySQL counts rows an UPDATE changed, not matched.
    """
    if getattr(cur, "description", None) is not None:
        return cur.fetchone() is None
    return bool(cur.rowcount == 0)
