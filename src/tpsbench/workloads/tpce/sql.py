"""How the TPC-E transactions write their SQL once and run it on every database.

Each transaction module has a ``statements(d)`` function that gives its SQL for a
:class:`~tpsbench.core.sql.SqlDialect` as a dataclass of its own (one typed field per
statement), written with ``?`` markers in the SQL the databases share; what differs
comes from the dialect, through the helpers here:

- ``LIMIT n`` after the statement, or SQL Server's ``TOP n`` after SELECT (:func:`top`,
  :func:`limit`);
- row locks of a read-then-write: ``FOR UPDATE`` (PostgreSQL, MySQL) or the
  ``WITH (UPDLOCK, ROWLOCK)`` hint after each table (SQL Server); nothing on SQLite,
  whose write transactions hold the database lock from their BEGIN IMMEDIATE;
- money updates wrapped in ``ROUND(.., 2)`` where DECIMAL columns hold doubles (SQLite),
  and bound as floats there (sqlite3 cannot bind Decimal);
- the driver's parameter marker (``?`` or ``%s``).

Statements whose shape depends on a count (an IN list of k trade ids) are built for every
count when the table is first asked for, and the table is cached per (dialect, marker)
(table.statements, which :func:`prepared` gives the driver's marker): the hot
path formats nothing.

:class:`Link` is how a session runs them: the target's fast cursor where it has one
(libpq's prepared statements, mysqlclient's C connection), which opens a transaction
before the first statement and ends it with its commit or rollback; else the driver's
DB-API cursor in autocommit mode, with the dialect's BEGIN (SQLite's BEGIN IMMEDIATE)
sent before a read-write transaction's first statement, so that its reads are inside
it, and read-only transactions left to autocommit. A session that calls stored
procedures keeps its connection in autocommit mode on the fast cursor too (Link's
``autocommit``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from tpsbench.core.sql import SqlDialect, marked, money_binder
from tpsbench.core.sql import counted as core_counted
from tpsbench.core.target import Target

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: the most trade ids one frame looks up or updates (Trade-Lookup and Trade-Update: 20)
MAX_TRADES = 20
CENT = Decimal("0.01")


S = TypeVar("S", bound="DataclassInstance")


def prepared(texts: S, mark: str) -> S:
    """A transaction's statements (a dataclass of statements, tuples of them or such
    dataclasses) for the driver's ``mark``: every text marked as core.sql.marked does."""
    if mark not in ("?", "%s"):
        raise ValueError(f"unsupported parameter marker {mark!r}")
    if mark == "?":
        return texts
    return replace(texts, **{f.name: _marked(getattr(texts, f.name), mark) for f in fields(texts)})


def _marked(value: Any, mark: str) -> Any:
    return prepared(value, mark) if is_dataclass(value) and not isinstance(value, type) else marked(value, mark)


def counted(make: Callable[[int], str], most: int = MAX_TRADES) -> tuple[str | None, ...]:
    """One statement per count up to Trade-Lookup's and Trade-Update's 20 trade ids (core.sql.counted)."""
    return core_counted(make, most)


def marks(k: int) -> str:
    """``?, ?, ...``: k parameter markers, for an IN list."""
    return ", ".join(["?"] * k)


def top(d: SqlDialect, n: int) -> str:
    """``TOP n `` to follow SELECT on SQL Server; "" elsewhere."""
    return f"TOP {n} " if d.top1 else ""


def limit(d: SqlDialect, n: int) -> str:
    """`` LIMIT n`` to end a statement; "" on SQL Server (see :func:`top`)."""
    return f" LIMIT {n}" if d.limit1 else ""


def as_text(value: object) -> str:
    """A text value as read, without the blanks PostgreSQL pads CHAR(n) values with
    (symbols, status and type ids), so that it compares equal to the same value read
    from any database."""
    return str(value).rstrip()


def cents(value: Decimal) -> Decimal:
    return value.quantize(CENT)


def stamp(moment: datetime) -> str:
    """A timestamp as bound and stored: ``YYYY-MM-DD HH:MM:SS``, the text the loader gives
    SQLite (which compares timestamps as text) and every other database reads."""
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def day(value: date) -> str:
    """A DATE as bound and stored: ``YYYY-MM-DD`` (the loader's text for DATE columns)."""
    return value.strftime("%Y-%m-%d")


class Link:
    """A session's statements and transactions on one connection (module docstring).

    ``autocommit``: the connection stays in autocommit mode even on the fast cursor, for
    sessions that send stored-procedure calls (each call its own transaction,
    procedures.py); their frames then open a read-write transaction with the dialect's
    BEGIN, as the DB-API path does, and leave read-only ones to autocommit.
    """

    def __init__(self, target: Target, conn: Any, autocommit: bool = False) -> None:
        fast = target.fast_cursor(conn)
        d = target.sql
        #: how a Decimal amount is bound: as it is, or as a double where SQLite keeps one
        self.money: Callable[[Decimal], object] = money_binder(d)
        #: how a stored procedure answers: result sets, lists as JSON (MySQL's procedures end
        #: their own transactions); else one row, lists as arrays (PostgreSQL's functions)
        self.result_sets = d.routines_end_transactions
        self.cur: Any
        if fast is not None and not autocommit:
            self.cur = fast
            self._begin = ""
            self._commit: Callable[[], None] = fast.commit
            self._rollback: Callable[[], None] = fast.rollback
        else:
            target.set_autocommit(conn)
            self.cur = fast if fast is not None else conn.cursor()
            self._begin = d.begin
            self._commit = self._end_with(d.commit)
            self._rollback = self._end_with(d.rollback)
        #: an explicit transaction is open (the DB-API path)
        self.open = False

    def begin(self) -> None:
        """Before a read-write transaction's first statement."""
        if self._begin:
            self.cur.execute(self._begin)
            self.open = True

    def commit(self) -> None:
        self._commit()

    def rollback(self) -> None:
        """Roll back; a connection that is gone has rolled back already."""
        with contextlib.suppress(Exception):
            self._rollback()

    def _end_with(self, sql: str) -> Callable[[], None]:
        def end() -> None:
            if self.open:
                self.open = False
                self.cur.execute(sql)
        return end
