"""The worker keeps its users' objects out of the garbage collector's full passes while a
step runs (Worker.run_step: gc.freeze through the ramp-up), and hands them back at the
step's end (gc.unfreeze), so that a step's sessions and their garbage are collectable
when the next step starts."""

from __future__ import annotations

import gc
import time
from typing import Any

from test_engine import CounterSession, CounterWorkload, bounded, make_table, statements

from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.engine.coordinator import RunStatus, run_steps
from tpsbench.engine.steps import LoadStep

SAMPLE_S = 0.05


class FreezeSession(CounterSession):
    """Looks every SAMPLE_S whether the worker has frozen the collector's objects, and
    counts the looks by the answer (get_freeze_count walks every frozen object: not at
    every transaction)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        self.statement_counts = {"frozen": 0, "young": 0}
        self.looked = 0.0

    def execute(self, name: str, inputs: object) -> bool:
        now = time.monotonic()
        if now - self.looked >= SAMPLE_S:
            self.looked = now
            self.statement_counts["frozen" if gc.get_freeze_count() else "young"] += 1
        return super().execute(name, inputs)


class FreezeWorkload(CounterWorkload):
    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        return FreezeSession(ctx, user_id, users, conn, target)


def test_users_objects_are_frozen_after_the_ramp_up_and_thawed_between_steps(tmp_path: Any) -> None:
    ctx = make_table(f"sqlite:///{tmp_path / 'counter.db'}")
    steps = [LoadStep(users=2, duration_s=1.5, rampup_s=0.5, interval_s=0.5) for _ in range(2)]
    outcome = bounded(lambda: run_steps(ctx, FreezeWorkload(), steps, processes=1, live=None), 90)
    assert outcome.status is RunStatus.COMPLETED
    for step in outcome.steps:
        # before the first interval's end nothing is frozen, in the second step too (thawed at the first's end)
        assert statements(step, "young") > 0
        assert statements(step, "frozen") > statements(step, "young")  # the steady second against the ramp-up's half
