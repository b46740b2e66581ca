"""One user on the worker's shared thread (tpsbench.engine.multiplex): what the thread
keeps of it between two results, and how it hands it back."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from tpsbench.core.cursor import Statement
from tpsbench.core.session import Session


class Hosted:
    """One user while the shared thread runs it: its session and transaction in flight."""

    __slots__ = ("session", "cur", "fd", "armed", "back", "lost", "name", "inputs", "ahead", "steps", "encoded",
                 "retries", "t0", "due")

    def __init__(self, session: Session, back: Callable[[Hosted], None]) -> None:
        self.session = session
        self.cur: Any = session.transaction_cursor
        self.fd = -1
        #: whether epoll watches the socket (it stops watching one that spoke out of turn)
        self.armed = False
        #: called once the user is handed back (Multiplexer.adopt), on whichever thread hands it back
        self.back = back
        #: why the user came back before the step's end: its connection's error
        self.lost: BaseException | None = None
        self.name = ""
        self.inputs: object = None
        #: the next transactions, drawn a few at a time (draw_ahead): name, inputs, the
        #: transaction begun (None for a one-statement session) and its first statement
        #: encoded (None: begin it in turn)
        self.ahead: deque[tuple[str, object, Generator[Statement, None, bool] | None, Any]] = deque()
        #: the transaction at hand (Session.transaction), resumed statement by statement;
        #: before begin(), as drawn ahead, with its first statement ``encoded``. None for
        #: a session whose transactions are one statement each (Session.one_statement):
        #: its call() and answered() take the generator's place
        self.steps: Generator[Statement, None, bool] | None = None
        self.encoded: Any = None
        self.retries = 0
        self.t0 = 0
        self.due = 0  # when the wait at hand ends by its draw (perf_counter ns; 0: no keying time)


def hand_back(slot: Hosted) -> None:
    """Call the slot's ``back`` once (the end of a step releases a user that may be handed
    back already)."""
    back, slot.back = slot.back, _handed_back
    back(slot)


def _handed_back(slot: Hosted) -> None:
    """A slot's ``back`` once it has been called: handing it back again does nothing."""
