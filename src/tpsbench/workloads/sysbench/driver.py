"""How a sysbench session sends one statement, and how sysbench would count it.

sysbench's client is C: per statement it costs a few microseconds of client CPU. A Python
client at the convenient DB-API layer costs 50-80 us (../../../../shared/reference/
driver-costs.md), which on a small machine is CPU taken from the database and shows up as
a lower TPS that says nothing about the database. So the hot path goes one layer down
where that layer is measured to matter, and stays on DB-API everywhere else:

* psycopg 3: server-side prepared statements through ``pgconn.prepare`` /
  ``exec_prepared`` (libpq's PQprepare / PQexecPrepared, which is what sysbench's pgsql
  driver calls), text parameters, results left in libpq's memory as sysbench leaves them;
* mysqlclient: ``query`` + ``discard_result`` on the C connection with the values rendered
  as literals (text protocol: sysbench uses server-side prepared statements instead, so
  the server parses each statement here; bench/results/mariadb_protocols.txt shows why
  MariaDB Connector/Python's binary protocol is not used);
* anything else (sqlite3, PyMySQL, pyodbc): ``cursor.execute`` and ``fetchall``.

Every runner leaves sysbench's classification of the statement it ran in ``kind``: READ
when it returned a result set, WRITE when it changed at least one row, OTHER otherwise
(BEGIN, COMMIT, and DML that matched nothing), which is how sysbench's drivers split
"queries performed" into read/write/other. The libpq and mysqlclient runners can also
send a statement without waiting for it (``send``/``receive``), which lets the engine
run many users on one thread (tpsbench.api.multiplex).

The targets' own ``fast_cursor(conn)`` (TPC-C's hot path) goes down the same layers but
turns every row into Python values, as a workload that reads its results must; sysbench
never looks at its rows, and converting the 400 rows of an oltp_read_only transaction
cost 16 % (PostgreSQL) and 47 % (MariaDB) more client CPU, measured side by side. A
``rows=False`` mode of those cursors would let this module go; until then it stays here
and nothing outside this package uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tpsbench.targets.mysql import MysqlclientSend
from tpsbench.targets.postgresql import LibpqSend, prepared_names, text_params

READ, WRITE, OTHER = 0, 1, 2
KINDS = ("read", "write", "other")


class StatementRunner:
    """Generic DB-API runner: a cursor, ``execute`` with parameters, results fetched.

    Every runner's ``execute(sql, params)`` leaves sysbench's kind of the statement in
    ``kind``; a statement without parameters (BEGIN, COMMIT, ROLLBACK) goes without any.
    """

    kind = OTHER

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.cur = conn.cursor()

    def execute(self, sql: str, params: Sequence[int | str]) -> None:
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
        except Exception:  # noqa: BLE001, S110 - a dead connection's cursor may fail to close
            pass


class PsycopgRunner(LibpqSend, StatementRunner):
    """libpq prepared statements on a psycopg 3 connection (see the module docstring);
    BEGIN and COMMIT as simple queries, as sysbench sends them. Can send without
    waiting (LibpqSend), for the engine's shared thread."""

    def __init__(self, conn: Any) -> None:
        from psycopg import OperationalError, errors, pq

        self.conn = conn
        self.pgconn = conn.pgconn
        self.names = prepared_names(conn)  # kept with the connection for its next session
        self.tuples_ok = pq.ExecStatus.TUPLES_OK
        self.command_ok = pq.ExecStatus.COMMAND_OK
        self.conn_ok = pq.ConnStatus.OK
        self.sqlstate = pq.DiagnosticField.SQLSTATE
        self.error_from_result = errors.error_from_result
        self.operational_error = OperationalError
        self.encoding = "utf-8"

    def _take(self, res: Any, name: bytes = b"") -> None:
        """The kind of ``res``, its memory freed at once; an error raised as psycopg's."""
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
        if self.pgconn.status != self.conn_ok:  # the server went away: what the engine reconnects on
            message = (res.error_message or b"connection lost").decode(errors="replace").strip()
            raise self.operational_error(message or "connection lost")
        if res.error_field(self.sqlstate) == b"26000":  # the server forgot them (DISCARD ALL): prepare anew
            self.names.clear()
        raise self.error_from_result(res, encoding=self.encoding)

    def execute(self, sql: str, params: Sequence[int | str]) -> None:
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


class MysqlclientRunner(MysqlclientSend, StatementRunner):
    """mysqlclient's C connection: one ``query`` round trip per statement.

    A result set is read to its end and dropped by ``discard_result`` (mysqlclient 2.2),
    as sysbench reads and frees its rows, without the result object (and its per-column
    converters) that ``store_result`` builds and sysbench has no use for. Can send
    without waiting (MysqlclientSend), for the engine's shared thread.
    """

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.templates: dict[str, bytes] = {}
        self.literal = conn.string_literal
        #: reads a result set to its end and frees it (store_result where mysqlclient is older)
        self.drop_result = getattr(conn, "discard_result", None) or conn.store_result

    def _query(self, sql: str, params: Sequence[int | str]) -> bytes:
        template = self.templates.get(sql)
        if template is None:
            template = self.templates[sql] = sql.encode()
        if not params:
            return template
        lit = self.literal
        return template % tuple([b"%d" % v if isinstance(v, int) else lit(v.encode()) for v in params])

    def _take(self) -> None:
        conn = self.conn
        if conn.field_count():  # a result set: every row read from the server, in C, and dropped
            self.drop_result()
            self.kind = READ
        else:
            self.kind = WRITE if conn.affected_rows() > 0 else OTHER

    def execute(self, sql: str, params: Sequence[int | str]) -> None:
        self.conn.query(self._query(sql, params))
        self._take()

    def close(self) -> None:
        self.templates.clear()


def runner_for(conn: Any, fast: bool = True) -> StatementRunner:
    """The cheapest runner for ``conn``'s driver (``fast=False``: plain DB-API always)."""
    module = type(conn).__module__.split(".")[0]
    if fast and module == "psycopg":
        return PsycopgRunner(conn)
    if fast and module == "MySQLdb":
        return MysqlclientRunner(conn)
    return StatementRunner(conn)
