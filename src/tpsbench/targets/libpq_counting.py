"""libpq's counting cursor (rows dropped unread, each statement's kind told), and the
pipeline a trace replay sends on (tpsbench.workloads.replay.player).

Why a pipeline for a replay: a traced session's statements are all known in advance, so
one that is behind its schedule can send its next statements without waiting for the
previous answer; the server then runs them back to back, and client and server wake up
less often per statement. Same statements, same order, same connection: same semantics.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import select
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg import pq

from tpsbench.core.cursor import IN_DOUBT, OTHER, READ, WRITE
from tpsbench.targets.libpq import STATEMENT_NUMBERS, LibpqSend, dollar_markers, prepared_names, text_params


def _send_sync() -> Callable[[int], int] | None:
    """libpq's PQsendPipelineSync (libpq 17+: a Sync left in the buffer), from the libpq
    psycopg itself calls; None where there is none (then each Sync is sent at once)."""
    try:
        if pq.__impl__ == "python":
            from psycopg.pq import _pq_ctypes

            lib: Any = _pq_ctypes.pq  # type: ignore[attr-defined]  # the ctypes library it loaded
        else:
            import psycopg_binary

            folder = Path(psycopg_binary.__file__).parent.parent / "psycopg_binary.libs"
            found = sorted(folder.glob("libpq*.so*")) if pq.__impl__ == "binary" else []
            lib = ctypes.CDLL(str(found[0]) if found else ctypes.util.find_library("pq"))
        send = lib.PQsendPipelineSync
    except (ImportError, OSError, AttributeError, TypeError):
        return None
    send.argtypes, send.restype = [ctypes.c_void_p], ctypes.c_int
    return send


SEND_SYNC = _send_sync()
#: what collect() compares each result's status with, as plain ints (an enum member is looked up)
PIPELINE_SYNC, FATAL_ERROR, PIPELINE_ABORTED = (int(s) for s in (pq.ExecStatus.PIPELINE_SYNC, pq.ExecStatus.FATAL_ERROR,
                                                                  pq.ExecStatus.PIPELINE_ABORTED))
OK = int(pq.ConnStatus.OK)


class LibpqCountingCursor(LibpqSend):
    """libpq prepared statements whose rows are dropped unread, each statement's kind
    left in ``kind`` (tpsbench.core.cursor); BEGIN and COMMIT go as simple queries, as
    sysbench sends them. A result's memory is freed at once."""

    kind = OTHER

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.pgconn = conn.pgconn
        self.names = prepared_names(conn)  # kept with the connection for its next session
        self.encoding = conn.info.encoding
        self.tuples_ok = pq.ExecStatus.TUPLES_OK
        self.command_ok = pq.ExecStatus.COMMAND_OK

    def _take(self, res: Any, name: bytes = b"") -> None:
        status = res.status
        if status == self.tuples_ok:
            res.clear()
            self.kind = READ
            return
        if status == self.command_ok:
            rows = res.command_tuples
            res.clear()
            self.kind = WRITE if rows else OTHER
            return
        raise self._error(res)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        if not params:
            self._take(self.pgconn.exec_(sql.encode()))
            return
        res = self.pgconn.exec_prepared(self.names.get(sql) or self._prepare(sql), text_params(params))
        if res.status == self.tuples_ok:  # the common case inline: one call less per statement
            res.clear()
            self.kind = READ
            return
        self._take(res)

    def close(self) -> None:
        """Nothing to free: the statements stay with the connection for its next session."""

    def pipeline(self) -> None:
        """libpq's pipeline mode, for good: statements are queued with :meth:`push` and
        their outcomes read in order with :meth:`collect`. Each statement (and each
        prepare) is followed by its own Sync, so an error ends that statement alone, as a
        statement sent on its own would: none is left unexecuted for an earlier one's error."""
        self.pgconn.enter_pipeline_mode()
        #: what each Sync sent closes, oldest first: None for a statement, its SQL for a prepare
        self.syncs: collections.deque[str | None] = collections.deque()
        self.failure: Exception | None = None
        self.carried: Exception | None = None

    def pre_encode(self, sql: str, params: Any = ()) -> tuple[str, Any, bytes | None]:
        """What :meth:`push` sends, made without the server: the SQL, its text parameters,
        and for a statement without any its bytes (sent as it is, extended protocol)."""
        return (sql, text_params(params), None) if params else (sql, None, sql.encode(self.encoding))

    def push(self, encoded: tuple[str, Any, bytes | None]) -> None:
        """Queue a pre-encoded statement in the pipeline and send it; a statement with
        parameters is prepared first on the same pipeline, on its first sight."""
        pgconn = self.pgconn
        sql, values, text = encoded
        if text is None:
            name = self.names.get(sql)
            if name is None:
                name = self.names[sql] = b"tpsb_%d" % next(STATEMENT_NUMBERS)
                pgconn.send_prepare(name, dollar_markers(sql).encode(self.encoding))
                pgconn.pipeline_sync()
                self.syncs.append(sql)
            pgconn.send_query_prepared(name, values)
        else:
            pgconn.send_query_params(text, None)
        if SEND_SYNC is None:
            pgconn.pipeline_sync()
            self.flush()
        elif not SEND_SYNC(pgconn.pgconn_ptr):
            raise psycopg.OperationalError((pgconn.error_message or b"").decode(errors="replace").strip()
                                           or "the connection is lost")
        self.syncs.append(None)

    def flush(self) -> None:
        """Send what :meth:`push` queued (with libpq 17's PQsendPipelineSync the Syncs
        wait in its buffer: the statements a session has due at once go in one write)."""
        pgconn = self.pgconn
        while pgconn.flush():  # what the socket did not take (a full buffer): wait until it does
            select.select([pgconn.socket], [pgconn.socket], [], 0.01)
            pgconn.consume_input()

    def collect(self) -> list[Exception | None]:
        """The outcomes of the queued statements whose answer (up to its Sync) has come in,
        in order: None for a success, else the exception ``execute`` would raise. A
        prepare's failure is its statement's. A connection lost leaves every statement
        still queued (sent, not answered) in doubt: :data:`IN_DOUBT`."""
        pgconn = self.pgconn
        try:
            pgconn.consume_input()
        except psycopg.OperationalError:  # the connection is gone: what it had read is still taken below
            pass
        done: list[Exception | None] = []
        syncs, busy, result = self.syncs, pgconn.is_busy, pgconn.get_result
        while syncs and not busy():
            res = result()
            if res is None:
                if pgconn.status != OK:
                    break
                continue
            status = res.status
            if status == PIPELINE_SYNC:
                closed, failure = syncs.popleft(), self.failure
                self.failure = None
                if closed is not None:  # a prepare's Sync
                    if failure is not None:
                        self.names.pop(closed, None)
                        self.carried = failure
                    continue
                if self.carried is not None:
                    failure, self.carried = self.carried, None
                done.append(failure)
            elif status == FATAL_ERROR or status == PIPELINE_ABORTED:
                self.failure = self._error(res)  # a later failure (the commit at Sync) is the outcome
        if syncs and pgconn.status != OK:
            done += [IN_DOUBT for closed in syncs if closed is None]
            syncs.clear()
        return done
