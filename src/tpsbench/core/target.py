"""What every database target provides: the :class:`Target` base class.

A target is one database product family behind one module under ``tpsbench.targets``.
The framework asks it for connections, its bulk-load path, which errors are worth a
retry, how its SQL differs (:class:`~tpsbench.core.sql.SqlDialect`) and what the server
is; workloads never see driver details. SQLAlchemy serves URLs, engines, DDL and
reflection; the hot paths (bulk load, virtual users) use the DB-API connection directly,
or a target's own cursor one layer below it, because every layer above costs client CPU
that, on a small machine, is taken from the database: psycopg's and mysqlclient's cursors
cost several times the client CPU of the calls below them per statement
(bench/results/engine_tpcc.txt).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cached_property
from typing import Any, ClassVar, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import URL

from tpsbench.core import processes
from tpsbench.core.batch import Batch
from tpsbench.core.cursor import CLIENT_CHOICES, CountingCursor, DbapiCountingCursor, FastCursor
from tpsbench.core.errors import TpsbenchError, error_codes, error_message, first_line
from tpsbench.core.redact import safe_url, scrub_text, secrets_of
from tpsbench.core.sql import SqlDialect

#: what db_waits tells apart: on CPU (not waiting), then the kinds of wait
WAIT_KINDS = ("cpu", "lock", "lwlock", "io", "ipc", "client", "other")
#: the application name (where the database has one) of tpsbench's observers' connections
OBSERVER_APPLICATION = "tpsbench observer"


class SessionWait(NamedTuple):
    """What one client session executing a statement was doing when looked at (:meth:`Target.read_waits`)."""

    #: one of WAIT_KINDS
    kind: str
    #: the wait as the database names it, "<Type>:<Event>" ("Lock:transactionid"); "" on CPU
    event: str = ""
    #: the table of the lock it waits for, where that is known
    table: str | None = None


class Target:
    """Base class of database targets; subclasses set the class attributes."""

    #: SQLAlchemy backend names this target serves, e.g. ("postgresql",).
    backends: ClassVar[tuple[str, ...]] = ()
    #: Stem of the DDL file under schemas/<workload>/, e.g. "postgresql".
    dialect: ClassVar[str] = ""
    #: SQLAlchemy driver used for engines, e.g. "psycopg".
    driver: ClassVar[str] = ""
    #: How many processes may load at once; None means as many as asked.
    max_loaders: ClassVar[int | None] = None
    #: SQLAlchemy backend to use when the URL's own is an alias (postgres -> postgresql).
    sa_backend: ClassVar[str | None] = None
    #: How this database's SQL differs where the workloads meet a difference.
    sql: ClassVar[SqlDialect] = SqlDialect()
    #: Whether a stored routine's answer comes back in every form tpsbench reads one in:
    #: PostgreSQL arrays as Python lists, each result set of a MySQL CALL in turn (the
    #: DB-API drivers and the fast cursors do; pyodbc gives arrays as text).
    routine_answers: ClassVar[bool] = True
    #: Whether each connection has a buffer pool of its own (SQLite's page cache) and no
    #: server holds one: new connections start with it empty, and its data lives in the
    #: driver's processes' page cache.
    embedded: ClassVar[bool] = False

    def __init__(self, url: URL) -> None:
        backend = self.sa_backend or url.drivername.partition("+")[0]
        self.url = url.set(drivername=f"{backend}+{self.driver}")

    # -- identity ---------------------------------------------------------------
    def describe(self) -> str:
        """The URL without its password (nor ``password=`` settings): safe to print and store."""
        return safe_url(self.url)

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
            raise self.failed(doing, error_message(exc.orig or exc)) from exc
        except sa.exc.SQLAlchemyError as exc:
            raise self.failed(doing, first_line(exc)) from exc
        except Exception as exc:
            if self.is_driver_error(exc):
                raise self.failed(doing, error_message(exc)) from exc
            raise

    def failed(self, doing: str, why: str) -> TpsbenchError:
        """The one line that says ``doing`` failed here, with no password in it: drivers
        quote connection strings in their messages, so the URL's secrets are blanked out."""
        return TpsbenchError(scrub_text(f"{self.describe()}: {doing} failed: {why}", secrets_of(self.url)))

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

    def fetch_all(self, sql: str, doing: str) -> list[tuple[Any, ...]]:
        """Rows of one parameterless query on a short-lived connection (for server_info & co)."""
        with self.session(doing) as conn:
            try:
                return rows_of(conn, sql)
            finally:
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

    def read_counters(self, conn: Any) -> dict[str, float]:
        """The server's own cumulative counters as of now; {} where this database has none.

        For tpsbench.measure.db_counters, which turns two of these into rates. ``conn`` is
        in autocommit mode (:meth:`set_autocommit`), so that every call is a fresh look
        and no transaction stays open between calls. Counters only grow while the server
        counts; these names mean the same on every database, so that figures derived
        from them compare across databases: ``commits``, ``rollbacks`` (transactions
        ended), ``cache_hits``, ``cache_misses`` (page requests the buffer cache served,
        and those it had to read in), ``reads``, ``writes``, ``read_kB``, ``write_kB``
        (the server's I/O calls and their kB of 1024 bytes); any other is the database's
        own counter by its own name (``wal_bytes``). ``counting_since`` is no counter:
        the epoch time, to within a second, since which the counters count (the server's
        start or the last reset of its statistics), so that a reset is told apart even
        where every counter has climbed past its old value since.
        """
        return {}

    #: the WAIT_KINDS :meth:`read_waits` can tell apart; none where it cannot read sessions
    wait_kinds: ClassVar[tuple[str, ...]] = ()
    #: the server's process names (/proc/<pid>/comm) on its host; none where it runs none (SQLite)
    server_commands: ClassVar[tuple[str, ...]] = ()
    #: the server's TCP port when the URL names none
    default_port: ClassVar[int | None] = None

    def read_waits(self, conn: Any) -> list[SessionWait]:
        """What each of this database's client sessions executing a statement is doing now, but ``conn``'s
        (autocommit) and the observers' own, for tpsbench.measure.db_waits; only with :attr:`wait_kinds`."""
        raise NotImplementedError

    def server_process(self) -> int | None:
        """A process id of the server's own on its host, for :meth:`server_pid`; None if it will not say."""
        return None

    def server_pid(self) -> int | None:
        """The server's top process here (postmaster, mariadbd) for its CPU, memory and restart, found
        by :func:`tpsbench.core.processes.server_pid`; None for a remote or embedded one."""
        local = self.server_commands and self.is_local
        return processes.server_pid(self.server_process, self.server_commands, self.url.port or self.default_port) \
            if local else None

    def observer_connection(self) -> Any:
        """An autocommit connection for a step observer, marked as one where the database
        lets a connection carry a name, so that the observers do not observe each other."""
        conn = self.connect()
        self.set_autocommit(conn)
        return conn

    def cache_sizes(self) -> dict[str, int]:
        """The database's size and the server's buffer pool in bytes (``database_bytes``, ``buffer_pool_bytes``)
        where the server tells them: whether the whole database fits in memory (tpsbench.measure.memory)."""
        return {}

    def answers(self) -> bool:
        """Whether a connection can be made now (a restarted server is up again)."""
        try:
            close_quietly(self._connect())
        except Exception:  # noqa: BLE001 - any failure to connect is "not yet"
            return False
        return True

    def restart_server(self) -> None:
        """Restart the server and wait until it answers again: the only way to empty some
        servers' buffer pools (``--cache cold``). A one-line error where it cannot."""
        raise TpsbenchError(f"{self.describe()}: tpsbench cannot restart this server")

    def connection_limit(self) -> int | None:
        """How many client connections the server accepts in all (None: no limit)."""
        return None

    def connection_limit_hint(self) -> str:
        """How to raise :meth:`connection_limit`, for the error that refuses a run."""
        return ""

    def routine_cache_note(self, connections: int) -> str | None:
        """A line saying what to change where ``connections`` calling stored routines would
        each keep a compiled copy of them in the server's memory (None: nothing to say)."""
        return None

    def placeholder(self) -> str:
        """The DB-API parameter marker of this target's driver ("%s" or "?")."""
        return "%s"

    def storage_path(self) -> str | None:
        """A folder on this host where the database keeps its data, so that a build can check the free
        space first; None when the data is elsewhere (another host) or the server will not say."""
        return None

    def data_paths(self) -> list[str]:
        """Every folder on this host that holds the database's files (data directory,
        tablespaces, logs), for finding the devices under them; [] when elsewhere."""
        path = self.storage_path()
        return [] if path is None else [path]

    @property
    def is_local(self) -> bool:
        """Whether the server runs on this host (loopback address or a Unix socket)."""
        host = self.url.host or str(self.url.query.get("host", "")) or "localhost"
        return host in ("localhost", "127.0.0.1", "::1") or host.startswith("/")

    def set_autocommit(self, conn: Any) -> None:
        """Put a connection in autocommit mode: no driver-made BEGIN, no COMMIT round trip.

        For sessions whose every statement is a transaction of its own, or that send BEGIN
        and COMMIT themselves. The DB-API way (pyodbc); a driver that spells it otherwise overrides this.
        """
        conn.autocommit = True

    def client_paths(self, waits: bool = False) -> tuple[str, ...]:
        """The statement paths this target has below DB-API for ``--client``, the default
        first: "prepared" (statements prepared once per connection, executed with bound
        values) and "text" (values rendered into the statement, parsed by the server each
        time); empty where the driver's cursor is the only path. ``waits``: for users that
        wait between transactions (keying or think times), thousands of them mostly idle."""
        return ()

    def client_path(self, choice: str, waits: bool = False) -> str:
        """The path ``--client choice`` means here (for users that ``waits`` or not): "fast" is the
        target's default, else "dbapi"; a path the target lacks is a one-line error naming the ones it has."""
        paths = self.client_paths(waits)
        if choice == "fast":
            return paths[0] if paths else "dbapi"
        if choice == "dbapi" or choice in paths:
            return choice
        if choice not in CLIENT_CHOICES:
            raise TpsbenchError(f"--client must be one of {', '.join(CLIENT_CHOICES)}, got {choice!r}")
        have = ", ".join((*paths, "dbapi"))
        why = self.client_path_missing(choice)
        raise TpsbenchError(f"--client {choice}: not on {self.describe()}{f' ({why})' if why else ''}; use {have}")

    def client_path_missing(self, choice: str) -> str:
        """Why this target has no ``choice`` path, for the error; empty if there is no more to say."""
        return ""

    def fast_cursor(self, conn: Any, path: str = "fast") -> FastCursor | None:
        """A cursor for a virtual user's hot path one layer below DB-API on ``path`` (one
        of :meth:`client_paths`, "fast" for the default), or None where the target has
        none (the session then uses the driver's cursor)."""
        return None

    def counting_cursor(self, conn: Any, path: str = "fast") -> CountingCursor:
        """A cursor that drops result rows unread and tells each statement's kind, for
        workloads that count statements as sysbench does; on ``path`` (as for
        :meth:`fast_cursor`), DB-API's cursor for "dbapi" and where the target has no other."""
        return DbapiCountingCursor(conn)

    def table_names(self) -> set[str]:
        """Names of the tables in the target database, lower case."""
        with self.translate_errors("reading the catalogue"):
            return {name.lower() for name in sa.inspect(self.engine).get_table_names()}


def rows_of(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one parameterless query on ``conn`` (none: drivers spell placeholders apart)."""
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return [tuple(row) for row in cur.fetchall()]
    finally:
        cur.close()


def close_quietly(conn: Any) -> None:
    """Close a connection that may be dead already (or None): it is gone either way, and a
    lost connection often fails to close, which must not end a user or an observer."""
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - see the docstring
            pass
