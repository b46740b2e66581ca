"""Every session on one thread, its statements sent in libpq's pipeline mode: a session
behind its schedule sends its next statements without waiting for the answers before.

Why: the statements of a traced session are all known in advance. Sent one at a time,
each waits a round trip and a wake-up of client and server, and a client sharing its
cores with the server (two of them, a client written in C as the source) falls behind
by that much. Queued on the connection in the session's order, they run as they would
one by one, with the same results; the server runs them back to back. Latency still
counts from each statement's scheduled start to its own answer.
"""

from __future__ import annotations

import contextlib
import heapq
import select
import time
from typing import Any

from tpsbench.core.cursor import IN_DOUBT, PipelineCursor
from tpsbench.workloads.replay.player import Multiplexed, Played, Player, bound

#: the most statements of one session sent and not yet answered
DEPTH = 16


class Pipelined(Multiplexed):
    """:class:`Multiplexed` where a statement goes when due, whether or not the session's
    previous ones are answered (at most :data:`DEPTH` out): answers are read in order."""

    def __init__(self, player: Player, played: list[Played], cursors: list[PipelineCursor]) -> None:
        super().__init__(player, played, cursors)  # type: ignore[arg-type]  # fileno() is what it uses
        self.pipes = cursors
        self.fds = [c.fileno() for c in cursors]  # kept: a lost connection's socket is no longer asked
        for cursor in cursors:
            cursor.pipeline()
        self.sent = [0] * len(played)
        self.done = [0] * len(played)
        self.out = [0] * len(played)
        self.queued = [bool(p.session.statements) for p in played]
        #: the sessions sent to and not yet flushed
        self.unflushed: set[int] = set()

    @staticmethod
    def encode_all(played: list[Played], cursors: list[Any]) -> list[list[Any]]:
        """Encoded ahead (no server involved); what cannot be (a NUL in a text value) is
        kept as its error, which the statement fails with when due."""
        encoded: list[list[Any]] = []
        for p, cursor in zip(played, cursors):
            pre = cursor.pre_encode
            session: list[Any] = []
            for st in p.session.statements:
                try:
                    session.append(pre(st.text) if not st.params else pre(*bound(st)))
                except Exception as exc:  # noqa: BLE001 - failed() counts a driver's error, raises anything else
                    session.append(exc)
            encoded.append(session)
        return encoded

    def send(self, i: int) -> None:
        """Push session ``i``'s statements that are due, in order, while fewer than
        :data:`DEPTH` are out: one call for a burst, not a heap entry each."""
        self.queued[i] = False
        k = first = self.sent[i]
        encoded, due = self.statements[i], self.due[i]
        last = min(len(due), k + DEPTH - self.out[i])
        push, started, clock = self.pipes[i].push, self.played[i].started, time.perf_counter
        started.append(clock())
        try:
            if not self.watched[i]:
                self.poll.register(self.fds[i], select.EPOLLIN)
                self.watched[i] = True
            while True:
                statement = encoded[k]
                if isinstance(statement, Exception):
                    raise statement
                push(statement)
                k += 1
                if k == last:
                    break
                now = clock()
                if due[k] > now:
                    break
                started.append(now)
        except Exception as exc:  # noqa: BLE001 - failed() counts a driver's error, raises anything else
            self._pushed(i, k - first)
            self.sent[i] = k + 1
            with contextlib.suppress(Exception):  # those before it go now: drain() waits for their answers
                self.pipes[i].flush()
            self.drain(i)  # the answers before it first: a session's outcomes are kept in order
            self.done[i] = k + 1
            self.player.failed(self.played[i], k, exc)
            self.follow(i)
            return
        self._pushed(i, k - first)
        self.follow(i)

    def _pushed(self, i: int, n: int) -> None:
        """``n`` more of session ``i``'s statements out, to be flushed."""
        if n:
            self.sent[i] += n
            self.out[i] += n
            self.in_flight += n
            self.unflushed.add(i)

    def handed(self) -> None:
        """Flush each session sent to since the last time: its due statements in one write.
        One that cannot (its connection lost) has its queued statements counted in doubt now."""
        for i in self.unflushed:
            try:
                self.pipes[i].flush()
            except Exception:  # noqa: BLE001 - collect() gives what the lost connection had queued in doubt
                self.drain(i)
        self.unflushed.clear()

    def follow(self, i: int) -> None:
        """The session's next statement queued at its due time, unless already queued,
        all sent, or :data:`DEPTH` out."""
        k = self.sent[i]
        if not self.queued[i] and k < len(self.due[i]) and self.out[i] < DEPTH:
            heapq.heappush(self.waiting, (self.due[i][k], i))
            self.queued[i] = True

    def drain(self, i: int) -> None:
        """Wait for every answer session ``i`` has out (a statement that cannot go waits
        for those before it); a lost connection leaves them in doubt at once."""
        fd = self.fds[i]
        while self.out[i] and not self.player.stop.is_set():
            self.answer(i, fd)
            if self.out[i]:
                select.select([fd], [], [], 1.0)

    def answer(self, i: int, fd: int) -> None:
        """Read what session ``i``'s socket has: each statement answered, in order; a
        socket readable with nothing out (the server ended the connection) is no longer
        watched: the next statement fails."""
        if not self.out[i]:
            if self.watched[i]:
                self.watched[i] = False
                with contextlib.suppress(OSError):  # libpq closed it: epoll forgot it then
                    self.poll.unregister(fd)
            return
        outcomes = self.pipes[i].collect()
        if not outcomes:
            return
        now = time.perf_counter()
        played, due = self.played[i], self.due[i]
        k = self.done[i]
        for failure in outcomes:
            if failure is None:
                played.latency_s.append(now - due[k])
            elif failure is IN_DOUBT:
                self.player.lost(played, k)
            else:
                self.player.failed(played, k, failure)
            k += 1
        self.done[i] = k
        self.out[i] -= len(outcomes)
        self.in_flight -= len(outcomes)
        self.follow(i)
