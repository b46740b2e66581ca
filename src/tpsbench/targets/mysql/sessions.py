"""What a MySQL or MariaDB server's sessions are doing, and which process is the server.

For tpsbench.measure.db_waits (:func:`read_waits`) and the host CPU observer's server
share (:func:`server_process`), apart from targets/mysql/target.py because they read the
server's own catalogue of sessions and locks, not the benchmark's tables.

What can be told apart without performance_schema (OFF by default on MariaDB 10.11):
a session executing a statement (information_schema.PROCESSLIST, COMMAND 'Query') is
waiting on a lock when InnoDB says its transaction is in LOCK WAIT (a row or table lock;
the table from the lock it asked for) or when its STATE names a lock (metadata and table
locks: "Waiting for table metadata lock"); on the client when its STATE is a network
one; on something else when its STATE is another "Waiting ..." (or a sleep); otherwise it
counts as on CPU. I/O and internal (mutex) waits are not visible there, so a session
reading pages from disk counts as on CPU and the observer gives no ``io_pct`` nor
``lwlock_pct`` for these servers (their :attr:`wait_kinds` leave them out).

Where the lock asked for is described: MariaDB (and MySQL before 8.0) keep
information_schema.INNODB_LOCKS; MySQL 8.0 moved it to performance_schema.data_locks
(ENGINE_LOCK_ID matches INNODB_TRX.trx_requested_lock_id). Whichever the server has is
used; with neither, a row-lock wait still counts as a lock wait, without its table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from tpsbench.core.target import SessionWait, Target, rows_of

#: the kinds of wait these servers' sessions show (see the module docstring)
KINDS = ("cpu", "lock", "client", "other")
#: PROCESSLIST states of a session waiting for its client
CLIENT_STATES = frozenset({"writing to net", "reading from net", "sending to client"})
#: where the lock a transaction waits for is described: (table, its id column, its table column, its type column)
LOCK_SOURCES = (
    ("information_schema.INNODB_LOCKS", "lock_id", "lock_table", "lock_type"),
    ("performance_schema.data_locks", "ENGINE_LOCK_ID", "OBJECT_NAME", "LOCK_TYPE"),
)
SESSIONS = ("SELECT p.STATE, t.trx_state, {table} AS lock_table, {kind} AS lock_type"
            " FROM information_schema.PROCESSLIST p"
            " LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID AND t.trx_state = 'LOCK WAIT'"
            "{join} WHERE p.DB = DATABASE() AND p.COMMAND IN ('Query', 'Execute') AND p.ID <> CONNECTION_ID()")


class MysqlSessions(Target):
    """The part of MysqlFamily (targets/mysql/target.py) that reads the server's sessions and process."""

    wait_kinds: ClassVar[tuple[str, ...]] = KINDS
    server_commands: ClassVar[tuple[str, ...]] = ("mariadbd", "mysqld")
    default_port: ClassVar[int | None] = 3306
    #: read_waits's SELECT for this server, found at its first call
    sessions_sql: str | None = None

    def read_waits(self, conn: Any) -> list[SessionWait]:
        self.sessions_sql = self.sessions_sql or sessions_query(conn)
        return read_waits(conn, self.sessions_sql)

    def server_process(self) -> int | None:
        with self.session("finding the server's process") as conn:
            return server_process(conn)


def sessions_query(conn: Any) -> str:
    """The SELECT of :func:`read_waits` for this server: joined to the first of
    LOCK_SOURCES it has (asked once per connection, by the caller's cache)."""
    for source, lock_id, table, kind in LOCK_SOURCES:
        schema, name = source.split(".")
        if rows_of(conn, "SELECT 1 FROM information_schema.TABLES"
                       f" WHERE TABLE_SCHEMA = '{schema}' AND TABLE_NAME = '{name}'"):
            return SESSIONS.format(table=f"l.{table}", kind=f"l.{kind}",
                                   join=f" LEFT JOIN {source} l ON l.{lock_id} = t.trx_requested_lock_id")
    return SESSIONS.format(table="NULL", kind="NULL", join="")


def read_waits(conn: Any, query: str) -> list[SessionWait]:
    """The database's sessions executing a statement, each classified (see the module docstring)."""
    return [classify(_text(state), _text(trx), _text(table), _text(kind))
            for state, trx, table, kind in rows_of(conn, query)]


def classify(state: str, trx_state: str, lock_table: str, lock_type: str) -> SessionWait:
    """One PROCESSLIST row (and its InnoDB transaction's wait) as a :class:`SessionWait`."""
    if trx_state == "LOCK WAIT":
        table = lock_table.rpartition(".")[2].strip("`") or None
        return SessionWait("lock", f"Lock:InnoDB {(lock_type or 'row').lower()} lock", table)
    lowered = state.lower()
    if "lock" in lowered:
        return SessionWait("lock", f"Lock:{state}")
    if lowered in CLIENT_STATES:
        return SessionWait("client", f"Client:{state}")
    if lowered.startswith("waiting") or lowered == "user sleep":
        return SessionWait("other", f"Other:{state}")
    return SessionWait("cpu")


def server_process(conn: Any) -> int | None:
    """The process id in the server's pid file (@@pid_file), where this host can read it."""
    rows = rows_of(conn, "SELECT @@pid_file, @@datadir")
    if not rows or not rows[0][0]:
        return None
    path = Path(_text(rows[0][1])) / _text(rows[0][0])  # a relative pid file is in the data directory
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)
