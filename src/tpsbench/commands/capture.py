"""``tpsbench capture``: a database's statement traffic as a trace file (workloads/replay).

Everything is checked before the server is touched: the duration, the output file (a new
file or an earlier trace, never anything else) and, for a live capture, the user's
consent to the server-wide logging settings that pg_capture sets and restores.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import parse_duration
from tpsbench.targets import open_target
from tpsbench.workloads.replay.pglog import Logged, read_csvlog, read_stderr
from tpsbench.workloads.replay.summary import summarise
from tpsbench.workloads.replay.trace import FORMAT, Statement, Trace, TraceSession, whole_transactions, write_trace

Said = Callable[[str], None]


def check_output(path: Path) -> None:
    """A trace goes to a new file, or replaces an earlier trace; nothing else is overwritten."""
    if not path.parent.is_dir():
        raise TpsbenchError(f"cannot write {path}: no folder {path.parent}")
    if path.exists():
        with path.open("rb") as existing:
            head = existing.read(200)
        if f'"format": "{FORMAT}"'.encode() not in head:
            raise TpsbenchError(f"{path} exists and is not a tpsbench trace: not overwritten")


def capture(url: str | None, duration: str | None, output: str, log: str | None = None,
            allow_settings: bool = False, said: Said = print) -> Trace:
    """Capture for ``duration`` from the live server at ``url``, or read ``log``; write the trace."""
    path = Path(output)
    check_output(path)
    if log is not None:
        if duration is not None or allow_settings:
            raise TpsbenchError("--log reads an existing log: --duration and --allow-settings are for a live capture")
        return _from_log(Path(log), url, path, said)
    if duration is None:
        raise TpsbenchError("capture needs --duration (how long to record), or --log FILE to read an existing log")
    seconds = parse_duration(duration)
    if not (math.isfinite(seconds) and seconds > 0):
        raise TpsbenchError(f"--duration must be more than 0, got {duration!r}")
    target = open_target(url)
    if target.dialect not in ("postgresql", "mysql"):
        raise TpsbenchError(f"capture from {target.dialect} is not supported: PostgreSQL and MariaDB/MySQL only")
    if not allow_settings:
        raise TpsbenchError("a live capture turns on statement logging server-wide for its window (PostgreSQL: "
                            "log_min_duration_statement = 0; MariaDB: the general log) and restores it: agree with "
                            "--allow-settings, or read a log with --log")
    if target.dialect == "mysql":
        from tpsbench.commands.my_capture import record as record_mysql

        found, start, end = record_mysql(target, seconds, said)
        mysql_trace = build_trace([e for e in found if e.database == target.database], "mysql", target.database,
                                  start, end, said)
        write_trace(mysql_trace, path)
        return mysql_trace
    from tpsbench.commands.pg_capture import record

    text, start, end, mine = record(target, seconds, said)
    logged = [e for e in read_stderr(text.splitlines()) if e.session != mine and e.database == target.database]
    trace = build_trace(logged, "postgresql", target.database, start, end, said)
    write_trace(trace, path)
    return trace


def _from_log(log: Path, url: str | None, path: Path, said: Said) -> Trace:
    if not log.is_file():
        raise TpsbenchError(f"no log file {log}")
    database = open_target(url).database if url else ""
    with log.open(encoding="utf-8", errors="replace") as lines:
        reader = read_csvlog if log.suffix == ".csv" else read_stderr
        logged = [e for e in reader(lines) if not database or e.database == database]
    if not logged:
        raise TpsbenchError(f"{log} holds no statement logged with its duration for database {database!r} (needs "
                            f"log_min_duration_statement = 0; a stderr log needs log_line_prefix 'tpsbench|%n|%c|%d|', "
                            "or give a csvlog .csv file)")
    start = min(e.end - e.duration_ms / 1000 for e in logged)
    end = max(e.end for e in logged)
    trace = build_trace(logged, "postgresql", database, start, end, said)
    write_trace(trace, path)
    return trace


def build_trace(logged: list[Logged], dialect: str, database: str, start: float, end: float, said: Said) -> Trace:
    """The trace of the statements that ended within [start, end], per session in log order,
    cut to whole transactions (trace.whole_transactions)."""
    per_session: dict[str, list[Statement]] = {}
    for e in logged:
        if start <= e.end <= end:
            began = max(e.end - e.duration_ms / 1000, start)
            per_session.setdefault(e.session, []).append(Statement(began - start, e.duration_ms, e.text, e.params))
    sessions, cut = [], 0
    for sid, statements in per_session.items():
        kept, dropped = whole_transactions(statements)
        cut += dropped
        if kept:
            sessions.append(TraceSession(sid, kept))
    sessions.sort(key=lambda s: s.statements[0].offset)
    trace = Trace(dialect, database, start, end - start, sessions)
    if not trace.statements:
        raise TpsbenchError(f"no statement on database {database!r} was logged in the window: nothing written")
    if cut:
        said(f"capture: left out {cut} statement(s) of transactions the window cut in two")
    trace.summary = summarise(trace)
    return trace


def started_text(trace: Trace) -> str:
    """When the capture started, for the summary's first line."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(trace.started))
