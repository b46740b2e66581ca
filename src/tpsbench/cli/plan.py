"""``tpsbench plan``: capacity planning from stored runs, one USL fit per run.

Each run is one storage configuration, so each gets its own fit: σ, κ and λ with their
intervals, how well the curve meets the steps, where throughput peaks, the TPS at loads
not measured, the largest load meeting an SLA, and every reason not to believe it. It is
plain text, not a table: the warnings are sentences, and they are the point.
"""

from __future__ import annotations

import math

import click

from tpsbench.cli.options import campaign_option, force_option, output_option, results_option, storage_option
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import parse_users
from tpsbench.measure.summary import SteadySummary
from tpsbench.report.repeats import repeat_count
from tpsbench.report.usl import Sla, SlaLimit, UslFit, fit_usl, sla_limit
from tpsbench.results.records import RunData

#: where a fit's intervals come from, as the block says it
CI_SOURCES = {"covariance": "the Jacobian's covariance (Student t)",
              "bootstrap": "a bootstrap of the residuals (the covariance is singular or a parameter is on its bound)",
              "none": "none: 3 loads leave nothing over to estimate them from"}


def _interval(low: float, high: float, fmt: str) -> str:
    return "95% [n/a]" if math.isnan(low) else f"95% [{low:{fmt}}, {high:{fmt}}]"


def _fit_lines(fit: UslFit, loads: list[int]) -> list[str]:
    lines = [f"  σ (contention)  {fit.sigma:<10.4g} {_interval(*fit.sigma_ci, '.4g')}",
             f"  κ (coherency)   {fit.kappa:<10.4g} {_interval(*fit.kappa_ci, '.4g')}",
             f"  λ (TPS of one)  {fit.lam:<10.1f} {_interval(*fit.lam_ci, '.1f')}",
             f"  intervals: {CI_SOURCES[fit.ci_method]}",
             f"  R² {fit.r2:.4f}",
             f"  {'users':>8} {'TPS':>10} {'fitted':>10} {'residual':>9}"]
    lines += [f"  {n:>8g} {x:>10.1f} {fit.predict(n):>10.1f} {r:>+9.1%}"
              for n, x, r in zip(fit.users, fit.tps, fit.residuals)]
    if fit.n_max is None or fit.peak_tps is None:
        lines.append("  Nmax undefined (κ ≈ 0): no peak in reach of the data")
    else:
        lines.append(f"  Nmax {fit.n_max:.1f} users, peak {fit.peak_tps:.1f} TPS")
    lines += [f"  predicted at {n} users: {fit.predict(n):.1f} TPS" for n in loads]
    return lines


def _sla_line(limit: SlaLimit) -> str:
    mark = f"predicted, {limit.basis}" if limit.predicted else "measured"
    users = "none" if limit.users is None else f"{limit.users} users"
    return f"  SLA {limit.sla}: {users} ({mark}): {limit.note}"


def _steps(data: RunData) -> tuple[list[tuple[int, SteadySummary]], list[str]]:
    """The steps with a steady-state throughput as (users, summary), and a line for each
    left out (the USL's relative residuals cannot take a TPS of 0; an unfinished step has none)."""
    kept, notes = [], []
    for step in data.steps:
        if step.summary is not None and step.summary.tps > 0:
            kept.append((step.users, step.summary))
        else:
            notes.append(f"  step {step.step} ({step.users} users) left out: no steady-state throughput")
    return kept, notes


def _block(data: RunData, sla: Sla | None, loads: list[int]) -> list[str]:
    """The lines of one run's plan; TpsbenchError when its steps cannot be fitted."""
    run = data.run
    steps, notes = _steps(data)
    repeats = repeat_count(data)
    fit = fit_usl([users for users, _ in steps], [summary.tps for _, summary in steps], every=repeats > 1)
    header = (f"run {run.id}: {run.workload}, {f'storage {run.storage!r}' if run.storage else 'no storage label'},"
              f" {len(steps)} steps at {', '.join(str(users) for users, _ in steps)} users")
    if repeats > 1:
        notes.append(f"  fitted to every repeat's point ({repeats} repeats a load), not their means: the"
                     " intervals widen with the spread between repeats")
    lines = [header, *notes, *_fit_lines(fit, loads)]
    if sla is not None:
        lines.append(_sla_line(sla_limit(sla, [(users, summary.latency) for users, summary in steps], fit)))
    lines += [f"  warning: {w}" for w in fit.warnings] or ["  no warnings: the USL describes these steps"]
    return lines


@click.command()
@click.argument("run_ids", nargs=-1, type=int)
@campaign_option
@storage_option
@click.option("--sla", "sla_text", default=None, metavar="SLA",
              help="A latency target like 'p95<2s', 'avg<500ms' or 'p99<=1.5s' (avg, p50, p90, p95, p99, p999):"
                   " the largest user load meeting it, measured or predicted.")
@click.option("--users", "users_text", default=None, metavar="LIST",
              help="User loads to predict TPS at, a LIST like 400,600.")
@results_option
@output_option
@force_option
def plan(run_ids: tuple[int, ...], campaign_id: int | None, labels: tuple[str, ...], sla_text: str | None,
         users_text: str | None, results_url: str | None, output: str | None, force: bool) -> None:
    """Capacity planning: fit the Universal Scalability Law to each run's steps (default: the latest run).

    \b
    Per run (one storage configuration): contention σ, coherency κ and one user's
    TPS λ with 95% intervals (a run of --repeat: fitted to every repeat's point, so
    they widen with the spread between repeats), R², each step's residual, the load of peak throughput
    (Nmax) and its TPS, the TPS at --users loads, the largest load meeting --sla, and
    every warning that says where the model does not hold.

    \b
      tpsbench plan                       # the latest run
      tpsbench plan 3 4 --sla "p95<2s" --users 400,600
      tpsbench plan --campaign 2 --sla "avg<500ms" --output plan.txt
    """
    from tpsbench.cli.report import emit, refuse_bad_output
    from tpsbench.commands.selection import select_runs
    from tpsbench.results.store import ResultsStore

    sla = Sla.parse(sla_text) if sla_text is not None else None
    loads = parse_users(users_text) if users_text is not None else []
    refuse_bad_output(output, "plan", force)
    # every run checked before anything is printed
    from tpsbench.report.rounds import merge_rounds

    runs, _ = merge_rounds(select_runs(ResultsStore(results_url, create=False), run_ids, campaign=campaign_id,
                                       labels=labels))  # a campaign's rounds of one target: its repeats
    blocks, unfitted = [], []
    for data in runs:
        try:
            blocks.append("\n".join(_block(data, sla, loads)))
        except TpsbenchError as exc:
            unfitted.append(f"run {data.run.id}: {exc}")
    if blocks:
        emit("\n\n".join(blocks) + "\n", output, "plan", force)
    if unfitted:
        raise TpsbenchError("; ".join(unfitted))
