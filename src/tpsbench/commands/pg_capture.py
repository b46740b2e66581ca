"""A live PostgreSQL capture: the server logs every statement for the window, with the
user's consent, and tpsbench reads the log back through the server (``pg_read_binary_file``).

Why this way: the server log is the one place that sees every client's statements with
their session, timing and bound parameters, and reading it through a superuser
connection works as well on another host as on this one. The settings it needs
(``log_min_duration_statement``, ``log_line_prefix``, ``log_parameter_max_length``) can
be changed server-wide by ``ALTER SYSTEM`` and a reload, without a restart; each is put
back as it was (its ``postgresql.auto.conf`` line or none) after the window, also after
Ctrl-C or a lost connection. Nothing of the database's data is read or written.
csvlog would need ``logging_collector``, which only a restart turns on, so the log read is
the stderr one: the collector's current file, or without a collector the file the server's
stderr goes to (``/proc/self/fd/2`` of the capturing backend).
A second capture would save the first one's settings as the originals: an advisory lock,
taken in the ``postgres`` database so that it is one per server (advisory locks are per
database) and held by a connection of its own (gone with a killed tpsbench), keeps it out.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from tpsbench.commands.server_settings import capture_running, restore
from tpsbench.core.errors import TpsbenchError, first_line
from tpsbench.core.target import Target, close_quietly
from tpsbench.workloads.replay.pglog import PREFIX

#: what a capture sets server-wide for its window
SETTINGS = {"log_min_duration_statement": "0", "log_line_prefix": PREFIX, "log_parameter_max_length": "-1"}
#: how often the log is read during the window, and the most read at once
POLL_S = 0.5
CHUNK = 8 << 20
WITHOUT_COLLECTOR = "/proc/self/fd/2"
#: the advisory lock a live capture holds for its run: "tpsb", "capt" as two int4 keys
LOCK_KEYS = (0x74707362, 0x63617074)
#: the database the lock is taken in, one every server has, so that the lock is server-wide
MAINTENANCE_DB = "postgres"


def undo_sql(saved: dict[str, str | None]) -> str:
    """The statements that put the settings back: said before they change, in case
    tpsbench itself is killed (SIGKILL) before it can."""
    parts = [f"ALTER SYSTEM RESET {name}" if old is None else f"ALTER SYSTEM SET {name} = {_quote(old)}"
             for name, old in saved.items()]
    return "; ".join([*parts, "SELECT pg_reload_conf()"])


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _connect(target: Target) -> Any:
    conn = target.connect()
    target.set_autocommit(conn)
    conn.execute("SET application_name = 'tpsbench capture'")
    conn.execute("SET log_min_duration_statement = -1")  # its own reads stay out of the log
    return conn


def _one(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def lock_connection(target: Target, said: Callable[[str], None]) -> Any:
    """A connection holding the capture lock in :data:`MAINTENANCE_DB`; where that cannot be
    connected to, in the captured database, and the lock then keeps out only its captures."""
    try:
        conn = type(target)(target.url.set(database=MAINTENANCE_DB)).connect()
    except TpsbenchError as exc:
        said(f"capture: cannot connect to the {MAINTENANCE_DB} database ({exc}): the lock that keeps out a second "
             f"capture holds for database {target.database!r} only")
        conn = target.connect()
    try:
        target.set_autocommit(conn)
        conn.execute("SET application_name = 'tpsbench capture lock'")
        take_lock(conn)
    except BaseException:
        close_quietly(conn)
        raise
    return conn


def take_lock(conn: Any) -> None:
    """Hold the capture lock on ``conn``, or refuse naming the backend that holds it."""
    if _one(conn, "SELECT pg_try_advisory_lock(%s, %s)", LOCK_KEYS):
        return
    row = conn.execute("SELECT l.pid, a.usename, a.client_addr FROM pg_locks l LEFT JOIN pg_stat_activity a "
                       "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s "
                       "AND l.objid = %s AND l.objsubid = 2 "
                       "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                       LOCK_KEYS).fetchone()
    by = "pid unknown"  # it ended meanwhile
    if row is not None:
        pid, user, address = row
        by = f"pid {pid}" + (f", {user}" if user else "") + (f" from {address}" if address else "")
    raise capture_running(by)


def check_access(conn: Any) -> str:
    """The log file to read, or a one-line error saying what cannot be read and why."""
    if not _one(conn, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"):
        raise TpsbenchError("capture needs a superuser connection (ALTER SYSTEM and reading the server log); "
                            "or give a log file with --log")
    if _one(conn, "SELECT current_setting('logging_collector')") == "on":
        path = _one(conn, "SELECT pg_current_logfile('stderr')")
        if path is None:
            raise TpsbenchError("cannot read the server log: its log_destination has no stderr file "
                                f"({_one(conn, 'SHOW log_destination')}); give a csvlog file with --log")
        return str(path)
    try:
        _one(conn, "SELECT size FROM pg_stat_file(%s)", (WITHOUT_COLLECTOR,))
        _one(conn, "SELECT length(pg_read_binary_file(%s, 0, 1))", (WITHOUT_COLLECTOR,))
    except Exception as exc:  # noqa: BLE001 - any refusal means the same: the log is out of reach
        raise TpsbenchError("cannot read the server log (logging_collector is off and its stderr is not a "
                            f"readable file: {first_line(exc)}); give a log file with --log") from None
    return WITHOUT_COLLECTOR


def saved_settings(conn: Any) -> dict[str, str | None]:
    """Each setting's ``postgresql.auto.conf`` value before the capture (None: no line)."""
    rows = conn.execute("SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%%postgresql.auto.conf' "
                        "AND name = ANY(%s) ORDER BY seqno", (list(SETTINGS),)).fetchall()
    saved: dict[str, str | None] = dict.fromkeys(SETTINGS)
    saved.update({name: value for name, value in rows})
    if saved["log_line_prefix"] == PREFIX:
        raise TpsbenchError("the server's log_line_prefix is a capture's, though no capture holds the lock (one was "
                            "killed, or one runs on another database without the lock): wait for it, or if none "
                            f"runs, restore by hand: {undo_sql(dict.fromkeys(SETTINGS))}")
    return saved


def _apply(conn: Any, values: dict[str, str | None]) -> None:
    for name, value in values.items():
        conn.execute(f"ALTER SYSTEM RESET {name}" if value is None else f"ALTER SYSTEM SET {name} = {_quote(value)}")
    conn.execute("SELECT pg_reload_conf()")


class LogTail:
    """The log file from where it ended when the window opened, read as it grows and
    kept in a temporary file (a busy server writes megabytes a second)."""

    def __init__(self, conn: Any, path: str) -> None:
        self.conn = conn
        self.path = path
        self.offset = self.size()
        self.kept: IO[bytes] = tempfile.TemporaryFile()

    def size(self) -> int:
        return int(_one(self.conn, "SELECT size FROM pg_stat_file(%s)", (self.path,)))

    def read(self) -> None:
        """Everything written since the last read (a collector's new file from its start)."""
        if self.path != WITHOUT_COLLECTOR:
            current = _one(self.conn, "SELECT pg_current_logfile('stderr')")
            if current and current != self.path:
                self._read_to(self.size())
                self.path, self.offset = str(current), 0
        self._read_to(self.size())

    def _read_to(self, end: int) -> None:
        while self.offset < end:
            data = _one(self.conn, "SELECT pg_read_binary_file(%s, %s, %s)",
                        (self.path, self.offset, min(CHUNK, end - self.offset)))
            if not data:
                return
            self.kept.write(bytes(data))
            self.offset += len(data)

    def text(self) -> str:
        self.kept.seek(0)
        return self.kept.read().decode("utf-8", errors="replace")


@contextlib.contextmanager
def logging_everything(target: Target, said: Callable[[str], None]) -> Iterator[tuple[Any, LogTail]]:
    """Within: the server logs every statement with tpsbench's prefix; after: as before."""
    lock = lock_connection(target, said)
    conn = None
    try:
        conn = _connect(target)
        path = check_access(conn)
        saved = saved_settings(conn)
        tail = LogTail(conn, path)
    except BaseException:
        close_quietly(conn)
        close_quietly(lock)
        raise
    said(f"capture: logging every statement server-wide meanwhile; if tpsbench is killed, restore with: "
         f"{undo_sql(saved)}")
    try:
        _apply(conn, dict(SETTINGS))
        yield conn, tail
    finally:
        restore(lambda: _connect(target), conn, lambda c: _apply(c, saved), undo_sql(saved))
        said("capture: server settings restored")
        close_quietly(conn)
        close_quietly(lock)


def server_now(conn: Any) -> float:
    """The server's clock, which the log's times are on."""
    return float(_one(conn, "SELECT extract(epoch FROM clock_timestamp())"))


def own_session(conn: Any) -> str:
    """This connection's ``%c`` session id, whose lines are not the traffic."""
    return str(_one(conn, "SELECT to_hex(floor(extract(epoch FROM backend_start))::bigint) || '.' || to_hex(pid) "
                          "FROM pg_stat_activity WHERE pid = pg_backend_pid()"))


def record(target: Target, seconds: float, said: Callable[[str], None]) -> tuple[str, float, float, str]:
    """The log text written during a window of ``seconds``, its start and end on the
    server's clock, and the capturing session's id."""
    with logging_everything(target, said) as (conn, tail):
        try:
            mine = own_session(conn)
            start = server_now(conn)
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                time.sleep(min(POLL_S, left))
                tail.read()
            end = server_now(conn)
            time.sleep(POLL_S)  # the last statements' lines are written after they end
            tail.read()
        except TpsbenchError:
            raise
        except Exception as exc:
            if target.is_driver_error(exc):
                raise TpsbenchError(f"capture: lost the connection to the server ({first_line(exc)}); "
                                    "nothing was written") from None
            raise
    return tail.text(), start, end, mine
