"""The cursors a virtual user's statements run on, declared as protocols.

Why protocols: on the hot path the targets hand out cursors of their own, one layer
below DB-API (libpq's prepared statements, mysqlclient's C connection), because every
layer above costs client CPU that a small machine takes from the database it measures
(bench/results/engine_tpcc.txt). Workloads and the engine use them through what is
declared here, never through a driver's types, so a new target's cursors plug in by
shape alone:

- :class:`Cursor`: what a session runs statements on (a DB-API cursor is one);
- :class:`FastCursor`: a target's own cursor that also ends transactions (``Target.fast_cursor``);
- :class:`SendingCursor`: one that can send a statement and read its answer later, which
  lets the engine run many users on one thread (tpsbench.engine.multiplex);
- :class:`CountingCursor`: one that drops result rows unread and tells each statement's
  kind, as sysbench's client counts its queries (``Target.counting_cursor``);
- :class:`PipelineCursor`: one that queues statements without waiting for the answers of
  those before, which a trace replay sends when a session is behind its schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

#: one statement to send: SQL text (``%s`` or ``?`` markers, the target's) and its parameters
Statement = tuple[str, Sequence[Any]]

#: what ``--client`` takes: the target's default path below DB-API, prepared statements,
#: text statements, or the driver's DB-API cursor (Target.client_path)
CLIENT_CHOICES = ("fast", "prepared", "text", "dbapi")
CLIENT_HELP = ("'fast': the target's own statement path below DB-API, the one that costs the server least"
               " (prepared statements on PostgreSQL, text through PgBouncer's transaction pooling, and on MySQL/MariaDB"
               " where libmariadb is at hand, else text;"
               " on MySQL/MariaDB text for TPC-C users with keying or think times, whose prepared statements would"
               " hold client memory per connection);"
               " 'prepared': statements prepared once per connection and executed with bound values"
               " (binary protocol on MySQL/MariaDB, as sysbench sends them); 'text': statements the server parses"
               " each time, values rendered into them (MySQL/MariaDB) or beside them in one message (PostgreSQL"
               " through PgBouncer's transaction pooling); 'dbapi': the driver's DB-API"
               " cursor (several times the client CPU). Same statements and transactions on every path.")

#: kinds of statements, as sysbench's drivers split "queries performed": READ returned a
#: result set, WRITE changed at least one row, OTHER is the rest (BEGIN, COMMIT, and DML
#: that matched nothing); KINDS names them by index
READ, WRITE, OTHER = 0, 1, 2
KINDS = ("read", "write", "other")


class Cursor(Protocol):
    """The part of a DB-API cursor that sessions use."""

    rowcount: int

    def execute(self, sql: str, params: Any = ...) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...

    def close(self) -> None: ...


class FastCursor(Cursor, Protocol):
    """A target's own hot-path cursor: also opens and ends transactions itself."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...


@runtime_checkable
class SendingCursor(Protocol):
    """Sends now, answers later: the shape the engine's shared thread needs.

    ``encode`` turns a statement into what ``send_encoded`` sends without waiting (so a
    transaction's first statement can be encoded ahead of its turn); the answer has
    begun once ``fileno()`` is readable, and ``receive()`` reads what arrived, True once
    the whole result is in (errors are raised there, as ``execute`` would raise them).
    ``send_encoded`` returns True where the answer came in as it sent (libmariadb reads
    at once, and a server on a core of its own can be that quick): it has read it, so
    the socket will not turn readable for it and ``receive()`` is not called.
    """

    def encode(self, sql: str, params: Any = ()) -> Any: ...

    def send_encoded(self, encoded: Any) -> bool | None: ...

    def fileno(self) -> int: ...

    def receive(self) -> bool: ...


class InDoubt(Exception):
    """The outcome of a statement sent on a connection lost before its answer came: the
    server may have run (and committed) it or not, so it is neither a success nor an error."""


#: what :meth:`PipelineCursor.collect` gives each statement in doubt (compared by identity)
IN_DOUBT = InDoubt("sent, and its connection lost before the answer came")


@runtime_checkable
class PipelineCursor(Protocol):
    """Queues statements on its connection, answers read later in order.

    ``pipeline()`` switches the connection to it for good; ``pre_encode`` makes, without
    the server, what ``push`` queues and sends, at the latest at ``flush()`` (the
    statements a session has due at once go together); ``collect()`` reads what arrived (never
    blocks once ``fileno()`` is readable) and gives the outcomes of the statements now
    answered, oldest first: None for a success, else the exception ``execute`` would raise,
    or :data:`IN_DOUBT` for one sent on a connection lost before its answer came.
    An error ends its own statement alone.
    """

    def pipeline(self) -> None: ...

    def pre_encode(self, sql: str, params: Any = ()) -> Any: ...

    def push(self, encoded: Any) -> None: ...

    def flush(self) -> None: ...

    def collect(self) -> list[Exception | None]: ...

    def fileno(self) -> int: ...


class CountingCursor(Protocol):
    """Runs statements, drops their rows unread, and leaves each one's kind in ``kind``."""

    kind: int

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def close(self) -> None: ...


class DbapiCountingCursor:
    """A :class:`CountingCursor` on any DB-API connection: ``cursor.execute``, rows fetched.

    A statement without parameters (BEGIN, COMMIT, ROLLBACK) goes without any, since some
    drivers read an empty sequence as a request to interpolate.
    """

    kind = OTHER

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.cur = conn.cursor()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        cur = self.cur
        cur.execute(sql, params) if params else cur.execute(sql)
        if cur.description is not None:
            cur.fetchall()
            self.kind = READ
        else:
            self.kind = WRITE if cur.rowcount > 0 else OTHER

    def close(self) -> None:
        try:
            self.cur.close()
        except Exception:  # noqa: BLE001 - a dead connection's cursor may fail to close
            pass
