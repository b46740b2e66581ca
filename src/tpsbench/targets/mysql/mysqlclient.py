"""Cursors on mysqlclient's C connection: a virtual user's hot path on MySQL and MariaDB.

mysqlclient's own cursor costs several times the client CPU of the calls below it
(most of all its ``connection.literal``, called for every value), and on a small machine that
CPU is taken from the database (bench/results/engine_tpcc.txt). So the hot path sends
the statement with its values rendered as literals (``%s`` markers, text protocol:
sysbench uses server-side prepared statements instead, so the server parses each
statement here; bench/experiments/results/mariadb_protocols.txt shows why MariaDB
Connector/Python's binary protocol is not used). :class:`MysqlclientCursor` keeps a
result's rows (converted when first read); :class:`MysqlclientCountingCursor` drops
them unread and tells the statement's kind, as sysbench's client does. Both can send a
statement and read its answer later (:class:`MysqlclientSend`), for the engine's shared
thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tpsbench.core.cursor import OTHER, READ, WRITE
from tpsbench.targets.rows import BufferedRows, LazyRows


class MysqlclientSend:
    """Sent now, read later: how one thread waits on many users (tpsbench.engine.multiplex).

    For a class on mysqlclient's C connection ``conn`` that renders a statement with
    ``_query(sql, params)`` and reads a result with ``_take()``. ``encode`` renders a
    statement, ``send_encoded`` sends it without waiting for the answer (in autocommit
    mode, the only mode this is for, a statement or CALL of its own); wait for
    ``fileno()`` to be readable, then ``receive()``.
    """

    conn: Any

    def _query(self, sql: str, params: Any) -> bytes:
        raise NotImplementedError

    def _take(self) -> Any:
        raise NotImplementedError

    def encode(self, sql: str, params: Any = ()) -> bytes:
        """``sql`` with ``params`` rendered, as ``send_encoded`` sends it (a transaction's
        first statement ahead of its turn, Multiplexer.draw_ahead)."""
        return self._query(sql, params)

    def send_encoded(self, encoded: bytes) -> None:
        self.conn.send_query(encoded)

    def fileno(self) -> int:
        return self.conn.fileno()

    def receive(self) -> bool:
        """The sent statement's result, read as ``_take`` reads one (errors raised here);
        always True: once the socket is readable the answer has begun, and the rest of it
        (a few packets already on their way) is read here."""
        self.conn.read_query_result()
        self._take()
        return True


class MysqlclientCursor(MysqlclientSend, BufferedRows):
    """The part of a DB-API cursor a virtual user needs, on mysqlclient's C connection.

    What mysqlclient's own cursor sends, one layer down: the statement with its values
    rendered as literals (``%s`` markers, text protocol), ``query`` + ``store_result``,
    rows converted by the connection's converters (the same Python types as the
    cursor's) when first read (MysqlRows), ``rowcount`` from affected_rows and
    ``lastrowid`` from insert_id (which carries LAST_INSERT_ID(expr)). The cursor's
    Python layers cost several times the client CPU of this
    (docs/driver-costs.md); most of all its ``connection.literal``, about 1
    us a value, against a fifth of that here for the ints, strings and Decimals of the
    benchmarks (anything else still goes through ``literal``). Errors are mysqlclient's
    own exceptions.
    """

    description = None

    def __init__(self, conn: Any) -> None:
        from decimal import Decimal

        self.conn = conn
        self.templates: dict[str, bytes] = {}
        string = conn.string_literal
        self.literal: dict[type, Any] = {
            int: lambda v: b"%d" % v,
            str: lambda v: string(v.encode("utf8")),
            Decimal: lambda v: str(v).encode(),
            type(None): lambda v: b"NULL",
        }
        self.other = conn.literal
        self.rows: Sequence[tuple] = ()
        self.pos = 0
        self.rowcount = -1
        self.lastrowid: int | None = None
        self._drain()  # a kept connection may still hold the last CALL's status

    def execute(self, sql: str, params: Any = ()) -> MysqlclientCursor:
        self.conn.query(self._query(sql, params))
        self._take()
        return self

    def _query(self, sql: str, params: Any) -> bytes:
        """The statement with its values as literals; first the last CALL's status, if unread."""
        template = self.templates.get(sql)
        if template is None:
            template = self.templates[sql] = sql.encode("utf8")
        conn = self.conn
        if conn.more_results():
            self._drain()
        if not params:
            return template
        lit, other = self.literal, self.other
        return template % tuple([b"%d" % v if type(v) is int else (lit.get(type(v)) or other)(v) for v in params])

    def _take(self) -> None:
        conn = self.conn
        result = conn.store_result()
        self.rowcount = conn.affected_rows()
        self.lastrowid = conn.insert_id()
        self.rows = MysqlRows(result) if result is not None else ()
        self.pos = 0

    def next_result_set(self) -> bool:
        """Move to a CALL's next result (DB-API's ``nextset``, named apart so that a
        caller that drains with ``nextset`` keeps the deferral ``_drain`` explains):
        True with its rows in place, False when none is left. For answers of several
        result sets (TPC-E's procedures); the last result is the CALL's status, no rows."""
        conn = self.conn
        if not conn.more_results() or conn.next_result() != 0:
            return False
        self._take()
        return True

    def commit(self) -> None:
        self._drain()
        self.conn.commit()

    def rollback(self) -> None:
        self._drain()
        self.conn.rollback()

    def send_encoded(self, encoded: bytes) -> None:
        """As the mixin's, after the last CALL's status if unread (``_query`` drains it
        when it renders, but a statement rendered ahead was rendered before that CALL)."""
        conn = self.conn
        if conn.more_results():
            self._drain()
        conn.send_query(encoded)

    def _drain(self) -> None:
        """Read what a CALL left after its rows (its status), before the next command.

        Deferred from execute() on purpose: the server sends a CALL's status a moment
        after the procedure's last SELECT, and waiting for it there puts the client to
        sleep a second time per call (bench/experiments/results/round_trip_cost.txt); by the next
        command it has long arrived. Our procedures end with that SELECT, after their
        COMMIT, so the status carries no error that would belong to the last call. The
        state is the connection's (``more_results``), so a cursor made later on a kept
        connection drains it too, as its constructor does.
        """
        conn = self.conn
        while conn.more_results() and conn.next_result() == 0:
            conn.store_result()

    def close(self) -> None:
        self.templates.clear()
        self.rows = ()


class MysqlclientCountingCursor(MysqlclientCursor):
    """mysqlclient's C connection with result sets dropped unread, each statement's kind
    left in ``kind`` (tpsbench.core.cursor). A result set is read to its end and freed
    by ``discard_result`` (mysqlclient 2.2), as sysbench reads and frees its rows, without
    the result object (and its per-column converters) that ``store_result`` builds."""

    kind = OTHER

    def __init__(self, conn: Any) -> None:
        super().__init__(conn)
        #: reads a result set to its end and frees it (store_result where mysqlclient is older)
        self.drop_result = getattr(conn, "discard_result", None) or conn.store_result

    def _take(self) -> None:
        conn = self.conn
        if conn.field_count():  # a result set: every row read from the server, in C, and dropped
            self.drop_result()
            self.kind = READ
        else:
            self.kind = WRITE if conn.affected_rows() > 0 else OTHER

    def execute(self, sql: str, params: Sequence[Any] = ()) -> MysqlclientCountingCursor:
        self.conn.query(self._query(sql, params))
        self._take()
        return self


class MysqlRows(LazyRows):
    """A stored result's rows (``store_result``: all of them in the client's memory),
    converted by the connection's converters on first use."""

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.length, self._rows, self.result = result.num_rows(), None, result

    def _convert(self) -> tuple:
        return self.result.fetch_row(0)
