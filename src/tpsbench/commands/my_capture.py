"""A live MariaDB/MySQL capture from the general log, kept in its table for the window.

Why the general log: it holds every statement of every client, as sent (prepared
statements' executions with their values filled in), with its thread and the time the
server received it. performance_schema's events_statements_history_long is a ring of
10,000 rows by default, which a busy server overwrites within a second, and
performance_schema itself needs a restart to turn on; the general log and its output
(``log_output``) are set at run time, and put back after the window, also on Ctrl-C and a
lost connection. Rows the window wrote to ``mysql.general_log`` are removed again when the
table was empty before; the capturing session itself is kept out (``sql_log_off``).
A named lock (server-wide, held by the capture's connection, so gone with a killed
tpsbench) keeps a second capture from saving the first one's settings as the originals.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tpsbench.commands.server_settings import capture_running, restore
from tpsbench.core.errors import TpsbenchError, first_line
from tpsbench.core.target import Target, close_quietly, rows_of
from tpsbench.workloads.replay.normalise import tokens
from tpsbench.workloads.replay.pglog import Logged

#: the general log's commands that are statements
STATEMENTS = ("Query", "Execute")
#: the named lock a live capture holds on its connection for its whole run
LOCK = "tpsbench.capture"


def _connect(target: Target) -> Any:
    conn = target.connect()
    target.set_autocommit(conn)
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_off = 1")  # its own reads stay out of the log
    return conn


def _one(conn: Any, sql: str) -> Any:
    return rows_of(conn, sql)[0][0]


def _run(conn: Any, *statements: str) -> None:
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def undo_sql(saved: dict[str, str]) -> str:
    """The statements that put the settings back (said first, in case tpsbench is killed)."""
    return "; ".join(_set(name, value) for name, value in saved.items())


def _set(name: str, value: str) -> str:
    """SET GLOBAL for a saved value: log_output's is a string, general_log's a number."""
    return f"SET GLOBAL {name} = " + (value if value.isdigit() else f"'{value}'")


def take_lock(conn: Any) -> None:
    """Hold :data:`LOCK` on ``conn``, or refuse naming the connection that holds it: named
    locks are server-wide, so two captures of any databases of one server never overlap."""
    if _one(conn, f"SELECT GET_LOCK('{LOCK}', 0)") == 1:
        return
    holder = _one(conn, f"SELECT IS_USED_LOCK('{LOCK}')")  # NULL if it ended meanwhile
    who = rows_of(conn, f"SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = {int(holder or 0)}")
    by = f"connection {holder}" if holder else "connection unknown"
    if who:
        by += f", {who[0][0]}@{who[0][1]}"
    raise capture_running(by)


def record(target: Target, seconds: float, said: Callable[[str], None]) -> tuple[list[Logged], float, float]:
    """The statements the general log received during ``seconds``, and the window's start and end."""
    try:
        conn = _connect(target)
    except TpsbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - the driver's refusal, said in the line
        raise TpsbenchError(f"capture needs the SUPER privilege (sql_log_off, SET GLOBAL): {first_line(exc)}") from None
    try:
        take_lock(conn)
        if not int(_one(conn, "SELECT @@performance_schema")):
            said("capture: performance_schema is OFF on this server (only a restart turns it on), so its statement "
                 "history cannot be read: reading the general log instead")
        saved = {"general_log": str(_one(conn, "SELECT @@GLOBAL.general_log")),
                 "log_output": str(_one(conn, "SELECT @@GLOBAL.log_output"))}
        empty = int(_one(conn, "SELECT COUNT(*) FROM mysql.general_log")) == 0
    except BaseException:
        close_quietly(conn)
        raise
    outputs = {o for o in saved["log_output"].split(",") if o and o != "NONE"} | {"TABLE"}
    if saved["general_log"] == "1":
        said(f"capture: the general log was on already (log_output {saved['log_output']}) and no other capture "
             "is running: it is left on after the window (if a killed capture left it on: SET GLOBAL general_log = 0)")

    def put_back(c: Any) -> None:
        _run(c, *(_set(name, value) for name, value in saved.items()))
        if empty:
            _run(c, "TRUNCATE TABLE mysql.general_log")

    said(f"capture: general log on server-wide meanwhile; if tpsbench is killed, restore with: {undo_sql(saved)}")
    try:
        _run(conn, f"SET GLOBAL log_output = '{','.join(sorted(outputs))}'", "SET GLOBAL general_log = 1")
        # the log's rows are read from before the snapshot of each connection's database, so a
        # thread that changes database meanwhile is known by its Init DB row
        since = float(_one(conn, "SELECT UNIX_TIMESTAMP(NOW(6))"))
        starting = {str(thread): db for thread, db in rows_of(
            conn, "SELECT ID, DB FROM information_schema.PROCESSLIST WHERE DB IS NOT NULL AND ID <> CONNECTION_ID()")}
        start = float(_one(conn, "SELECT UNIX_TIMESTAMP(NOW(6))"))
        time.sleep(seconds)
        end = float(_one(conn, "SELECT UNIX_TIMESTAMP(NOW(6))"))
        rows = rows_of(conn, "SELECT UNIX_TIMESTAMP(event_time), thread_id, command_type, argument "
                             f"FROM mysql.general_log WHERE event_time >= FROM_UNIXTIME({since!r}) "
                             f"AND event_time <= FROM_UNIXTIME({end!r})")
    except Exception as exc:
        if target.is_driver_error(exc):
            raise TpsbenchError(f"capture: lost the connection to the server ({first_line(exc)}); "
                                "nothing was written") from None
        raise
    finally:
        restore(lambda: _connect(target), conn, put_back, undo_sql(saved))
        said("capture: server settings restored")
        close_quietly(conn)
    found = [e for e in logged(rows, starting) if e.end >= start]
    unbound = sum(1 for e in found if "placeholder" in tokens(e.text))
    if unbound:
        said(f"capture: {unbound} execution(s) of prepared statements were logged without their values (the general "
             "log keeps only their text): replay will fail them; capture a client that sends text statements")
    return found, start, end


def logged(rows: list[tuple[Any, ...]], starting: dict[str, str]) -> list[Logged]:
    """The general log's statement rows, each with its thread's database: the one it
    connected to or changed to (``Init DB``) in the rows, else the one ``starting`` gives
    (thread id to database when the window began); "" for none, so that clients of other
    databases and of none are not taken for the captured one's."""
    current = dict(starting)
    found = []
    for when, thread, command, argument in rows:
        text = argument.decode("utf-8", errors="replace") if isinstance(argument, bytes) else str(argument)
        session = str(thread)
        if command == "Connect":  # "user@host on DB using TCP/IP", DB empty when none
            current[session] = text.split(" on ", 1)[1].split(" ", 1)[0] if " on " in text else ""
        elif command == "Init DB":
            current[session] = text
        elif command in STATEMENTS:
            found.append(Logged(session, current.get(session, ""), float(when), 0.0, text))
    return found
