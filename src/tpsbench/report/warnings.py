"""Where the data does not support a conclusion: the checks a careful reviewer makes
before publishing a table, made for every run.

Why: the published tables compare configurations by figures that sometimes cannot carry
the comparison: TPS that falls from 50.9 to 30.3 and rises again to 39.9 as users are
added (every drive of one review did so), a p99.9 that is the slowest of a few hundred
transactions, a step in which a tenth of the work failed. The report cannot fix such a
run, but it can say which figure not to lean on, and why, next to the figure. Each
warning names the run (its storage label and id) and, where it is about one step, the
step's user load; the thresholds below say why they are where they are.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from tpsbench.engine.pacing import PACING
from tpsbench.measure.honesty import honesty_text
from tpsbench.measure.step_context import kept_up
from tpsbench.measure.summary import PERCENTILES, SteadySummary
from tpsbench.report.compare import users_text
from tpsbench.report.limits import not_storage_warning
from tpsbench.results.records import RunData, StoredStep

#: a step whose steady intervals' TPS has a coefficient of variation (sample standard
#: deviation / mean) above this was not steady: a checkpoint, a cache still warming or a
#: neighbour's load moved its throughput by more than a tenth, so its mean is a mix of
#: two states and a difference of a few percent between configurations is noise
CV_MOST = 0.10
#: fewer steady intervals than this cannot show whether a step was steady (a CV of 2 to 4
#: values says little), and a single slow interval then weighs a quarter or more
STEADY_INTERVALS_LEAST = 5
#: a percentile rests on the transactions slower than it; with fewer than this many
#: beyond it (a p99 of under 1,000 transactions, a p99.9 of under 10,000) it is one or
#: two unlucky transactions, and its run-to-run spread exceeds any storage's difference
TAIL_LEAST = 10
#: a step whose errors (failed transactions, not TPC-C's expected rollbacks) exceed this
#: share of its transactions did less work than it was asked: its TPS counts only what
#: succeeded, so it is not comparable with a clean configuration's
ERRORS_MOST = 0.01
#: a dip in the TPS curve counts where TPS falls by more than this share below an earlier
#: step's and rises by more than this share again at a later one; smaller wiggles are the
#: noise of a saturated plateau, not a disturbed step
DIP_LEAST = 0.05


def _run_name(data: RunData) -> str:
    return f"{data.run.storage} (run {data.run.id})" if data.run.storage else f"run {data.run.id}"


def _percentile_name(key: str) -> str:
    return f"p{PERCENTILES[key]:g}"


def _needed(percentile: float) -> int:
    """Transactions a percentile needs to have TAIL_LEAST beyond it: 1,000 for p99."""
    return round(TAIL_LEAST * 100 / (100 - percentile))


def _step_warnings(data: RunData, step: StoredStep, summary: SteadySummary) -> list[str]:
    """What the step's own figures do not support."""
    at = f"{_run_name(data)} at {users_text(step.users)}"
    out = []
    if summary.intervals < STEADY_INTERVALS_LEAST:
        out.append(f"{at}: only {summary.intervals} steady interval{'' if summary.intervals == 1 else 's'} "
                   f"(fewer than {STEADY_INTERVALS_LEAST}): too few to tell whether the step was steady; "
                   "run it longer")
    tps = [i.tps for i in data.intervals if i.step == step.step and i.steady]
    mean = statistics.fmean(tps) if tps else 0.0
    if len(tps) >= 2 and mean > 0 and (cv := statistics.stdev(tps) / mean) > CV_MOST:
        out.append(f"{at}: not steady: TPS varies by {cv:.1%} (coefficient of variation) across its "
                   f"{len(tps)} steady intervals (more than {CV_MOST:.0%}); its mean TPS is not one state's")
    count = summary.latency.count
    thin = [f"{_percentile_name(key)} needs {need:,}" for key, p in PERCENTILES.items()
            if count < (need := _needed(p))]
    if count and thin:
        out.append(f"{at}: too few transactions ({count:,}) for its tail percentiles ({', '.join(thin)}, to "
                   f"have {TAIL_LEAST} slower than it): read them as the slowest few, not as percentiles")
    pacing = data.readings(step.step).get(PACING, {})
    offered, achieved = pacing.get("offered_per_s", 0.0), pacing.get("achieved_per_s", 0.0)
    if offered and not kept_up(offered, achieved, pacing.get("queue_end"), step.users, summary.seconds):
        out.append(f"{at}: the users did not sustain the offered rate: {achieved:,.1f} of {offered:,.1f} "
                   f"transactions a second ({achieved / offered:.0%}), and {pacing.get('queue_end', 0):,.0f} "
                   "arrivals were queued at the end: its latency grows with the queue, so add users or "
                   "lower --rate")
    errors = summary.total("errors")
    done = summary.total("commits") + summary.total("rollbacks") + errors
    if done and errors / done > ERRORS_MOST:
        out.append(f"{at}: {errors:,} errors are {errors / done:.1%} of its {done:,} transactions (more than "
                   f"{ERRORS_MOST:.0%}): its TPS counts only what succeeded")
    return out


def _dip(data: RunData) -> str | None:
    """The first fall-and-rise of the run's TPS curve over its user loads, said with
    the three points: "50.9 at 20 -> 30.3 at 50 -> 39.9 at 100 users"."""
    curve = [(s.users, s.summary.tps) for s in sorted(data.steps, key=lambda s: (s.users, s.step))
             if s.summary is not None]
    for j in range(1, len(curve) - 1):
        (_, low), before, after = curve[j], curve[:j], curve[j + 1:]
        peak, rebound = max(before, key=lambda p: p[1]), max(after, key=lambda p: p[1])
        if low < peak[1] * (1 - DIP_LEAST) and rebound[1] > low * (1 + DIP_LEAST):
            points = " -> ".join(f"{tps:.1f} at {users}" for users, tps in (peak, curve[j], rebound))
            return (f"{_run_name(data)}: TPS falls then rises again with users ({points} users): a step "
                    "between was disturbed or not steady; do not compare configurations at those loads")
    return None


def warnings(runs: Sequence[RunData]) -> list[str]:
    """Every warning for ``runs``: that the configurations compared were not limited by
    their storage (tpsbench.report.limits), then run by run: how it ended, its honesty
    check, then each step in user-load order, then the shape of its TPS curve."""
    storage = not_storage_warning(runs)
    out = [storage] if storage is not None else []
    for data in runs:
        name = _run_name(data)
        if data.run.status != "completed":
            out.append(f"{name}: the run is {data.run.status}, not completed: its last steps may be "
                       "missing or cut short")
        honesty = data.run.honesty
        if not honesty or not honesty.get("match"):
            out.append(f"{name}: honesty check {honesty_text(honesty)}: the driver's counts are not "
                       "confirmed by the database's")
        for step in sorted(data.steps, key=lambda s: (s.users, s.step)):
            if step.summary is not None:
                out += _step_warnings(data, step, step.summary)
        dip = _dip(data)
        if dip is not None:
            out.append(dip)
    return out
