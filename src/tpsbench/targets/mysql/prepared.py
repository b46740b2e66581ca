"""Cursors of server-side prepared statements on mysqlclient's connection: MySQL and
MariaDB's ``--client prepared`` (the default where libmariadb is at hand).

Each SQL text is prepared the first time a connection runs it and executed with its
values bound from then on (targets/mysql/libmariadb.py says why and how). The cursors have the
shapes of the text path's (targets/mysql/mysqlclient.py), so sessions take either:
:class:`PreparedCursor` keeps a result's rows as Python values, the same types as the
text path's; :class:`PreparedCountingCursor` drops them unread and tells the statement's
kind, as sysbench's client does. Both can send a statement and read its answer later,
for the engine's shared thread. A statement the server will not prepare (not a
preparable kind, or ``max_prepared_stmt_count`` reached: 300 users each preparing every
sysbench statement on 10 tables pass MariaDB's default of 16,382) goes as text through
the text path's cursor on the same connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tpsbench.core.cursor import OTHER, READ, WRITE
from tpsbench.targets.mysql.libmariadb import Handle, Prepared
from tpsbench.targets.mysql.mysqlclient import MysqlclientCountingCursor, MysqlclientCursor
from tpsbench.targets.mysql.prepared_rows import result_rows
from tpsbench.targets.mysql.preparing import Preparing
from tpsbench.targets.rows import BufferedRows

#: the value of ``statements[sql]`` for a statement the server would not prepare
TEXT = None


class PreparedCursor(BufferedRows):
    """The part of a DB-API cursor a virtual user needs, over prepared statements.

    ``rowcount`` and ``lastrowid`` as mysqlclient's cursor gives them; a CALL's status
    (the last of its results) is read before the connection's next command, not at once,
    as the text path defers it (MysqlclientCursor._drain says why). Errors are
    mysqlclient's exception classes with ``(number, message)``, so the target sorts them
    as it sorts the text path's."""

    description = None
    #: the text path's cursor class, for the statements that go as text
    text_class: type[MysqlclientCursor] = MysqlclientCursor

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.handle = handle = Handle.of(conn)
        self.converter = conn.converter
        self.statements = handle.statements
        self.rows: Sequence[tuple] = ()
        self.pos = 0
        self.rowcount = -1
        self.lastrowid: int | None = None
        #: the statement sent without waiting
        self.sent: Prepared | None = None
        #: the prepare sent without waiting, for a statement new to the connection (send_encoded)
        self.preparing: Preparing | None = None
        handle.drain()  # a kept connection's last CALL status, if unread: before the text cursor reads
        self.text = self.text_class(conn)

    # -- one statement at a time ---------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = ()) -> PreparedCursor:
        prepared = self._statement(sql)
        if prepared is TEXT:
            self.text.execute(sql, params)
            self._from_text()
            return self
        if prepared.count:
            prepared.bind(params)
        prepared.execute()
        self._take(prepared)
        return self

    def _statement(self, sql: str) -> Prepared | None:
        """The statement prepared on this connection (prepared now the first time), TEXT
        where the server will not; first the last CALL's status, if unread (read by the
        handle: on a connection the text path must not read a prepared CALL's status)."""
        if self.handle.pending is not None:
            self.handle.drain()
        statements = self.statements
        if sql in statements:
            return statements[sql]
        prepared = statements[sql] = self.handle.prepare(sql)
        return prepared

    def _take(self, prepared: Prepared) -> None:
        """The executed statement's result: rows, counts, and whether a status follows."""
        lib, stmt = prepared.lib, prepared.stmt
        self.rows = result_rows(prepared, self.converter) if lib.mysql_stmt_field_count(stmt) else ()
        self.pos = 0
        self._counts(prepared)

    def _counts(self, prepared: Prepared) -> None:
        lib, stmt = prepared.lib, prepared.stmt
        self.rowcount = lib.mysql_stmt_affected_rows(stmt)
        self.lastrowid = lib.mysql_stmt_insert_id(stmt)
        if lib.mysql_stmt_more_results(stmt):
            self.handle.pending = prepared

    def _from_text(self) -> None:
        text = self.text
        self.rows, self.pos, self.rowcount, self.lastrowid = text.rows, 0, text.rowcount, text.lastrowid

    def next_result_set(self) -> bool:
        """Move to a CALL's next result, as the text path's cursor does: True with its
        rows in place (the last result is the CALL's status, no rows), False when none
        is left."""
        prepared = self.handle.pending
        if prepared is None:  # a CALL that went as text
            if not self.text.next_result_set():
                return False
            self._from_text()
            return True
        self.handle.pending = None
        lib, stmt = prepared.lib, prepared.stmt
        status = lib.mysql_stmt_next_result(stmt)
        if status > 0 or (status == 0 and lib.mysql_stmt_field_count(stmt) and lib.mysql_stmt_store_result(stmt)):
            raise prepared.handle.error(stmt)
        if status:
            return False
        self._take(prepared)
        return True

    def commit(self) -> None:
        self.handle.drain()
        self.text.commit()

    def rollback(self) -> None:
        self.handle.drain()
        self.text.rollback()

    # -- sent now, read later (tpsbench.engine.multiplex) ------------------------------
    def encode(self, sql: str, params: Sequence[Any] = ()) -> tuple[Prepared | str | None, Any]:
        """The statement and its values, as ``send_encoded`` sends them; the values are
        bound at the send, since a statement's C buffers are its own and a transaction
        may be encoded ahead of its turn. A statement new to the connection is encoded
        as its SQL, and prepared at its send without waiting (Preparing): the shared
        thread encodes ahead, and must never wait for the server there."""
        prepared = self.statements.get(sql, sql)
        return (prepared, params) if prepared is not TEXT else (TEXT, self.text.encode(sql, params))

    def send_encoded(self, encoded: tuple[Prepared | str | None, Any]) -> bool:
        """Send without waiting; True if the answer is in already (then it is read)."""
        statement, params = encoded
        if self.handle.pending is not None:
            self.handle.drain()
        if isinstance(statement, str):  # new to the connection when encoded: prepared since, or now
            sql, statement = statement, self.statements.get(statement, statement)
            if isinstance(statement, str):
                self.preparing = preparing = Preparing(self.handle, sql, params)
                return preparing.start() and self._prepared(preparing)
            if statement is TEXT:
                params = self.text.encode(sql, params)
        self.sent = prepared = statement
        if prepared is TEXT:
            self.text.send_encoded(params)
            return False
        if prepared.count:
            prepared.bind(params)
        if prepared.start():
            self._take(prepared)
            return True
        return False

    def _prepared(self, preparing: Preparing) -> bool:
        """The prepare's answer is in: send the statement it was for (send_encoded's answer)."""
        self.preparing = None
        sql, params = preparing.sql, preparing.params
        prepared = self.statements[sql] = preparing.result()
        return self.send_encoded((prepared, params) if prepared is not TEXT else (TEXT, self.text.encode(sql, params)))

    def fileno(self) -> int:
        return self.handle.fileno()

    def receive(self) -> bool:
        """Carry on with the sent statement's answer: True once it is all read."""
        preparing = self.preparing
        if preparing is not None:
            return preparing.resume() and self._prepared(preparing)
        prepared = self.sent
        if prepared is TEXT:
            self.text.receive()
            self._from_text()
            return True
        if not prepared.resume():
            return False
        self._take(prepared)
        return True

    def close(self) -> None:
        """Drop the rows; the statements stay the connection's (closed as it goes), for
        the next session on it."""
        self.rows = ()
        self.text.close()


class PreparedCountingCursor(PreparedCursor):
    """Prepared statements with their result sets dropped unread (read to the end into
    libmariadb's buffer and freed, as sysbench does), each statement's kind in ``kind``."""

    kind = OTHER
    text_class = MysqlclientCountingCursor
    text: MysqlclientCountingCursor

    def _take(self, prepared: Prepared) -> None:
        lib, stmt = prepared.lib, prepared.stmt
        if lib.mysql_stmt_field_count(stmt):
            lib.mysql_stmt_free_result(stmt)
            self.kind = READ
        else:
            self.kind = WRITE if lib.mysql_stmt_affected_rows(stmt) > 0 else OTHER
        if lib.mysql_stmt_more_results(stmt):
            self.handle.pending = prepared

    def _from_text(self) -> None:
        self.kind = self.text.kind
