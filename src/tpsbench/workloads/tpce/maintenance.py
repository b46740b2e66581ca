"""Data-Maintenance's sender: one background component of the run, every 60 s.

EGen's driver runs Data-Maintenance from a thread of its own, once a minute, beside the
customers. Here worker 0 alone (TpceWorkload.background) runs :class:`Maintenance`, a
background component whose session sends the first Data-Maintenance as the run's first
step starts and one every ``INTERVAL_S`` after it, on a clock that goes on from step to
step (the workload hands each step's component the last one's turn and due time, so a
run of 35 s steps still has one a minute, and one falls due in a gap between steps is
sent when the next step starts); the tables take turns across the run. The session
waits for the next in slices of ``WAIT_S``, so that the engine sees the step's end.
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from tpsbench.core.session import Background, RunContext, Session, TimingSink
from tpsbench.core.target import Target
from tpsbench.workloads.tpce.frames import FramesSession
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.universe import universe

INTERVAL_S = 60.0
WAIT_S = 0.2
#: the user id its draws are seeded with: apart from every user's
DRAW_ID = -1


class MaintenanceSession(FramesSession):
    """Data-Maintenance when it is due, else "no work yet"; always client SQL, once a minute."""

    sends_calls = False

    def __init__(self, ctx: RunContext, conn: Any, target: Target, component: Maintenance) -> None:
        super().__init__(ctx, DRAW_ID, 1, conn, target)
        self.component = component
        self.world = universe(target, conn)
        self.draw = Draws(ctx.seed, DRAW_ID, self.world)

    def next_transaction(self) -> str:
        wait = self.component.due - time.monotonic()
        if wait > 0:
            self.component.stopped.wait(min(wait, WAIT_S))
            return ""
        return "data_maintenance"

    def next_turn(self) -> int:
        """The next table's turn (data_maintenance.drawn); the next call is due an
        interval after this one was (a failed call is not tried again before then)."""
        component = self.component
        component.due += INTERVAL_S
        component.turn += 1
        return component.turn - 1


class Maintenance(Background):
    """Data-Maintenance beside the users; ``turn`` counts the calls of the run so far and
    ``due`` is when the next is (time.monotonic(); None: now), both carried over from the
    last step's component by the workload."""

    name: ClassVar[str] = "data maintenance"

    def __init__(self, turn: int = 0, due: float | None = None) -> None:
        self.turn = turn
        self.due = time.monotonic() if due is None else due
        self.stopped = threading.Event()

    def open_session(self, ctx: RunContext, conn: Any, target: Target, timing: TimingSink) -> Session:
        return MaintenanceSession(ctx, conn, target, self)

    def stop(self) -> None:
        self.stopped.set()
