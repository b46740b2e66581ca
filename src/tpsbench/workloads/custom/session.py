"""One virtual user of a workload file: its parameters' streams and its statements, for its table.

The file's transactions are a table built when it is read (transactions.py), and the
generic session deals them from a shuffled deck and runs them
(tpsbench.core.mix_session). What is this user's alone is here, and everything that
can be done once is done when the session opens: each statement's text is rendered for
the target's driver (its placeholder, sqltext.py) and its parameters' order fixed, each
parameter gets an endless stream of values drawn by numpy a pool at a time
(generators.py), and each rule is resolved to the codes the target's dialect reports.
A transaction then only deals a card, takes values from the streams and sends its
statements, with bound parameters, on the target's fast cursor where it has one
(libpq's prepared statements, mysqlclient's C connection; else the DB-API cursor).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterator, Mapping
from itertools import chain, repeat
from typing import Any

import numpy as np

from tpsbench.core.cursor import Statement
from tpsbench.core.mix_session import MixSession
from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.core.transactions import TransactionTable, shuffled_in_place
from tpsbench.workloads.custom import generators
from tpsbench.workloads.custom.spec import Spec, Transaction
from tpsbench.workloads.custom.transactions import cards, steps, table_of

#: values drawn per numpy call for a parameter's stream
POOL = 256


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


class CustomSession(MixSession):
    """A user of a workload file on one connection (see the module docstring)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target, spec: Spec,
                 queried: Mapping[str, list[Any]], table: TransactionTable[Any] | None = None) -> None:
        """``table``: the file's transactions (transactions.table_of), made once per run by the workload."""
        super().__init__(ctx, user_id, users, conn, target, table if table is not None else table_of(spec))
        dialect, mark = target.sql, target.placeholder()
        rng = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([ctx.seed, 0xC5, user_id])))
        sizes = spec.sizes(ctx.scale)
        self.plan = {t.name: steps(t, target.dialect, mark) for t in spec.transactions}
        self.inputs_of = {t.name: Inputs(t, rng, sizes, ctx.seed, queried) for t in spec.transactions}
        self.deal(shuffled_in_place(random.Random(int(rng.integers(1 << 62)))), cards(self.table.weights))
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
        self.use_cursor(cur if cur is not None else conn.cursor())
