"""``tpsbench replay``: a trace's sessions re-issued against a database (workloads/replay).

Refused before the first statement: a bad speed, a trace that cannot be read (empty,
truncated, of a newer format), a target of another kind of database than the source, and
a target missing a table the trace uses. Statements that fail on the target are counted
and sampled per normalised statement; they stop the replay only with ``stop_on_error``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target
from tpsbench.targets import open_target
from tpsbench.workloads.replay.player import SAMPLES, Played, Player
from tpsbench.workloads.replay.tables import refuse_missing
from tpsbench.workloads.replay.trace import Trace, read_trace

#: the fastest a replay may go (a gap of one second becomes a millisecond)
MAX_SPEED = 1000.0


@dataclass
class StatementOutcome:
    """One normalised statement: how often traced, replayed (sent), failed, left in doubt
    (sent, its answer never came: a connection lost, a stop), and its latencies."""

    text: str
    traced: int = 0
    replayed: int = 0
    errors: int = 0
    in_doubt: int = 0
    samples: list[str] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)

    def percentile_ms(self, q: float) -> float | None:
        return float(np.percentile(self.latencies_s, q)) * 1000 if self.latencies_s else None


@dataclass
class ReplayResult:
    """What a replay did, against what the trace holds."""

    statements: list[StatementOutcome]
    traced_rate: float
    replayed_rate: float
    elapsed_s: float
    stopped_by: str | None

    @property
    def errors(self) -> int:
        return sum(s.errors for s in self.statements)

    @property
    def in_doubt(self) -> int:
        return sum(s.in_doubt for s in self.statements)


def check_speed(speed: float) -> float:
    """--speed: a finite factor above 0 and at most :data:`MAX_SPEED`."""
    if not (math.isfinite(speed) and 0 < speed <= MAX_SPEED):
        raise TpsbenchError(f"--speed must be more than 0 and at most {MAX_SPEED:g} (2 halves every gap), "
                            f"got {speed:g}")
    return speed


def open_replay(path: str, url: str | None, speed: float = 1.0,
                stop_on_error: bool = False) -> tuple[Trace, Target, Player]:
    """The trace read and the target checked against it (see the module docstring), and
    the player that will send it: everything refusable is refused here, before anything runs."""
    check_speed(speed)
    trace = read_trace(Path(path))
    target = open_target(url)
    if target.dialect != trace.dialect:
        raise TpsbenchError(f"{path} was captured on {trace.dialect}; the target is {target.dialect}: "
                            "a trace replays on the same kind of database")
    refuse_missing(target, list(trace.summary.get("tables", [])), "nothing replayed")

    def connect() -> Any:
        conn = target.connect()
        target.set_autocommit(conn)  # the trace carries its own BEGIN and COMMIT
        return conn

    # rows dropped unread, one layer below DB-API where the target has one: a replay must
    # keep up with clients written in C (libpq's simple queries for statements with literals)
    # (MariaDB: DB-API's cursor, a thread per session: mysqlclient's sending cursors are not
    # yet fit for statements that arrive as text with their values in them)
    kind = "fast" if target.dialect == "postgresql" else "dbapi"
    player = Player(trace, connect, lambda conn: target.counting_cursor(conn, kind), target.is_driver_error,
                    speed, stop_on_error)
    return trace, target, player


def replay(path: str, url: str | None, speed: float = 1.0, stop_on_error: bool = False) -> ReplayResult:
    """Replay the trace in ``path`` against ``url`` at ``speed``; see the module docstring."""
    trace, _, player = open_replay(path, url, speed, stop_on_error)
    played = player.play()
    return outcome(trace, played, speed, player.start, player.first_error)


def outcome(trace: Trace, played: list[Played], speed: float, start: float, stopped_by: str | None) -> ReplayResult:
    """Counts and latencies per normalised statement, and the traced and achieved rates:
    statements per second from the first statement's start to the last one's end (a
    replay whose sessions send ahead of their answers is done when the last is answered)."""
    found = {text: StatementOutcome(text) for text in dict.fromkeys(t for s in trace.shapes() for t in s)}
    starts: list[float] = []
    last = 0.0
    for p, names in zip(played, trace.shapes()):
        starts += p.started
        if p.latency_s and p.latency_s[-1] is not None:  # in order: the session's last answer
            last = max(last, start + p.session.statements[len(p.latency_s) - 1].offset / speed + p.latency_s[-1])
        last = max(last, *p.failed_at.values()) if p.failed_at else last  # a failure ends when its error came
        sent, answered = len(p.started), len(p.latency_s)
        for text, n in Counter(names).items():
            found[text].traced += n
        for text, n in Counter(names[:sent]).items():
            found[text].replayed += n
        for text in names[answered:sent]:  # no answer: stopped first
            found[text].in_doubt += 1
        for i, (text, latency) in enumerate(zip(names, p.latency_s)):
            if latency is not None:
                found[text].latencies_s.append(latency)
            elif i in p.in_doubt:  # its connection lost before its answer
                found[text].in_doubt += 1
            else:
                shape = found[text]
                shape.errors += 1
                if len(shape.samples) < SAMPLES and p.errors[i] not in shape.samples:
                    shape.samples.append(p.errors[i])
    offsets = [st.offset for s in trace.sessions for st in s.statements]
    ends = max(st.offset + st.duration_ms / 1000 for s in trace.sessions for st in s.statements)
    traced_span = (ends - min(offsets)) / speed
    replayed_span = max(last, max(starts)) - min(starts) if starts else 0.0
    total = sum(len(p.started) for p in played)
    return ReplayResult(sorted(found.values(), key=lambda s: -s.traced),
                        trace.statements / traced_span if traced_span > 0 else 0.0,
                        total / replayed_span if replayed_span > 0 else 0.0,
                        (max(last, max(starts)) - start) if starts else 0.0, stopped_by)
