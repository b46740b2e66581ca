"""A workload file's transactions as a table (tpsbench.core.transactions), built when the file is read.

Why a table built at load time: a custom workload's transactions are the user's, so
their entries cannot be modules of their own as TPC-C's are; each [[transaction]] of the
file becomes an entry whose functions know it by name (:class:`DrawInputs`,
:class:`SendSteps`) and reach the user's per-user state through the session: its
parameter streams and its statements rendered for the target (tpsbench.workloads.custom.session).
The generic session then deals, dispatches and waits for them as for every workload.

The connection is in autocommit mode and BEGIN, COMMIT and ROLLBACK are statements of
their own (the dialect's), as sysbench sends them: so a transaction is a generator of
statements (:func:`send`), which the engine may run for many users on one thread
(tpsbench.engine.multiplex), or on the user's own through Session.execute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from tpsbench.core.cursor import Statement
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.transactions import Transaction as Entry
from tpsbench.core.transactions import TransactionTable
from tpsbench.workloads.custom.rules import Errors
from tpsbench.workloads.custom.spec import Spec, Transaction
from tpsbench.workloads.custom.sqltext import for_driver, parse

if TYPE_CHECKING:
    from tpsbench.workloads.custom.session import CustomSession

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


def cards(weights: Mapping[str, float]) -> dict[str, int]:
    """Cards per deck in the weights' proportions: every full deck holds each transaction
    exactly its share, so a short run meets the weights instead of missing them by chance
    (as TPC-C's deck does). Whole weights make a deck of their sum (divided by their
    common divisor); others a deck of 1000 cards, each share rounded (at least one card)."""
    whole = all(float(w).is_integer() for w in weights.values())
    if whole:
        divisor = reduce(math.gcd, (int(w) for w in weights.values()))
        counts = {name: int(w) // divisor for name, w in weights.items()}
    if not whole or sum(counts.values()) > 100 * DECK_CARDS:
        total = sum(weights.values())
        counts = {name: max(1, round(w / total * DECK_CARDS)) for name, w in weights.items()}
    return counts


# -- an entry's functions: each knows its transaction by name ------------------------------
@dataclass(frozen=True, slots=True)
class DrawInputs:
    """One attempt's parameters of the transaction ``name``, from the user's streams."""

    name: str

    def __call__(self, s: CustomSession) -> dict[str, Any]:
        return s.inputs_of[self.name].draw()


@dataclass(frozen=True, slots=True)
class SendSteps:
    """The transaction ``name``'s statements, rendered for the user's target."""

    name: str

    def __call__(self, s: CustomSession, values: dict[str, Any]) -> Generator[Statement, None, bool]:
        return send(s, s.plan[self.name], values)


def send(s: CustomSession, plan: tuple[Step, ...], values: dict[str, Any]) -> Generator[Statement, None, bool]:
    """BEGIN, the statements, COMMIT; False (an expected rollback) where a statement's
    rule says so: it returned or changed no row (rollback_if), or failed with one of
    its rollback_on errors. Any other failure rolls back and is raised as it is, for
    the engine to retry, reconnect or count."""
    cur = s.transaction_cursor
    assert cur is not None
    step: Step | None = None
    try:
        yield s.begin
        for step in plan:
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
            yield s.commit
            return True
    except Exception as exc:
        try:
            yield s.rollback
        except Exception:  # noqa: BLE001 - the connection may be gone; the first error matters
            pass
        if step is not None and step.rollback_on and step.rollback_on.matches(exc):
            return False
        raise
    yield s.rollback
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


def table_of(spec: Spec, inputs: Callable[[str], Callable[[Any], dict[str, Any]]] = DrawInputs,
             ) -> TransactionTable[CustomSession]:
    """The file's transactions as entries, in its order, weighted as it weighs them; a
    workload built on the file's format (tracemix) gives its own ``inputs``."""
    return TransactionTable(Entry(t.name, t.weight, inputs(t.name), steps=SendSteps(t.name))
                            for t in spec.transactions)
