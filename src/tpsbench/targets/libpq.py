"""Cursors on libpq itself, under a psycopg 3 connection: a virtual user's hot path.

psycopg's cursor costs several times the client CPU of the libpq calls below it per statement
(query conversion, its prepared-statement cache, the generator machinery), and on a
small machine that CPU is taken from the database (bench/results/engine_tpcc.txt). So
the hot path calls libpq through psycopg's ``pgconn``: server-side prepared statements
(PQprepare / PQexecPrepared, what sysbench's pgsql driver calls), text parameters, and
results read whole. :class:`LibpqCursor` keeps a result's rows (converted when first
read); ``LibpqCountingCursor`` (tpsbench.targets.libpq_counting) drops them unread and tells the statement's kind, as
sysbench's client does, for which converting the rows of an oltp_read_only
transaction would cost client CPU for nothing. Both can send a statement
and read its answer later (:class:`LibpqSend`), for the engine's shared thread.
"""

from __future__ import annotations

import contextlib
import itertools
import select
import weakref
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import pq

from tpsbench.targets.rows import BufferedRows, LazyRows

#: the statements prepared on each connection: {SQL text: prepared statement name}
_PREPARED: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()
#: prepared statement names, unique in the process, so that none is ever prepared twice
STATEMENT_NUMBERS = itertools.count(1)


def prepared_names(conn: Any) -> dict[str, bytes]:
    """The statements prepared on ``conn`` so far, {SQL text: name}: they belong to the
    connection, which outlives a session (the engine keeps it for the next step)."""
    return _PREPARED.setdefault(conn, {})


class LibpqSend:
    """Sent now, read later: how one thread waits on many users (tpsbench.engine.multiplex).

    For a class on a psycopg connection's ``pgconn`` that keeps its prepared statements
    in ``names`` (``prepared_names``), encodes SQL in ``encoding`` and reads a result with
    ``_take(res, name)`` (``name``: the prepared statement's, b"" for a simple query),
    which raises a failed one; statements are prepared here.
    ``encode`` turns a statement into what ``send_encoded`` sends without waiting for its
    result: a prepared statement, one without parameters as a simple query. The
    connection is in autocommit mode (the only mode this is for), so BEGIN and COMMIT are
    statements like the others. Then wait for ``fileno()`` to be readable until
    ``receive()`` says it took the result.
    """

    pgconn: Any
    names: dict[str, bytes]
    encoding: str
    #: the name of the statement sent last (b"": a simple query)
    sent = b""

    def _take(self, res: Any, name: bytes = b"") -> Any:
        raise NotImplementedError

    def _error(self, res: Any) -> Exception:
        """The exception of a failed result, as psycopg's cursor would raise it; a lost
        connection raises OperationalError without a SQLSTATE (what the engine reconnects
        on), and statements the server forgot (DISCARD ALL: 26000) are prepared anew."""
        from psycopg import OperationalError, errors

        if res.error_field(pq.DiagnosticField.SQLSTATE) == b"26000":
            self.names.clear()
        if self.pgconn.status != pq.ConnStatus.OK:
            message = (res.error_message or b"connection lost").decode(errors="replace").strip()
            return OperationalError(message or "connection lost")
        return errors.error_from_result(res, encoding=self.encoding)

    def _prepare(self, sql: str) -> bytes:
        """Prepare ``sql`` (``%s`` markers, ``%%`` for a percent sign) on the connection,
        with the server inferring the types; its name."""
        name = b"tpsb_%d" % next(STATEMENT_NUMBERS)
        self._take(self.pgconn.prepare(name, dollar_markers(sql).encode(self.encoding)))
        self.names[sql] = name
        return name

    def encode(self, sql: str, params: Any = ()) -> tuple[bytes, Any]:
        """``sql`` with ``params`` as ``send_encoded`` sends them: (the prepared statement's
        name, its text parameters), or (b"", the SQL) for a statement without parameters
        (BEGIN, COMMIT: a simple query, one message). A transaction's first statement is
        encoded ahead of its turn (Multiplexer.draw_ahead); prepares ``sql`` on first sight."""
        if params:
            return self.names.get(sql) or self._prepare(sql), text_params(params)
        return b"", sql.encode()

    def send_encoded(self, encoded: tuple[bytes, Any]) -> None:
        self.sent, values = encoded
        if self.sent:
            self._send(self.sent, values)
        else:
            self.pgconn.send_query(values)

    def _send(self, name: bytes, values: list[bytes | None] | None) -> None:
        """Send the statement ``name`` stands for with ``values``, not waiting."""
        self.pgconn.send_query_prepared(name, values)

    def fileno(self) -> int:
        return self.pgconn.socket

    def receive(self) -> bool:
        """Read what has arrived (never blocks); once the whole result is in, take it as
        ``_take`` takes one (errors raised there) and say True; False: wait again.

        A result can be whole before the statement has ended: in autocommit the server
        commits after it, before ReadyForQuery. A failure that comes after the result (a
        backend terminated in between) is the statement's outcome, so that a call whose
        commit did not happen is never counted as committed (the honesty check saw one).
        """
        pgconn = self.pgconn
        pgconn.consume_input()
        if pgconn.is_busy():
            return False
        res = pgconn.get_result()
        while (later := pgconn.get_result()) is not None:
            if later.status == pq.ExecStatus.FATAL_ERROR:
                res = later
        self._take(res, self.sent)
        return True


class LibpqCursor(LibpqSend, BufferedRows):
    """The part of a DB-API cursor a virtual user needs, on libpq's prepared statements.

    ``execute(sql, params)`` prepares ``sql`` once per connection (``PQprepare``, types
    inferred by the server) and then runs it with ``PQexecPrepared`` on the psycopg
    connection's ``pgconn``: one round trip, like psycopg's prepared path, without the
    layers above libpq (query conversion and its regex split of long statements, the
    prepared-statement LRU and the generator/wait machinery), which cost several times the
    client CPU (docs/driver-costs.md). Parameters go as text, rows come back as
    text and are turned into the same Python types as psycopg's cursor gives, when first
    read (PgRows), by psycopg's own (C) loaders, looked up once per prepared statement
    (its rows have one shape): a lookup for every result cost a transaction's client CPU
    on a machine whose caches the database has just filled with its own.
    Transactions are psycopg's: a BEGIN opens one before the first statement when the
    connection is idle (as psycopg sends it), ``commit`` and ``rollback`` send COMMIT
    and ROLLBACK.

    psycopg's own statement preparation is switched off on the connection: its rollback
    sends DEALLOCATE ALL when it has prepared anything, which would drop these
    statements too. The statements belong to the connection: a new cursor on a kept
    connection (the next step's session) uses them as they are. A statement the server
    no longer knows (DISCARD ALL) is prepared again once its error is seen (on the shared
    thread, statements encoded ahead with the old name fail first, up to DRAW_AHEAD of
    them). Errors are psycopg's exceptions (with their SQLSTATE); a connection that went
    away raises OperationalError without one, which the target reads as a disconnect.
    """

    lastrowid = None
    description = None

    def __init__(self, conn: Any) -> None:
        from psycopg.adapt import Transformer

        self.conn = conn
        self.pgconn = conn.pgconn
        conn.prepare_threshold = None
        self.encoding = conn.info.encoding
        self.tx = Transformer(conn)
        #: a Transformer per prepared statement, its loaders set by its first result
        self.shaped: dict[bytes, Any] = {}
        self.transformer = Transformer
        #: statements prepared on this connection, shared by every cursor made on it (a
        #: connection kept from one step to the next keeps its statements)
        self.names = prepared_names(conn)
        self.rows: Sequence[tuple] = []
        self.pos = 0
        self.rowcount = -1
        self.idle = pq.TransactionStatus.IDLE
        self.tuples_ok = pq.ExecStatus.TUPLES_OK
        self.command_ok = pq.ExecStatus.COMMAND_OK
        self.pipeline_sync = pq.ExecStatus.PIPELINE_SYNC
        #: BEGIN travels with the first statement where libpq has pipeline mode (14+)
        self.pipeline_begin = pq.version() >= 140000
        self.poller = select.poll()
        self.poller.register(self.pgconn.socket, select.POLLIN)

    def execute(self, sql: str, params: Any = ()) -> LibpqCursor:
        pgconn = self.pgconn
        name = self.names.get(sql) or self._prepare(sql)
        values = text_params(params)
        if pgconn.transaction_status == self.idle and not self.conn.autocommit:
            res = self._begin_and_exec(name, values) if self.pipeline_begin else None
            if res is None:
                self._command(b"BEGIN")
                res = self._exec(name, values)
        else:
            res = self._exec(name, values)
        self._take(res, name)
        return self

    def _exec(self, name: bytes, values: list[bytes | None] | None) -> Any:
        """Run the statement ``name`` stands for with ``values``; its result."""
        return self.pgconn.exec_prepared(name, values)

    def _take(self, res: Any, name: bytes = b"") -> None:
        status = res.status
        if status == self.tuples_ok:
            n = res.ntuples
            if n:
                tx = self.shaped.get(name)
                if tx is None and name:  # the statement's first rows: its loaders, kept
                    tx = self.shaped[name] = self.transformer(self.conn)
                    tx.set_pgresult(res)
                self.rows = PgRows(n, res, tx or self.tx, not name)
            else:
                self.rows = []
            self.rowcount = n
        elif status == self.command_ok:
            self.rows = []
            tuples = res.command_tuples
            self.rowcount = -1 if tuples is None else tuples
        else:
            raise self._error(res)
        self.pos = 0

    def commit(self) -> None:
        if self.pgconn.transaction_status != self.idle:
            self._command(b"COMMIT")

    def rollback(self) -> None:
        if self.pgconn.transaction_status != self.idle:
            self._command(b"ROLLBACK")

    def close(self) -> None:
        self.rows = []

    def _begin_and_exec(self, name: bytes, values: list[bytes | None] | None) -> Any:
        """BEGIN and the transaction's first statement in one round trip (libpq pipeline
        mode: BEGIN, the statement, Sync), as JDBC sends them; the statement's result."""
        pgconn = self.pgconn
        pgconn.enter_pipeline_mode()
        results = []
        try:
            pgconn.send_query_params(b"BEGIN", None)
            self._send(name, values)
            pgconn.pipeline_sync()
            while True:
                while pgconn.is_busy():
                    self.poller.poll()  # waits without the GIL, unlike a blocking get_result
                    pgconn.consume_input()
                res = pgconn.get_result()
                if res is None:
                    continue
                if res.status == self.pipeline_sync:
                    break
                results.append(res)
        except BaseException:
            with contextlib.suppress(Exception):
                pgconn.exit_pipeline_mode()
            raise
        pgconn.exit_pipeline_mode()
        if results[0].status != self.command_ok:
            raise self._error(results[0])
        return results[1]

    def _command(self, sql: bytes) -> None:
        res = self.pgconn.exec_(sql)
        if res.status != self.command_ok:
            raise self._error(res)


class UnnamedCursor(LibpqCursor):
    """:class:`LibpqCursor` without prepared statements, for PgBouncer's transaction pooling.

    There a named prepared statement does not outlive its transaction (before PgBouncer
    1.21), but the unnamed one does all a statement needs in one round trip: parse, bind
    and execute go in one message with a Sync (``PQsendQueryParams``), so PgBouncer hands
    them to one server connection together. The server parses every statement, as with
    psycopg's cursor, for a fraction of that cursor's client CPU, and the user can be
    hosted on the engine's shared thread. ``names`` holds each statement's text with
    ``$n`` markers, encoded once: the "name" the methods above pass along.
    """

    def __init__(self, conn: Any) -> None:
        super().__init__(conn)
        self.names = {}

    def _prepare(self, sql: str) -> bytes:
        text = self.names[sql] = dollar_markers(sql).encode(self.encoding)
        return text

    def _exec(self, name: bytes, values: list[bytes | None] | None) -> Any:
        return self.pgconn.exec_params(name, values)

    def _send(self, name: bytes, values: list[bytes | None] | None) -> None:
        self.pgconn.send_query_params(name, values)


class PgRows(LazyRows):
    """A libpq result's rows, converted by psycopg's (C) loaders on first use.

    ``tx`` is the prepared statement's Transformer, its loaders set by the statement's
    first result and shared by all its results; the result is set on it again when the
    rows are converted, which may be after the statement ran again. A simple query's
    rows (any shape) set their loaders then too (``set_loaders``).
    """

    __slots__ = ("res", "tx", "set_loaders")

    def __init__(self, count: int, res: Any, tx: Any, set_loaders: bool) -> None:
        self.length, self._rows, self.res, self.tx, self.set_loaders = count, None, res, tx, set_loaders

    def _convert(self) -> list[tuple]:
        tx = self.tx
        tx.set_pgresult(self.res, self.set_loaders)  # by position: a keyword costs a parse
        return tx.load_rows(0, self.length, tuple)


def dollar_markers(sql: str) -> str:
    """``%s`` markers (``%%`` a percent sign) as PostgreSQL's ``$1``, ``$2`` ..."""
    parts = sql.replace("%%", "\0").split("%s")
    text = parts[0] + "".join(f"${i}{part}" for i, part in enumerate(parts[1:], start=1))
    return text.replace("\0", "%")


def text_params(params: Any) -> list[bytes | None] | None:
    """Parameters in text format, as libpq sends them (None is SQL NULL).

    Joined, encoded and split again rather than encoded one by one: four calls into C
    instead of a Python loop over the parameters, a tenth of the interpreter's work
    (bench/results/client_callgrind.txt). A NUL byte would split a value; libpq would
    cut a text parameter at it anyway, so it is refused, as psycopg's cursor refuses it.
    """
    if not params:
        return None
    values: list[bytes | None]
    if len(params) == 1:  # sysbench's point select: one value, for which the join costs more
        text = str(params[0])
        values = [text.encode()] if "\0" not in text else []
    else:
        values = "\0".join(map(str, params)).encode().split(b"\0")  # type: ignore[assignment]  # takes a None below for a NULL
    if len(values) != len(params):
        raise psycopg.DataError("PostgreSQL text parameters cannot contain NUL (0x00) bytes")
    # NULL (Payment's customer goes by id or by name, the other is NULL): str(None) is
    # "None", so only a list holding that text can have one. Comparing bytes with bytes
    # is quick; ``None in params`` compared every int with None the slow way
    if b"None" in values:
        for at, value in enumerate(params):
            if value is None:
                values[at] = None
    return values


