"""Storage configurations against a baseline: the ratios and the sentence a review prints.

Why: the reviews' conclusion is a ratio, "the H810 did 62% more TPS than the H800 at 300
users, with 123% more IOPS and 35% less latency"; readers of the side-by-side table work
it out by hand, and get it wrong for latency, where less is better. Here each
configuration's TPS, average and p95 latency and the storage's IOPS (the database's
devices as a whole: reads plus writes per second, when the run read them) are divided by
the baseline's at every user load both ran, and summed up over the loads by the geometric
mean of those ratios, the mean that treats a doubling at one load and a halving at another
as even (an arithmetic mean of ratios would call that a 25% gain).

A run that ran a user load more than once is compared at its first step of that load
(the column the table labels plainly); a run of ``--repeat`` by its means over the repeats,
and where both runs repeated a load, the TPS ratio's interval is Welch's t on the repeats
(tpsbench.report.noise) instead of batch means. Every figure is the steady window's, as in the
report table (tpsbench.report.table, whose row definitions are used here). Every TPS
ratio carries its 95% confidence interval from the two steps' steady intervals
(tpsbench.report.noise), so that a difference the runs' own noise could make is said to
be one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.summary import SteadySummary
from tpsbench.report.noise import (
    Noise,
    noise_cell,
    noise_text,
    overall_noise,
    repeats_noise,
    tps_noise,
)
from tpsbench.report.repeats import repeat_columns, repeat_tps
from tpsbench.report.steadiness import steady_intervals
from tpsbench.report.table import OBSERVER_ROWS, ROWS, run_labels
from tpsbench.results.records import RunData, StoredStep

#: the report table's rows of step figures: row label -> value of a step summary
_GETTERS = {name: get for name, get, _ in ROWS}
#: (key, how a ratio is named in the review's sentence, the table row it is read from:
#: ROWS, or OBSERVER_ROWS for IOPS), in the sentence's order
METRICS = (("tps", "TPS", "TPS"), ("iops", "IOPS", "IOPS"), ("avg_ms", "avg latency", "avg (ms)"),
           ("p95_ms", "p95 latency", "p95 (ms)"))
#: the metrics whose 0 is a measurement (a latency of 0 means no transaction finished)
THROUGHPUTS = ("tps", "iops")
#: IOPS as the report table reads it: (observer, figures summed, scale)
_IOPS_OBSERVER, _IOPS_FIGURES, _IOPS_SCALE = next(r[1:4] for r in OBSERVER_ROWS if r[0] == "IOPS")

#: the ratio table's row of the TPS ratios' confidence intervals
TPS_CI = "TPS 95% CI"
#: metric -> value (None: not measured in that run)
Figures = dict[str, float | None]


@dataclass
class Load:
    """One user load the baseline ran with at least one other configuration."""

    users: int
    #: per configuration, in the order given: its figures, None where it did not run this load
    figures: list[Figures | None]
    #: per configuration: metric -> its figure / the baseline's (None where either is missing or the baseline's is 0)
    ratios: list[Figures]
    #: per configuration: its TPS ratio's confidence interval (None: the baseline, or no ratio)
    tps_noise: list[Noise | None]


@dataclass
class Comparison:
    """Configurations against the baseline's, per user load and overall."""

    labels: list[str]
    run_ids: list[int]
    baseline: int
    loads: list[Load]
    #: per configuration: metric -> geometric mean of its ratios over the loads (None: no ratio)
    overall: list[Figures]
    #: per configuration: the overall TPS ratio's confidence interval
    overall_noise: list[Noise | None]


def _figures(data: RunData, step: int, summary: SteadySummary) -> Figures:
    """A step's compared figures; IOPS only where the device I/O observer read the total; None
    for a figure a published table did not give (NaN, tpsbench.results.references)."""
    read = data.readings(step).get(_IOPS_OBSERVER, {})
    iops = _IOPS_SCALE * sum(read[f] for f in _IOPS_FIGURES) if all(f in read for f in _IOPS_FIGURES) else None
    figures = {key: iops if key == "iops" else _GETTERS[row](summary) for key, _, row in METRICS}
    return {key: None if value is None or math.isnan(value) else value for key, value in figures.items()}


def _first_steps(data: RunData) -> dict[int, StoredStep]:
    """Each user load's first finished step."""
    out: dict[int, StoredStep] = {}
    for step in sorted(data.steps, key=lambda s: s.step):
        if step.summary is not None and step.users not in out:
            out[step.users] = step
    return out


def _repeat_figures(data: RunData) -> dict[int, Figures]:
    """A run of ``--repeat``: each load's figures as the means over its repeats (the first
    column of a load listed twice), as the report table shows them."""
    out: dict[int, Figures] = {}
    for column in repeat_columns(data):
        each = [_figures(data, s.step, s.summary) for s in column.steps if s.summary is not None]
        out.setdefault(column.users, {key: None if any(f[key] is None for f in each)
                                      else sum(f[key] or 0.0 for f in each) / len(each) for key, _, _ in METRICS})
    return out


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def _geomean(ratios: list[float]) -> float | None:
    """Geometric mean; 0 if any ratio is 0 (a configuration that did nothing at a load)."""
    if not ratios:
        return None
    if min(ratios) == 0:
        return 0.0
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def check_comparable(runs: Sequence[RunData]) -> None:
    """Refuse in one line what no ratio can be read from: a single configuration, or runs
    of different workloads or scales (a ratio between them says nothing about storage); a
    published table (status "published") is set beside any run, its workload being the review's."""
    if len(runs) < 2:
        only = f" (run {runs[0].run.id})" if runs else ""
        raise TpsbenchError(f"compare needs two configurations or more, got one{only}: name another run id, "
                            "storage label or --reference")
    measured = [data for data in runs if data.run.status != "published"]
    first = measured[0].run if measured else runs[0].run
    for data in measured[1:]:
        run = data.run
        if run.workload != first.workload:
            raise TpsbenchError(f"runs {first.id} and {run.id} ran different workloads ({first.workload}, "
                                f"{run.workload}): compare runs of one workload")
        scales = first.config.get("scale"), run.config.get("scale")
        if None not in scales and scales[0] != scales[1]:
            raise TpsbenchError(f"runs {first.id} and {run.id} ran {first.workload} at different scales "
                                f"({scales[0]}, {scales[1]}): compare runs of one scale")


def compare(runs: Sequence[RunData], baseline: int = 0) -> Comparison:
    """Every run against ``runs[baseline]`` at each user load the baseline shares with
    another run; :func:`check_comparable` first."""
    check_comparable(runs)
    if not 0 <= baseline < len(runs):
        raise ValueError(f"baseline must be the index of one of the {len(runs)} runs, not {baseline}")
    steps = [_first_steps(data) for data in runs]
    per_run = [{users: _figures(data, s.step, s.summary) for users, s in found.items() if s.summary is not None}
               for data, found in zip(runs, steps)]
    repeated = [repeat_tps(data) for data in runs]
    for found_figures, data in zip(per_run, runs):
        found_figures.update(_repeat_figures(data))
    tps = [{users: [i.tps for i in steady_intervals(data, s.step)] if data.intervals else None
            for users, s in found.items()} for data, found in zip(runs, steps)]
    base = per_run[baseline]
    shared = sorted(u for u in base if any(u in other for i, other in enumerate(per_run) if i != baseline))
    loads = []
    for users in shared:
        figures = [found.get(users) for found in per_run]
        ratios = [{key: _ratio(f.get(key), base[users][key]) for key, _, _ in METRICS} if f is not None
                  else dict.fromkeys(base[users]) for f in figures]
        noise = [(repeats_noise(ratio["tps"], repeated[baseline].get(users), repeated[i].get(users))
                  or tps_noise(ratio["tps"], tps[baseline][users], tps[i][users])) if i != baseline and f is not None
                 else None for i, (f, ratio) in enumerate(zip(figures, ratios))]
        loads.append(Load(users=users, figures=figures, ratios=ratios, tps_noise=noise))
    overall = [{key: _geomean([r for load in loads if (r := load.ratios[i][key]) is not None])
                for key, _, _ in METRICS} for i in range(len(runs))]
    noise = [overall_noise(overall[i]["tps"], [load.tps_noise[i] for load in loads if load.ratios[i]["tps"]])
             if i != baseline else None for i in range(len(runs))]
    return Comparison(labels=run_labels(runs), run_ids=[data.run.id for data in runs], baseline=baseline,
                      loads=loads, overall=overall, overall_noise=noise)


def _percent(ratio: float) -> str:
    """A ratio as a review says it: 1.625 -> "+62%", 0.651 -> "-35%" (whole percents)."""
    return f"{round((ratio - 1) * 100):+d}%"


def users_text(n: int) -> str:
    """A user load as a sentence says it: "1 user", "300 users"."""
    return f"{n} user" if n == 1 else f"{n} users"


def summary_lines(comparison: Comparison) -> list[str]:
    """One sentence per configuration other than the baseline, at the largest user load
    both ran: "H810 vs H800 at 300 users: +62% TPS (95% CI +55% to +69%), +123% IOPS, -35%
    avg latency" (metrics that either run lacks are left out; the TPS ratio with its
    interval, "within the noise" where it holds 1.0, or why it has none)."""
    base = comparison.labels[comparison.baseline]
    lines = []
    for i, label in enumerate(comparison.labels):
        if i == comparison.baseline:
            continue
        load = next((load for load in reversed(comparison.loads) if load.figures[i] is not None), None)
        if load is None:
            lines.append(f"{label} vs {base}: no user load in common")
            continue
        said = [_said(load, i, comparison.baseline, key, name) for key, name, _ in METRICS]
        said = [text for text in said if text]
        lines.append(f"{label} vs {base} at {users_text(load.users)}: {', '.join(said) or 'no figure to compare'}")
    return lines


def _said(load: Load, i: int, baseline: int, key: str, name: str) -> str:
    """One ratio of the sentence; where both runs have a throughput but the baseline's is 0,
    that it cannot be computed (a metric either run lacks, a latency of 0 that no
    transaction gave: nothing)."""
    ratio = load.ratios[i][key]
    if ratio is not None:
        noise = load.tps_noise[i] if key == "tps" else None
        return f"{_percent(ratio)} {name}" + (f" ({noise_text(noise)})" if noise is not None else "")
    mine, base = load.figures[i], load.figures[baseline]
    if key in THROUGHPUTS and mine is not None and base is not None and mine.get(key) is not None \
            and base.get(key) == 0:
        return f"{name} ratio not computable (the baseline's is 0)"
    return ""


def _cell(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}x"


def to_text(comparison: Comparison) -> str:
    """The ratios as a Markdown table padded to line up in a terminal: one block of metric
    rows per configuration other than the baseline, user loads across, then "overall"."""
    base = comparison.labels[comparison.baseline]
    header = ["Configuration", "ratio", *(users_text(load.users) for load in comparison.loads), "overall"]
    rows = []
    for i, label in enumerate(comparison.labels):
        if i == comparison.baseline:
            continue
        block = [[name, *cells] for key, name, _ in METRICS
                 if any(cells := [*(_cell(load.ratios[i][key]) for load in comparison.loads),
                                  _cell(comparison.overall[i][key])])]
        ci = [noise_cell(load.tps_noise[i]) for load in comparison.loads] + [noise_cell(comparison.overall_noise[i])]
        if any(ci):
            block.insert(1, [TPS_CI, *ci])
        rows += [[f"{label} vs {base}" if n == 0 else "", *row] for n, row in enumerate(block)]
    rows = [[cell.replace("|", "\\|") for cell in row] for row in [header, *rows]]
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(w) if c < 2 else cell.rjust(w)
                                 for c, (cell, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if c >= 2 else "-") for c, w in enumerate(widths)) + "|"
    title = (f"Ratios against {base}; latency below 1.00x is better; overall: geometric mean over the "
             f"user loads; {TPS_CI}: from the steps' steady intervals (batch means)")
    if any(n is not None and n.repeats is not None for load in comparison.loads for n in load.tps_noise):
        title += ", or from the repeats (Welch's t) where both runs repeated the load; figures: means over repeats"
    return "\n".join([title, "", line(rows[0]), rule, *(line(row) for row in rows[1:])]) + "\n"
