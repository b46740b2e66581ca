"""A sequential campaign's rounds of one target, read as one run of ``--repeat``.

Why: a campaign with ``repeat = N`` runs its targets round by round (A B C A B C, so that
slow drift does not read as a difference), and each target's round is a run of its own,
whose configuration holds ``campaign``, ``campaign_target``, ``campaign_round`` (from 1)
and ``campaign_rounds`` (N). Those runs are the target's repeats; the reports, ``compare``
and ``plan`` show figures over repeats for one run (tpsbench.report.repeats), so the
rounds are put together here as one: round r's step k becomes step (r - 1) x len(users) + k,
the layout ``run --repeat`` stores, with ``repeat`` the rounds found and ``round_runs``
the runs' ids in round order. The warm-up (step 0) is the first round's. Rounds whose
load lists differ, or a target with one round found, are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tpsbench.core.repeats import campaign_round
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.report.repeats import Histograms
from tpsbench.results.records import RunData
from tpsbench.results.schema import WARMUP_STEP

#: (combined run id, its step) -> (the round's run id, the round's step)
Origins = dict[tuple[int, int], tuple[int, int]]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _target(data: RunData) -> tuple[int, int] | None:
    """(campaign, target) of a run that is one of several rounds, else None."""
    config = data.run.config
    campaign, target, rounds = (_int(config.get(k)) for k in ("campaign", "campaign_target", "campaign_rounds"))
    if campaign is None or target is None or rounds is None or rounds < 2:
        return None
    return campaign, target


def _combined(rounds: Sequence[RunData], origins: Origins) -> RunData:
    """The rounds (in round order) as one run of ``--repeat``; ``origins`` gets each step's."""
    first = rounds[0]
    length = len(first.run.config["users"])
    statuses = [d.run.status for d in rounds]
    run = replace(first.run, ended_at=rounds[-1].run.ended_at,
                  status=next((s for s in statuses if s != "completed"), "completed"),
                  config={**first.run.config, "repeat": len(rounds), "round_runs": [d.run.id for d in rounds]})
    out = RunData(run=run)
    for r, data in enumerate(rounds):
        def moved(step: int, r: int = r) -> int:
            return step + r * length if step > WARMUP_STEP else step

        keep = [s for s in data.steps if s.step > WARMUP_STEP or r == 0]
        out.steps += [replace(s, step=moved(s.step)) for s in keep]
        origins.update({(run.id, moved(s.step)): (data.run.id, s.step) for s in keep})
        out.intervals += [replace(i, step=moved(i.step)) for i in data.intervals if i.step > WARMUP_STEP or r == 0]
        out.errors += [replace(e, step=moved(e.step)) for e in data.errors if e.step > WARMUP_STEP or r == 0]
        out.observations += [replace(o, step=moved(o.step)) for o in data.observations
                             if o.step > WARMUP_STEP or r == 0]
    return out


def merge_rounds(runs: Sequence[RunData], histograms: Histograms | None = None
                 ) -> tuple[list[RunData], Histograms | None]:
    """``runs`` with each campaign target's rounds put together as one run of ``--repeat``
    (at the first round's place), and ``histograms`` that finds the combined steps' own."""
    groups: dict[tuple[int, int], list[RunData]] = {}
    for data in runs:
        if (key := _target(data)) is not None:
            groups.setdefault(key, []).append(data)
    origins: Origins = {}
    out = []
    for data in runs:
        key = _target(data)
        group = sorted(groups[key], key=lambda d: ((campaign_round(d.run.config) or (0, 0))[0], d.run.id)) \
            if key is not None else []
        alike = len(group) > 1 and all(isinstance(d.run.config.get("users"), list)
                                       and d.run.config.get("users") == group[0].run.config.get("users") for d in group)
        if not alike:
            out.append(data)
        elif key is not None and data is groups[key][0]:
            out.append(_combined(group, origins))
    if histograms is None or not origins:
        return out, histograms
    found = histograms

    def translated(run_id: int, step: int, txn: str) -> LatencyHistogram | None:
        return found(*origins.get((run_id, step), (run_id, step)), txn)

    return out, translated
