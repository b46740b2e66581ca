"""A statement prepared without waiting: a connection's first use of a statement on the
engine's shared thread (PreparedCursor.send_encoded).

Why: a prepare is a round trip. Done blocking on the shared thread, every user's first
call of each statement stopped all of the worker's users for as long as the server took
to answer, and a busy server (MariaDB's thread pool with thousands of connections) took
long enough to wake users seconds late (bench/results/fifteen_thousand.txt). Sent with
libmariadb's non-blocking calls, as executes are (libmariadb.Prepared.start), the
prepare is one more answer the shared thread waits for among the others.
"""

from __future__ import annotations

import select
from typing import Any

from tpsbench.targets.mysql.libmariadb import MYSQL_WAIT_READ, MYSQL_WAIT_WRITE, Handle, Prepared, server_text


class Preparing:
    """The prepare of ``sql`` under way on ``handle``'s connection, for a call with ``params``."""

    __slots__ = ("handle", "sql", "params", "text", "stmt")

    def __init__(self, handle: Handle, sql: str, params: Any) -> None:
        self.handle, self.sql, self.params = handle, sql, params
        self.text = server_text(sql)  # kept: libmariadb may still be writing it
        self.stmt = handle.lib.mysql_stmt_init(handle.mysql)

    def start(self) -> bool:
        """Send the prepare: True if its answer is in already, else wait for the socket
        to be readable and call :meth:`resume` until it returns True."""
        handle = self.handle
        return not self._written(handle.lib.mysql_stmt_prepare_start(handle.ret, self.stmt, self.text, len(self.text)))

    def resume(self) -> bool:
        """Carry on once the socket is readable: True once the answer is in."""
        return not self._written(self.handle.lib.mysql_stmt_prepare_cont(self.handle.ret, self.stmt, MYSQL_WAIT_READ))

    def _written(self, status: int) -> int:
        """``status`` once the statement is all written (as Prepared._written)."""
        handle = self.handle
        while status & MYSQL_WAIT_WRITE:
            select.select([], [handle.fileno()], [])
            status = handle.lib.mysql_stmt_prepare_cont(handle.ret, self.stmt, MYSQL_WAIT_WRITE)
        return status

    def result(self) -> Prepared | None:
        """The statement prepared, None where the server will not prepare it; the
        server's error raised otherwise."""
        return self.handle.prepared(self.stmt, self.text, self.handle.ret[0])
