"""How one database's SQL differs from the others', where the workloads meet a difference.

Why a value of the target's: a workload writes each statement once, in the SQL the
databases share, and substitutes what differs (TPC-C's row locks and RETURNING,
sysbench's BEGIN); a new database then declares its differences in its own target
module, and no workload has a table of databases to extend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class SqlDialect:
    """The differences; the defaults are SQLite's, which has the plainest SQL of the lot."""

    name: str = "sql"
    #: appended to a locking SELECT (`` FOR UPDATE``); "" where writers are serialised anyway
    row_lock: str = ""
    #: appended to the table name of a locking SELECT (SQL Server's ``WITH (UPDLOCK, ROWLOCK)``)
    table_lock: str = ""
    #: "TOP 1 " after SELECT (SQL Server) ...
    top1: str = ""
    #: ... or " LIMIT 1" after ORDER BY (the others)
    limit1: str = " LIMIT 1"
    #: how DML returns the rows it touched: "returning", "output" (SQL Server) or "" (none: MySQL)
    returning: str = "returning"
    #: UPDATE joined to a derived table: "from" (UPDATE t SET .. FROM src WHERE ..), "join"
    #: (UPDATE t JOIN src ON .. SET ..) or "from-join" (UPDATE t SET .. FROM t JOIN src ON ..)
    update_join: str = "from"
    #: string concatenation: "||" or "concat" (CONCAT(a, b))
    concat: str = "||"
    #: an integer parameter where no column gives it a type (CASE ?, SELECT ? AS x): ODBC
    #: drivers may send an untyped or text value that PostgreSQL would not compare to an int
    int_param: str = "CAST(? AS INTEGER)"
    #: False where DECIMAL columns hold doubles (SQLite): money updates are then rounded to
    #: cents in SQL, so that sums do not drift
    exact_decimals: bool = True
    #: the statements that open and end a transaction sent as statements (in autocommit);
    #: SQLite's BEGIN IMMEDIATE takes the write lock at once, so that two writers never
    #: both hold a read lock and deadlock upgrading it (an instant "locked" no timeout waits out)
    begin: str = "BEGIN"
    commit: str = "COMMIT"
    rollback: str = "ROLLBACK"
    #: how an INSERT leaves a new key to an auto-increment column of the tables tpsbench's
    #: DDL makes: "omit" the column, pass "zero" (MySQL, as sysbench does), or "" where the
    #: tables have none (SQL Server's take no IDENTITY, so that bulk loads can carry ids)
    auto_id: str = "omit"
    #: how a stored routine that answers rows is called, ``{name}`` and ``{args}`` filled
    #: in ("SELECT * FROM {name}({args})", "CALL {name}({args})"); "" where tpsbench has none
    call: str = ""
    #: one argument of such a call: "?" or "CAST(? AS {type})" (PostgreSQL picks a function
    #: by its argument types, and drivers would send text or int8)
    call_arg: str = "?"
    #: a list of integers as one text argument of a call: "{%s}" (a PostgreSQL array
    #: literal) or "%s" (comma-separated text, for databases with no array parameters)
    int_list: str = "%s"
    #: True where a routine can end its own transaction (MySQL's procedures commit or roll
    #: back, and answer so); False where it runs inside the caller's (a PostgreSQL function
    #: rolls back by raising)
    routines_end_transactions: bool = False


# -- what every workload's statement table does with a dialect ------------------------------
def marked(text: Any, mark: str) -> Any:
    """``text`` (a statement, a tuple or dict of them, or None) for the driver's ``mark``:
    ``?`` becomes ``%s`` where the driver wants it, and a literal percent sign then ``%%``
    (a LIKE pattern), as every such driver reads a statement that has parameters."""
    if mark == "?" or text is None:
        return text
    if isinstance(text, str):
        return text.replace("%", "%%").replace("?", mark)
    if isinstance(text, dict):
        return {key: marked(t, mark) for key, t in text.items()}
    return tuple(marked(t, mark) for t in text)


def counted(make: Callable[[int], Any], most: int) -> tuple[Any, ...]:
    """``(None, make(1), ..., make(most))``: one statement per count (an IN list of k
    keys), indexed by the count, so that the hot path formats nothing."""
    return (None, *(make(k) for k in range(1, most + 1)))


def concat(d: SqlDialect, *parts: str) -> str:
    """String concatenation in the dialect's form."""
    return f"CONCAT({', '.join(parts)})" if d.concat == "concat" else " || ".join(parts)


def money_sql(d: SqlDialect, expr: str) -> str:
    """A money expression as stored: rounded to cents where DECIMAL is a double (SQLite),
    so that sums do not drift."""
    return expr if d.exact_decimals else f"ROUND({expr}, 2)"


def money_binder(d: SqlDialect) -> Callable[[Decimal], object]:
    """How a Decimal amount is bound: as it is, or as a float where the database keeps a
    double (SQLite's sqlite3 cannot bind a Decimal)."""
    return _same if d.exact_decimals else float


def to_decimal(value: object) -> Decimal:
    """A money value read back, as an exact Decimal (SQLite gives float or int)."""
    return value if type(value) is Decimal else Decimal(repr(value))


def _same(value: Decimal) -> Decimal:
    return value
