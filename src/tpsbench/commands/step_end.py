"""What is stored and said when a step ends: its summary, its problems, what limited it,
and whether the run's every transaction failed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tpsbench.core.redact import scrub_text
from tpsbench.engine.coordinator import RunOutcome, StepOutcome
from tpsbench.measure.observers import Readings
from tpsbench.measure.step_context import Verdict
from tpsbench.report.limits import step_verdict
from tpsbench.results.store import ResultsStore


def finish_step(store: ResultsStore, run_id: int, result: StepOutcome, live: Callable[[str], None] | None,
                 secrets: set[str] | frozenset[str] = frozenset(), *, config: Mapping[str, Any] | None = None,
                 seen: list[Readings] | None = None, db_url: str = "") -> Verdict | None:
    """Store the step; its problems (the load ran short of the plan) are stored and said too.
    Given the run's stored ``config``, what limited the step is said as well (``seen``: the
    steady readings of the run's finished steps, to which this step's are added; ``db_url``:
    the database's, as stored); the verdict, where one was said."""
    if result.summary is not None:
        store.finish_step(run_id, result.step, result.summary, observations=result.observations)
    store.add_problems(run_id, result.step, result.problems)
    if live is None:
        return None
    for problem in result.problems:
        live(f"step {result.step} PROBLEM: {scrub_text(problem, secrets)}")
    if config is not None and seen is not None and result.summary is not None:
        said = step_verdict(config, db_url, result.users, result.observations, seen, result.summary)
        seen.append(result.observations)
        live(f"step {result.step} limited by: {scrub_text(said.text, secrets)}")
        return said
    return None


def all_failed(outcome: RunOutcome) -> str | None:
    """Why a run whose every transaction failed is 'failed', with the first error; None
    when any committed or rolled back as the workload meant (or none was tried)."""
    totals = [total for step in outcome.steps if (total := step.total()) is not None]
    errors = sum(t.total("errors") for t in totals)
    if errors == 0 or sum(t.total("commits") + t.total("rollbacks") for t in totals) > 0:
        return None
    first = next((message for t in totals for _, message in t.errors), "")
    return f"every transaction failed ({errors:,} errors, none committed){': ' + first if first else ''}"
