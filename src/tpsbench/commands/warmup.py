"""The warm-up: a preconditioning phase before a run's first step, kept but never measured.

Why: a first step that starts on cold caches, an empty WAL or a fresh connection pool
measures the database warming up, not the load. SNIA's PTS preconditions a device before
its measured rounds; ``--warmup`` does the same at the first step's user load. The
warm-up runs as step 0: its intervals are stored (and charted) as the warm-up, never
steady, so no step's figures count them; its transactions still count in the honesty
check, which compares everything the driver did with what the database saw.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from tpsbench.commands.step_end import finish_step
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import MAX_DURATION_S, MIN_INTERVAL_S
from tpsbench.engine.coordinator import RunOutcome
from tpsbench.engine.steps import LoadStep
from tpsbench.engine.until_steady import UNTIL_STEADY
from tpsbench.measure.reports import clock
from tpsbench.measure.steady_state import WINDOW
from tpsbench.results.schema import WARMUP_STEP
from tpsbench.results.store import ResultsStore


def check_warmup(seconds: float, cache: str = "warm", until_steady_s: float | None = None, duration_s: float = 0.0,
                 interval_s: float = 1.0) -> None:
    """Refuse, in one line, a warm-up that cannot be run: negative, not finite, shorter
    than the shortest interval (0 is none), longer than 30 days, or one that ``--cache
    cold`` would undo by emptying the caches before the first step; and an
    ``--until-steady`` that cannot judge (under five intervals) or would cut the window."""
    if until_steady_s is not None:
        check_until_steady(until_steady_s, duration_s, interval_s)
    if not (math.isfinite(seconds) and (seconds == 0 or MIN_INTERVAL_S <= seconds <= MAX_DURATION_S)):
        raise TpsbenchError(f"--warmup must be 0 (none) or from {MIN_INTERVAL_S:g}s to 30 days, not {seconds}s")
    if seconds and cache == "cold":
        raise TpsbenchError("--warmup warms the caches that --cache cold empties before each step: give one or the "
                            "other")


def check_until_steady(most_s: float, duration_s: float, interval_s: float) -> None:
    """``--until-steady MAX``: at least the SNIA window of five intervals, at least
    ``--duration`` (it extends the measured window, never cuts it) and at most 30 days."""
    if not math.isfinite(most_s) or most_s > MAX_DURATION_S:
        raise TpsbenchError(f"--until-steady must be at most 30 days, not {most_s}s")
    if most_s < WINDOW * interval_s - 1e-9:
        raise TpsbenchError(f"--until-steady {most_s:g}s is shorter than {WINDOW} intervals of {interval_s:g}s, the "
                            f"window SNIA's test judges: give at least {WINDOW * interval_s:g}s")
    if most_s < duration_s:
        raise TpsbenchError(f"--until-steady {most_s:g}s is shorter than --duration {duration_s:g}s: it extends a "
                            "step's measured window, never cuts it")


def warmup_step(seconds: float, first: LoadStep) -> LoadStep | None:
    """The warm-up as a step: the first step's users, ramp-up, interval and pacing, run
    for ``seconds`` after its ramp-up (None for 0: no warm-up); with ``--until-steady``
    (``first.least_s`` set) it ends as soon as it is steady."""
    if not seconds:
        return None
    return dataclasses.replace(first, duration_s=seconds, least_s=None if first.least_s is None else 0.0)


def warmup_text(seconds: float) -> str:
    """How the plan line names the warm-up ("" for none)."""
    return f"after a {clock(seconds)} warm-up, " if seconds else ""


def measured_text(rampup_s: float, duration_s: float, until_steady_s: float | None) -> str:
    """How the plan line names a step's time: its ramp-up, its measured window, and how far
    --until-steady may take that."""
    ramp = f"{clock(rampup_s)} ramp-up + " if rampup_s else ""
    until = f" (on until steady, at most {clock(until_steady_s)})" if until_steady_s else ""
    return f"{ramp}{clock(duration_s)} measured{until}"


def warmup_total(seconds: float, rampup_s: float) -> float:
    """About how long the warm-up takes: its ramp-up, its time and a second to start (0: none)."""
    return rampup_s + seconds + 1.0 if seconds else 0.0


def keep_warmup(store: ResultsStore, run_id: int, outcome: RunOutcome, live: Callable[[str], None] | None,
                secrets: set[str] | frozenset[str] = frozenset()) -> None:
    """Store and say the warm-up's problems (a worker lost in it); its intervals are stored
    as they come, and it has no figures to store. With ``--until-steady``, whether it ended
    once steady is stored too (as a step's is), so that every report can say it."""
    if outcome.warmup is None:
        return
    finish_step(store, run_id, dataclasses.replace(outcome.warmup, summary=None), live, secrets)
    if UNTIL_STEADY in outcome.warmup.observations:
        store.add_readings(run_id, WARMUP_STEP, None, {UNTIL_STEADY: outcome.warmup.observations[UNTIL_STEADY]})
