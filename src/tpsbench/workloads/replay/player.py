"""Playing a trace back: each traced session on its own connection, each statement at
its original offset divided by the speed, open loop.

Why open loop: the source's clients sent at their own pace whatever the database did;
a replay that waited for slow statements before starting the next session's would hide
exactly the slowness it is run to find. So a statement's latency counts from when it was
due (its scheduled start), as paced runs do: a session that falls behind shows it.
"""

from __future__ import annotations

import gc
import heapq
import re
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tpsbench.core.cursor import PipelineCursor, SendingCursor
from tpsbench.workloads.replay.trace import Statement, Trace, TraceSession

#: the error messages kept per normalised statement
SAMPLES = 3
#: the resolution of epoll's timeout
EPOLL_S = 0.001
_DOLLAR = re.compile(r"\$(\d+)")


@dataclass
class Played:
    """One session's outcome, statement by statement in trace order: ``started`` when each
    was sent, ``latency_s`` from when each was due to its answer (None: it failed, or is in
    doubt), both appended as they happen, so that another thread can read them while the
    replay runs."""

    session: TraceSession
    latency_s: list[float | None] = field(default_factory=list)
    started: list[float] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    #: the statements sent on a connection lost before their answer came: run or not, unknown
    in_doubt: set[int] = field(default_factory=set)
    #: when each failure came back, or each loss was seen (perf_counter), by statement
    failed_at: dict[int, float] = field(default_factory=dict)


def bound(st: Statement) -> tuple[str, list[Any]]:
    """The statement as a target's counting cursor takes it: a statement without parameters
    as sent (no ``%`` escaping: it goes as a simple query); ``$n`` placeholders become
    ``%s`` markers, with the values in the order they occur (``$1`` twice: its value twice)."""
    if not st.params:
        return st.text, []
    values: list[Any] = []

    def marker(m: re.Match[str]) -> str:
        values.append(st.params[int(m.group(1)) - 1] if st.params and int(m.group(1)) <= len(st.params) else None)
        return "%s"

    query = _DOLLAR.sub(marker, st.text.replace("%", "%%"))
    return query, values


class Player:
    """Runs every session of a trace at once, each on its thread and connection."""

    def __init__(self, trace: Trace, connect: Callable[[], Any], cursor_of: Callable[[Any], Any],
                 is_error: Callable[[BaseException], bool], speed: float = 1.0, stop_on_error: bool = False) -> None:
        self.trace = trace
        self.connect = connect
        self.cursor_of = cursor_of
        self.is_error = is_error
        self.speed = speed
        self.stop_on_error = stop_on_error
        self.stop = threading.Event()
        self.first_error: str | None = None
        self.start = 0.0
        #: every session's outcome so far: what a Ctrl-C leaves is still there to keep
        self.played: list[Played] = []
        #: called with the common start (perf_counter) once every session is connected
        self.on_start: Callable[[float], None] | None = None

    def _begin(self) -> None:
        gc.freeze()  # the trace and what was made of it, never garbage: collections leave them be (play() thaws them)
        self.start = time.perf_counter() + 0.2
        if self.on_start is not None:
            self.on_start(self.start)

    def play(self) -> list[Played]:
        """Connect every session, then play them all from one start; Ctrl-C stops them.
        All on one thread where the cursors can: pipelined (tpsbench.workloads.replay.pipelined),
        else sending one statement at a time (:class:`Multiplexed`); else a thread a session."""
        connections = []
        try:
            for _ in self.trace.sessions:
                connections.append(self.connect())
            played = self.played = [Played(s) for s in self.trace.sessions]
            cursors = [self.cursor_of(c) for c in connections]
            if all(isinstance(c, PipelineCursor) for c in cursors) and not self.multiple_commands():
                from tpsbench.workloads.replay.pipelined import Pipelined

                shared: Multiplexed = Pipelined(self, played, cursors)
                self._begin()
                shared.run()
                return played
            if all(isinstance(c, SendingCursor) for c in cursors):
                self._begin()
                Multiplexed(self, played, cursors).run()
                return played
            threads = [threading.Thread(target=self._session, args=(p, c), daemon=True, name=f"replay-{p.session.id}")
                       for p, c in zip(played, connections)]
            self._begin()
            for t in threads:
                t.start()
            try:
                for t in threads:
                    while t.is_alive():
                        t.join(0.5)
            except BaseException:
                self.stop.set()
                for t in threads:
                    t.join(5)
                raise
            return played
        finally:
            gc.unfreeze()
            for conn in connections:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - a connection the server dropped closes with an error
                    pass

    def multiple_commands(self) -> bool:
        """Whether a statement without parameters may hold several (a semicolon before its
        end): those go only as a simple query, which a pipeline cannot send; the replay
        then sends one at a time."""
        return any(";" in st.text.rstrip().rstrip(";") for s in self.trace.sessions for st in s.statements
                   if not st.params)

    def failed(self, played: Played, i: int, exc: Exception) -> None:
        """Count a statement's failure (a driver's error), or raise what is not one."""
        if not self.is_error(exc):
            raise exc
        played.errors[i] = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        played.failed_at[i] = time.perf_counter()
        played.latency_s.append(None)  # last: a reader on another thread (live intervals) finds the rest set
        if self.stop_on_error:
            self.first_error = self.first_error or played.errors[i]
            self.stop.set()

    def lost(self, played: Played, i: int) -> None:
        """Count a statement sent on a connection lost before its answer came in doubt: the
        server may have run it or not. Not an error, so ``stop_on_error`` goes on."""
        played.in_doubt.add(i)
        played.failed_at[i] = time.perf_counter()
        played.latency_s.append(None)  # last, as in failed()

    def _session(self, played: Played, conn: Any) -> None:
        cursor = self.cursor_of(conn)
        run = cursor.execute
        statements = [bound(st) for st in played.session.statements]
        due_at = [self.start + st.offset / self.speed for st in played.session.statements]
        for i, (query, params) in enumerate(statements):
            if self.stop.is_set():
                return
            due = due_at[i]
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            began = time.perf_counter()
            played.started.append(began)
            try:
                run(query, params)
            except Exception as exc:  # noqa: BLE001 - failed() counts a driver's error, raises anything else
                self.failed(played, i, exc)
                continue
            played.latency_s.append(time.perf_counter() - due)


class Multiplexed:
    """Every session on one thread, where the target's cursor can send a statement and
    read its answer later: no thread per session contending for the interpreter, so the
    replay keeps up with a client written in C (pgbench) on a machine the server shares.
    Each connection's socket is watched (epoll) from start to end: watching it anew per
    statement cost two system calls each."""

    def __init__(self, player: Player, played: list[Played], cursors: list[SendingCursor]) -> None:
        self.player = player
        self.played = played
        self.cursors = cursors
        self.statements = self.encode_all(played, cursors)
        self.offsets = [[st.offset / player.speed for st in p.session.statements] for p in played]
        self.due: list[list[float]] = []
        self.next = [0] * len(played)
        self.waiting: list[tuple[float, int]] = []
        self.poll = select.epoll()
        self.session_of = {c.fileno(): i for i, c in enumerate(cursors)}
        self.watched = [False] * len(cursors)
        self.busy = [False] * len(cursors)
        self.in_flight = 0

    @staticmethod
    def encode_all(played: list[Played], cursors: list[Any]) -> list[list[Any]]:
        """Every session's statements as :meth:`send` takes them, made before the start."""
        return [[bound(st) for st in p.session.statements] for p in played]

    def schedule(self) -> None:
        """Each statement's due time from the player's start, and each session's first queued."""
        start = self.player.start
        self.due = [[start + offset for offset in offsets] for offsets in self.offsets]
        self.waiting[:] = [(d[0], i) for i, d in enumerate(self.due) if d]
        heapq.heapify(self.waiting)

    def run(self) -> None:
        """From the player's start (set by now) until every statement is answered or stop is set."""
        self.schedule()
        waiting, stop = self.waiting, self.player.stop
        try:
            while (waiting or self.in_flight) and not stop.is_set():
                now = time.perf_counter()
                while waiting and waiting[0][0] <= now:
                    self.send(heapq.heappop(waiting)[1])
                self.handed()
                timeout = max(0.0, waiting[0][0] - time.perf_counter()) if waiting else None
                if not self.in_flight:
                    time.sleep(timeout or 0)
                    continue
                for fd, _ in self.ready(timeout):
                    self.answer(self.session_of[fd], fd)
        finally:
            self.poll.close()

    def handed(self) -> None:
        """Every statement due so far has been handed to its cursor (each has sent its own)."""

    def ready(self, timeout: float | None) -> list[tuple[int, int]]:
        """The sockets with answers, waiting for them at most ``timeout``. epoll waits whole
        milliseconds (rounded up), and a statement of a busy client is due within a tenth
        of one: a wait shorter than that sleeps (nanosleep) and then looks without waiting,
        so that the next statement goes on time rather than up to a millisecond late."""
        if timeout is None or timeout >= EPOLL_S:
            return self.poll.poll(-1 if timeout is None else timeout - EPOLL_S / 2)
        found = self.poll.poll(0)
        if not found:
            time.sleep(timeout)
            found = self.poll.poll(0)
        return found

    def answer(self, i: int, fd: int) -> None:
        """Read session ``i``'s answer; a socket readable while nothing was asked (the
        server ended the connection) is no longer watched: its next statement fails."""
        if not self.busy[i]:
            self.poll.unregister(fd)
            self.watched[i] = False
            return
        try:
            if not self.cursors[i].receive():
                return
        except Exception as exc:  # noqa: BLE001 - failed() counts a driver's error, raises anything else
            self.idle(i)
            self.player.failed(self.played[i], self.next[i], exc)
            self.advance(i)
            return
        self.idle(i)
        self.finish(i)

    def idle(self, i: int) -> None:
        self.busy[i] = False
        self.in_flight -= 1

    def send(self, i: int) -> None:
        query, params = self.statements[i][self.next[i]]
        cursor = self.cursors[i]
        self.played[i].started.append(time.perf_counter())
        try:
            if not self.watched[i]:
                self.poll.register(cursor.fileno(), select.EPOLLIN)
                self.watched[i] = True
            answered = cursor.send_encoded(cursor.encode(query, params))
        except Exception as exc:  # noqa: BLE001 - failed() counts a driver's error, raises anything else
            self.player.failed(self.played[i], self.next[i], exc)
            self.advance(i)
            return
        if answered:
            self.finish(i)
        else:
            self.busy[i] = True
            self.in_flight += 1

    def finish(self, i: int) -> None:
        self.played[i].latency_s.append(time.perf_counter() - self.due[i][self.next[i]])
        self.advance(i)

    def advance(self, i: int) -> None:
        """On to the session's next statement, queued at its due time."""
        self.next[i] += 1
        if self.next[i] < len(self.due[i]):
            heapq.heappush(self.waiting, (self.due[i][self.next[i]], i))
