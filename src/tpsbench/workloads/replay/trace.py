"""The trace file: what ``tpsbench capture`` writes and ``tpsbench replay`` reads.

JSON Lines, so that a trace of millions of statements streams and a cut-off file is
noticed: a header line (format name and version, source dialect, database name, never
a URL), one line per session with its statements in order, a summary line, and an end
line that counts what came before it. Each statement is ``[offset, duration_ms, text,
params]``: its start in seconds from the capture's start, its duration on the source,
its text as sent (secrets masked), and its bound parameters (null when it had none).
docs/replay.md describes the format.
"""

from __future__ import annotations

import gc
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.workloads.replay.normalise import Value, mask_secrets, shapes, transaction_control

FORMAT = "tpsbench-trace"
VERSION = 1


@dataclass(slots=True)
class Statement:
    """One statement as the source ran it (slots: a trace holds millions)."""

    offset: float
    duration_ms: float
    text: str
    params: list[Value] | None = None


@dataclass
class TraceSession:
    """One client connection's statements, in the order it sent them."""

    id: str
    statements: list[Statement] = field(default_factory=list)


@dataclass
class Trace:
    """A capture: its sessions and where and when it came from."""

    dialect: str
    database: str
    started: float
    window_s: float
    sessions: list[TraceSession]
    summary: dict[str, Any] = field(default_factory=dict)
    _shapes: list[list[str]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def statements(self) -> int:
        return sum(len(s.statements) for s in self.sessions)

    def shapes(self) -> list[list[str]]:
        """Each session's statements' shapes (normalise.shapes), worked out on the first
        call only: a replay's intervals and its outcome both group by them."""
        if self._shapes is None:
            flat = shapes(st.text for s in self.sessions for st in s.statements)
            self._shapes, at = [], 0
            for s in self.sessions:
                self._shapes.append(flat[at:at + len(s.statements)])
                at += len(s.statements)
        return self._shapes


def whole_transactions(statements: list[Statement]) -> tuple[list[Statement], int]:
    """The session's statements without a transaction cut by the capture window: those
    before its first transaction end whose begin came before the window, and those from
    its last begin that did not end in it. Replaying half a transaction would leave the
    replica in a state the source never had. Returns them and how many were left out."""
    first = 0
    for i, st in enumerate(statements):
        control = transaction_control(st.text)
        if control == "begin":
            break
        if control == "end":
            first = i + 1
            break
    last = len(statements)
    for i in range(len(statements) - 1, first - 1, -1):
        control = transaction_control(statements[i].text)
        if control == "end":
            break
        if control == "begin":
            last = i
            break
    kept = statements[first:last]
    return kept, len(statements) - len(kept)


def write_trace(trace: Trace, path: Path) -> None:
    """Write ``trace`` to ``path`` (through a temporary file, so a reader never sees half)."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8") as out:
        header = {"format": FORMAT, "version": VERSION, "dialect": trace.dialect, "database": trace.database,
                  "started": trace.started, "window_s": trace.window_s}
        out.write(json.dumps(header) + "\n")
        for session in trace.sessions:
            rows = [[round(s.offset, 6), round(s.duration_ms, 3), mask_secrets(s.text), s.params]
                    for s in session.statements]
            out.write(json.dumps({"session": session.id, "statements": rows}) + "\n")
        out.write(json.dumps({"summary": trace.summary}) + "\n")
        out.write(json.dumps({"end": {"sessions": len(trace.sessions), "statements": trace.statements}}) + "\n")
    partial.replace(path)


def read_trace(path: Path) -> Trace:
    """The trace in ``path``, or a one-line error: missing, empty, not a trace, of a newer
    format, or truncated (no end line, or fewer sessions or statements than it counts)."""
    if not path.is_file():
        raise TpsbenchError(f"no trace file {path}")
    collecting = gc.isenabled()
    gc.disable()  # a million statements read make no garbage, but would set off collections that visit them all
    try:
        return _read(path)
    finally:
        if collecting:
            gc.enable()


def _read(path: Path) -> Trace:
    with path.open(encoding="utf-8", errors="replace") as lines:
        first = lines.readline()
        if not first.strip():
            raise TpsbenchError(f"{path} is empty: not a trace")
        header = _json(first, path, "its first line is not a trace header")
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise TpsbenchError(f"{path} is not a tpsbench trace (its first line names no format {FORMAT!r})")
        version = header.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise TpsbenchError(f"{path} is a trace of format version {version}; this tpsbench reads version "
                                f"{VERSION} and older: upgrade tpsbench")
        trace = Trace(str(header.get("dialect")), str(header.get("database")), float(header.get("started", 0)),
                      float(header.get("window_s", 0)), [])
        end = None
        for number, line in enumerate(lines, start=2):
            if end is not None:
                raise TpsbenchError(f"{path}: line {number} comes after the end line: not one trace")
            row = _json(line, path, f"line {number} is cut off or not JSON (a truncated trace?)")
            if "session" in row:
                trace.sessions.append(_session(row, path, number))
            elif "summary" in row:
                trace.summary = row["summary"]
            elif "end" in row:
                end = row["end"]
    if end is None:
        raise TpsbenchError(f"{path} is truncated: it has no end line (the capture was cut off?)")
    if end.get("sessions") != len(trace.sessions) or end.get("statements") != trace.statements:
        raise TpsbenchError(f"{path} is truncated: its end line counts {end.get('sessions')} sessions and "
                            f"{end.get('statements')} statements, the file holds {len(trace.sessions)} and "
                            f"{trace.statements}")
    if trace.statements == 0:
        raise TpsbenchError(f"{path} holds no statements: nothing to replay")
    return trace


def _json(line: str, path: Path, why: str) -> Any:
    try:
        row = json.loads(line)
    except ValueError:
        raise TpsbenchError(f"{path}: {why}") from None
    if not isinstance(row, dict):
        raise TpsbenchError(f"{path}: {why}")
    return row


def _session(row: dict[str, Any], path: Path, number: int) -> TraceSession:
    session = TraceSession(str(row["session"]))
    try:
        for offset, duration, text, params in row["statements"]:
            if not (isinstance(offset, (int, float)) and math.isfinite(offset) and offset >= 0):
                raise ValueError(offset)
            session.statements.append(Statement(float(offset), float(duration), str(text), params))
    except (TypeError, ValueError, KeyError):
        raise TpsbenchError(f"{path}: line {number} holds a statement that is not "
                            "[offset >= 0, duration_ms, text, params]") from None
    return session
