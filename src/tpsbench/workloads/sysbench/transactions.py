"""sysbench's transactions as a table: one entry per script (mode), all made of oltp_common.lua's statements.

Why one module for the ten modes: a sysbench script is one transaction type built from
the same statement groups (common.py's SQL), each mode a different list of them with
counts from the options (modes.py's :func:`~tpsbench.workloads.sysbench.modes.mode_plan`).
So every entry shares the same functions: :func:`draw` draws a transaction's statements
up front, as sysbench draws them (a retry after a deadlock sends the same ones again),
:func:`send` sends them one at a time and counts each by its kind, and where the
options leave a transaction one statement in autocommit (oltp_point_select ...) the
session sends it as :func:`call` and :func:`answer` instead, which the engine runs
without a generator (tpsbench.engine.multiplex).

Each group's drawer appends its statements in sysbench's order, drawing in its order;
the session looks the drawers up once (``SysbenchSession.steps``) rather than comparing
group names per transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

from tpsbench.core.cursor import Statement
from tpsbench.core.errors import error_codes
from tpsbench.core.transactions import Transaction, TransactionTable
from tpsbench.workloads.sysbench.modes import MODES

if TYPE_CHECKING:
    from tpsbench.workloads.sysbench.session import SysbenchSession

#: unique key violations: sysbench's pgsql driver ignores 23505 and restarts the event
DUPLICATE_SQLSTATES = frozenset({"23505"})
DUPLICATE_CODES = frozenset({1062, 2627, 2601})

#: appends one statement group's statements: (session, out, the group's SQL per table, count)
Drawer = Callable[["SysbenchSession", list[Statement], tuple[str, ...], int], None]


# -- inputs: every statement of one transaction, drawn up front -----------------------------
def draw(s: SysbenchSession) -> list[Statement]:
    """Every statement of one transaction with its parameters, drawn as sysbench draws
    them, BEGIN and COMMIT included where the mode has them."""
    transactional = s.plan.transactional
    out: list[Statement] = [s.begin] if transactional else []
    for drawer, texts, count in s.steps:
        drawer(s, out, texts, count)
    if transactional:
        out.append(s.commit)
    return out


def by_id(s: SysbenchSession, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
    sql, default, size = texts[s.rand.uniform(1, s.tables)], s.rand.default, s.table_size
    for _ in range(count):
        out.append((sql, (default(1, size),)))


def ranges(s: SysbenchSession, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
    sql, default, size = texts[s.rand.uniform(1, s.tables)], s.rand.default, s.table_size
    span = s.opts.range_size - 1
    for _ in range(count):
        low = default(1, size)
        out.append((sql, (low, low + span)))


def non_index_updates(s: SysbenchSession, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
    rnd = s.rand
    sql = texts[rnd.uniform(1, s.tables)]
    for _ in range(count):
        out.append((sql, (rnd.digit_groups(10), rnd.default(1, s.table_size))))


def delete_inserts(s: SysbenchSession, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
    rnd, size = s.rand, s.table_size
    t = rnd.uniform(1, s.tables)
    delete, insert = s.sql.by_group["deletes"][t], s.sql.by_group["inserts"][t]
    for _ in range(count):
        ident, k = rnd.default(1, size), rnd.default(1, size)
        out.append((delete, (ident,)))
        out.append((insert, (ident, k, rnd.digit_groups(10), rnd.digit_groups(5))))


def insert_auto(s: SysbenchSession, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
    rnd = s.rand
    sql = texts[rnd.uniform(1, s.tables)]
    values: tuple[int | str, ...] = (rnd.default(1, s.table_size), rnd.digit_groups(10), rnd.digit_groups(5))
    if s.sql.client_ids:
        values = (s.next_client_id, *values)
        s.next_client_id -= s.users
    out.append((sql, values))


def random_points(s: SysbenchSession, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
    low, high = s.k_slice()
    default = s.rand.default
    out.append((s.sql.random_points, tuple(default(low, high) for _ in range(s.opts.random_points))))


def random_ranges(s: SysbenchSession, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
    low, high = s.k_slice()
    params: list[int] = []
    for _ in range(s.opts.number_of_ranges):
        value = s.rand.default(low, high)
        params += (value, value + s.opts.delta)
    out.append((s.sql.random_ranges, tuple(params)))


#: each statement group's drawer (modes.py's ModePlan names the groups)
DRAWERS: dict[str, Drawer] = {
    "point_selects": by_id, "index_updates": by_id, "deletes": by_id,
    "simple_ranges": ranges, "sum_ranges": ranges, "order_ranges": ranges, "distinct_ranges": ranges,
    "non_index_updates": non_index_updates, "delete_inserts": delete_inserts, "insert_auto": insert_auto,
    "random_points": random_points, "random_ranges": random_ranges,
}


# -- the statement path, and the call of a one-statement mode ------------------------------
def send(s: SysbenchSession, inputs: list[Statement]) -> Generator[Statement, None, bool]:
    """The transaction's statements, each counted by its kind once it has run; False
    when a duplicate key ended it (sysbench ignores those).

    A DELETE that raced another user's DELETE of the same id finds no row, and the
    INSERT that follows it then collides with the other user's INSERT: sysbench's
    pgsql driver counts that as an ignored error and starts a new event, so this
    rolls back and reports an expected rollback rather than an error.
    """
    runner, totals = s.runner, s.totals
    assert runner is not None
    try:
        for statement in inputs:
            yield statement
            totals[runner.kind] += 1
    except Exception as exc:
        if s.plan.transactional:
            try:
                yield s.rollback
                totals[runner.kind] += 1
            except Exception:  # noqa: BLE001 - the connection may be gone; the engine reconnects
                pass
        if is_duplicate(exc):
            return False
        raise
    return True


def call(s: SysbenchSession, inputs: list[Statement]) -> Statement:
    """The one statement of a mode the options leave at one statement in autocommit."""
    return inputs[0]


def answer(s: SysbenchSession, inputs: list[Statement], error: Exception | None) -> bool:
    """The statement counted by its kind once it has run; False for a duplicate key,
    as :func:`send` does."""
    if error is None:
        s.totals[s.runner.kind] += 1  # type: ignore[union-attr]  # opened: rebind() set the runner
        return True
    if is_duplicate(error):
        return False
    raise error


def is_duplicate(exc: BaseException) -> bool:
    state, code = error_codes(exc)
    if state in DUPLICATE_SQLSTATES or code in DUPLICATE_CODES:
        return True
    return type(exc).__name__ == "IntegrityError" and "UNIQUE" in str(exc)


#: every sysbench script, in MODES' order; a run deals only its --mode. Every mode has the
#: call path too: any may be one statement in autocommit (oltp_read_only with
#: --skip-trx, --point-selects 1 and --range-selects off), and the session turns it on
#: exactly then
TABLE: TransactionTable[SysbenchSession] = TransactionTable(
    Transaction(mode, 1.0, draw, steps=send, call=call, answer=answer) for mode in MODES)
#: the table of one run: its mode alone, so that the session's paths follow that entry
MODE_TABLES = {entry.name: TransactionTable([entry]) for entry in TABLE}
