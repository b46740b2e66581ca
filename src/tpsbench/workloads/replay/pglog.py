"""PostgreSQL's server log, read back as statements: the stderr format with the prefix
``tpsbench capture`` sets for its window, and csvlog files.

Both carry, per statement logged by ``log_min_duration_statement = 0``, the session
(``%c``), the time the line was written (the statement's end), its duration, its text and,
for the extended protocol, its bound parameters on a DETAIL line
(``parameters: $1 = '42', $2 = NULL``). Parse, bind and the unnamed portal's other steps
are logged too; only ``statement:`` and ``execute`` lines are statements.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tpsbench.workloads.replay.normalise import Value

#: log_line_prefix during a capture: a marker, epoch with milliseconds, session, database
PREFIX = "tpsbench|%n|%c|%d|"
_PREFIXED = re.compile(r"^tpsbench\|(?P<time>\d+\.\d+)\|(?P<session>[^|]*)\|(?P<db>[^|]*)\|(?P<rest>.*)$")
_LEVEL = re.compile(r"^(?P<level>[A-Z]+):  (?P<message>.*)$", re.DOTALL)
_STATEMENT = re.compile(r"^duration: (?P<ms>[\d.]+) ms  (?:statement|execute [^:]*): (?P<text>.*)$", re.DOTALL)
_PARAM = re.compile(r"\$(\d+) = (NULL|'(?:[^']|'')*')")


@dataclass
class Logged:
    """A statement as the log tells it."""

    session: str
    database: str
    end: float
    duration_ms: float
    text: str
    params: list[Value] | None = None


def parameters(detail: str) -> list[Value] | None:
    """The bound values of a ``parameters: $1 = '...', ...`` DETAIL, in $n order."""
    if not detail.startswith("parameters:"):
        return None
    found = {int(n): (None if v == "NULL" else v[1:-1].replace("''", "'")) for n, v in _PARAM.findall(detail)}
    return [found.get(i) for i in range(1, max(found, default=0) + 1)]


def read_stderr(lines: Iterable[str]) -> Iterator[Logged]:
    """Statements of a stderr log written with :data:`PREFIX`; other lines are skipped."""
    pending: Logged | None = None
    entry: list[str] = []
    head: re.Match[str] | None = None

    def finish() -> Logged | None:
        nonlocal pending
        if head is None:
            return None
        level = _LEVEL.match("\n".join(entry))
        if level is None:
            return None
        message = level.group("message")
        if level.group("level") == "DETAIL" and pending is not None and pending.params is None:
            pending.params = parameters(message)
            return None
        found = _STATEMENT.match(message) if level.group("level") == "LOG" else None
        if found is None:
            return None
        done, pending = pending, Logged(head.group("session"), head.group("db"), float(head.group("time")),
                                        float(found.group("ms")), found.group("text"))
        return done

    for raw in lines:
        line = raw.rstrip("\n")
        if line.startswith("\t") and head is not None:
            entry.append(line[1:])
            continue
        if (done := finish()) is not None:
            yield done
        head = _PREFIXED.match(line)
        entry = [head.group("rest")] if head else []
    if (done := finish()) is not None:
        yield done
    if pending is not None:
        yield pending


#: csvlog's columns (PostgreSQL 13 to 15; 16 adds more at the end, which are ignored)
_CSV_TIME, _CSV_DB, _CSV_SESSION, _CSV_LEVEL, _CSV_MESSAGE, _CSV_DETAIL = 0, 2, 5, 11, 13, 14


def read_csvlog(text: Iterable[str]) -> Iterator[Logged]:
    """Statements of a csvlog file (its DETAIL is a column of the same row)."""
    for row in csv.reader(text):
        if len(row) <= _CSV_DETAIL or row[_CSV_LEVEL] != "LOG":
            continue
        found = _STATEMENT.match(row[_CSV_MESSAGE])
        if found is None:
            continue
        yield Logged(row[_CSV_SESSION], row[_CSV_DB], _csv_time(row[_CSV_TIME]), float(found.group("ms")),
                     found.group("text"), parameters(row[_CSV_DETAIL]))


def _csv_time(text: str) -> float:
    """csvlog's "2024-05-01 12:00:00.123 UTC" as epoch seconds."""
    from datetime import datetime

    stamp, _, zone = text.rpartition(" ")
    when = datetime.fromisoformat(stamp)
    if zone.upper() in ("UTC", "GMT") or when.tzinfo is None:
        from datetime import timezone

        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()
