"""What every database target provides.

A target is one database product family behind one module. The framework asks it for
connections, its bulk-load path, which errors are worth a retry and what the server
is; workloads never see driver details. SQLAlchemy serves URLs, engines, DDL and
reflection; the hot paths (bulk load, virtual users) use the DB-API connection
directly, because every layer above it costs client CPU that, on a small machine, is
taken from the database (see ../shared/reference/driver-costs.md).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import URL

from tpsbench.api.batch import Batch
from tpsbench.errors import TpsbenchError, first_line


class Target:
    """Base class of database targets; subclasses set the class attributes."""

    #: SQLAlchemy backend names this target serves, e.g. ("postgresql",).
    backends: ClassVar[tuple[str, ...]] = ()
    #: Stem of the DDL file under schemas/<workload>/, e.g. "postgresql".
    dialect: ClassVar[str] = ""
    #: SQLAlchemy driver used for engines, e.g. "psycopg".
    driver: ClassVar[str] = ""
    #: How many processes may load at once; None means as many as asked.
    max_load_workers: ClassVar[int | None] = None
    #: SQLAlchemy backend to use when the URL's own is an alias (postgres -> postgresql).
    sa_backend: ClassVar[str | None] = None

    def __init__(self, url: URL) -> None:
        backend = self.sa_backend or url.drivername.partition("+")[0]
        self.url = url.set(drivername=f"{backend}+{self.driver}")

    # -- identity ---------------------------------------------------------------
    def describe(self) -> str:
        """The URL with any password hidden: safe to print and to store."""
        return self.url.render_as_string(hide_password=True)

    @property
    def database(self) -> str:
        return self.url.database or ""

    # -- connections --------------------------------------------------------------
    @cached_property
    def engine(self) -> sa.Engine:
        """An engine for DDL, reflection and checks (no pool: processes fork)."""
        return sa.create_engine(self.url, poolclass=sa.NullPool)

    def connect(self) -> Any:
        """A raw DB-API connection, not in autocommit mode."""
        with self.translate_errors("connect"):
            return self._connect()

    def _connect(self, database: str | None = None) -> Any:
        """A new DB-API connection to ``database``: the URL's if None, none at all if "".

        Targets whose server can create databases accept ``database``, so that
        :meth:`ensure_database` can connect before the URL's database exists.
        """
        raise NotImplementedError

    def ensure_database(self) -> None:
        """Create the database named in the URL if the server does not have it yet."""

    @contextlib.contextmanager
    def translate_errors(self, doing: str) -> Iterator[None]:
        """Turn driver and SQLAlchemy errors into one-line :class:`TpsbenchError`."""
        try:
            yield
        except TpsbenchError:
            raise
        except sa.exc.DBAPIError as exc:
            raise TpsbenchError(f"{self.describe()}: {doing} failed: {error_message(exc.orig)}") from exc
        except sa.exc.SQLAlchemyError as exc:
            raise TpsbenchError(f"{self.describe()}: {doing} failed: {first_line(exc)}") from exc
        except Exception as exc:
            if self.is_driver_error(exc):
                raise TpsbenchError(f"{self.describe()}: {doing} failed: {error_message(exc)}") from exc
            raise

    @contextlib.contextmanager
    def session(self, doing: str) -> Iterator[Any]:
        """A short-lived raw connection for checks and catalogue queries, closed after.

        Errors come out translated, so a wrong password or a stopped server reads as
        one line naming ``doing``.
        """
        with self.translate_errors(doing):
            conn = self._connect()
            try:
                yield conn
            finally:
                conn.close()

    def fetch_all(self, sql: str, doing: str) -> list[tuple]:
        """Rows of one parameterless query on a short-lived connection (for server_info & co)."""
        with self.session(doing) as conn:
            cur = conn.cursor()
            try:
                cur.execute(sql)
                return [tuple(row) for row in cur.fetchall()]
            finally:
                cur.close()
                conn.rollback()

    def is_driver_error(self, exc: BaseException) -> bool:
        """True for exceptions raised by this target's DB-API driver."""
        module = type(exc).__module__ or ""
        return module.split(".")[0] in self.driver_modules

    driver_modules: ClassVar[tuple[str, ...]] = ()

    # -- loading ------------------------------------------------------------------
    def bulk_load(self, conn: Any, batch: Batch) -> None:
        """Insert ``batch`` through this target's fastest honest bulk path.

        The caller commits; a loader commits once per chunk so that a large
        transaction amortises the commit without holding locks for the whole build.
        """
        raise NotImplementedError

    def after_load(self, conn: Any, tables: list[str]) -> None:
        """Refresh planner statistics after a build (ANALYZE and friends)."""

    # -- running ------------------------------------------------------------------
    #: Native error numbers and SQLSTATEs that :meth:`is_retryable` and
    #: :meth:`is_disconnect` recognise by default; a target that knows its codes sets
    #: these instead of overriding the methods.
    retryable_codes: ClassVar[frozenset[int]] = frozenset()
    retryable_sqlstates: ClassVar[frozenset[str]] = frozenset()
    disconnect_codes: ClassVar[frozenset[int]] = frozenset()
    disconnect_sqlstates: ClassVar[frozenset[str]] = frozenset()

    def is_retryable(self, exc: BaseException) -> bool:
        """Serialization failures, deadlocks and lock timeouts: worth another try."""
        state, code = error_codes(exc)
        return code in self.retryable_codes or state in self.retryable_sqlstates

    def is_disconnect(self, exc: BaseException) -> bool:
        """The connection is gone: reconnect with back-off."""
        state, code = error_codes(exc)
        return code in self.disconnect_codes or state in self.disconnect_sqlstates

    def server_info(self) -> dict[str, str]:
        """Server version and the settings that shape OLTP performance, for the results store."""
        return {}

    def connection_limit(self) -> int | None:
        """How many client connections the server accepts in all (None: no limit)."""
        return None

    def connection_limit_hint(self) -> str:
        """How to raise :meth:`connection_limit`, for the error that refuses a run."""
        return ""

    def placeholder(self) -> str:
        """The DB-API parameter marker of this target's driver ("%s" or "?")."""
        return "%s"

    def table_names(self) -> set[str]:
        """Names of the tables in the target database, lower case."""
        with self.translate_errors("reading the catalogue"):
            return {name.lower() for name in sa.inspect(self.engine).get_table_names()}


#: pyodbc ends a message with the native error number and the ODBC call: "... (1213) (SQLExecDirectW)"
_ODBC_NATIVE = re.compile(r"\((-?\d+)\)\s*\(SQL\w+\)\s*$")
_SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")


def error_codes(exc: BaseException) -> tuple[str | None, int | None]:
    """(SQLSTATE, native error number) of a driver exception, either one None if unknown.

    Drivers report them in different places: psycopg as ``exc.sqlstate``; PyMySQL and
    mysqlclient as ``args == (number, message)``; pyodbc as ``args == (sqlstate,
    message)`` with the native number in the message's tail. Reading all three here
    lets every target classify errors by code, never by message text. SQLAlchemy's
    wrappers are unwrapped first.
    """
    exc = getattr(exc, "orig", None) or exc
    state = getattr(exc, "sqlstate", None)
    args = getattr(exc, "args", ())
    code: int | None = None
    if len(args) >= 2 and isinstance(args[0], int) and isinstance(args[1], str):
        code = args[0]
    elif len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str) and _SQLSTATE.match(args[0]):
        state = state or args[0]
        found = _ODBC_NATIVE.search(args[1])
        code = int(found.group(1)) if found else None
    return (state if isinstance(state, str) else None), code


def error_message(exc: BaseException) -> str:
    """One line of a driver error, without the tuple dressing some drivers put around it.

    ``str()`` of a PyMySQL or pyodbc error is the repr of its ``(code, message)`` args,
    which is noise in front of a user; the message itself is what they need.
    """
    args = getattr(exc, "args", ())
    if len(args) >= 2 and isinstance(args[1], str) and args[1].strip():
        text = _ODBC_CALL.sub("", first_line(args[1]))
        return f"{text} ({args[0]})" if isinstance(args[0], int) else text
    return first_line(exc)


_ODBC_CALL = re.compile(r"\s*\(SQL\w+\)\s*$")


def set_autocommit(conn: Any) -> None:
    """Put a DB-API connection in autocommit mode, whatever its driver calls that.

    For sessions whose every statement is a transaction of its own, or that send BEGIN
    and COMMIT themselves: no driver-made BEGIN, no COMMIT round trip after a statement.
    An open transaction is rolled back first (psycopg refuses the switch inside one).
    """
    if isinstance(conn, sqlite3.Connection):
        if conn.in_transaction:
            conn.rollback()
        conn.isolation_level = None
        return
    switch = getattr(conn, "autocommit", None)
    if callable(switch):  # mysqlclient, PyMySQL
        switch(True)
        return
    if getattr(conn, "info", None) is not None and hasattr(conn, "pgconn"):  # psycopg: idle first
        conn.rollback()
    conn.autocommit = True


class LazyRows(Sequence[tuple]):
    """A result's rows, read whole from the server, turned into Python values on first use.

    Why: converting values costs the client more than reading them, and on the hot path
    many results are never looked at: a TPC-C call whose answer the run needs only to
    count (sysbench's statement runners drop their rows unread already,
    tpsbench.workloads.sysbench.driver). Their bytes are in the client's memory either way (libpq's result, mysqlclient's stored result); the row
    count is known without converting anything. A target's subclass says how to convert
    (``_convert``), and must not depend on what the connection reads later.
    """

    __slots__ = ("length", "_rows")
    #: the number of rows, and the rows once converted: a subclass's constructor sets
    #: them (``_rows`` to None) itself, one call fewer per result than a super() call
    length: int
    _rows: Sequence[tuple] | None

    def _convert(self) -> Sequence[tuple]:
        raise NotImplementedError

    def converted(self) -> Sequence[tuple]:
        """All rows as Python values (converted on the first call only)."""
        rows = self._rows
        if rows is None:
            rows = self._rows = self._convert()
        return rows

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: Any) -> Any:
        return self.converted()[index]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.converted())

    def __eq__(self, other: object) -> bool:
        return self.converted() == (other.converted() if isinstance(other, LazyRows) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.converted()!r})"


class BufferedRows:
    """The fetch side of the targets' fast cursors: rows already read, handed out in order.

    The fast cursors read a whole result in one driver call (libpq, mysqlclient's
    store_result) and keep it in ``rows``, a :class:`LazyRows` where values are converted
    on first use; fetchone/fetchall then only walk it. ``fetchall`` before any
    ``fetchone`` hands out the LazyRows itself: a caller that only counts the rows, or
    keeps them for later, converts nothing (TPC-C's stored-procedure calls).
    """

    rows: Sequence[tuple] = ()
    pos: int = 0

    def fetchone(self) -> tuple | None:
        pos = self.pos
        if pos < len(self.rows):
            self.pos = pos + 1
            return self.rows[pos]
        return None

    def fetchall(self) -> Sequence[tuple]:
        rows = self.rows[self.pos:] if self.pos else self.rows
        self.pos = len(self.rows)
        return rows

    #: no further result to step to: the fast cursors read every result themselves (a
    #: CALL's status is drained before the next command). DB-API lets a cursor go
    #: without nextset; a method that only returned None cost a call per result.
    nextset = None
