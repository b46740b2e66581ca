"""A campaign's ``[options]``, checked against ``tpsbench run``'s own options.

Why here: the options a run takes are its click command's (the common ones and the
workload's own), so the names a campaign accepts are read off that command, not copied
into a list that would drift from it. Each value goes through what ``run`` does with it:
click's parsing (choices, ranges, whole numbers), then the checks ``run`` makes before it
touches a database (rates, waits, the workload's options). So a campaign is refused in
one line before anything is stored, rather than once per target after its record is.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from tpsbench.cli.run import cluster_workers, run, waits, warmup_seconds
from tpsbench.commands.pacing_options import step_rates
from tpsbench.core.campaign import Campaign, run_args
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import check_text, parse_rates
from tpsbench.workloads import get_workload

#: run options a campaign sets elsewhere, and where: ``[options]`` refuses them, saying so
ELSEWHERE = {
    "url": "per target (db = URL under [[target]])",
    "storage": "per target (storage = NAME under [[target]])",
    "data_path": "per target (data_path = PATH under [[target]])",
    "trace": "per run only (the targets' runs would write over each other's trace files)",
    **{name: f"at the top of the campaign file ({name} = ...)"
       for name in ("users", "rampup", "duration", "interval", "cache", "seed", "scale", "storage_file", "repeat")},
    "build_if_missing": "by the campaign itself where a target has no build (scale = N at the top of the file)",
    "results_url": "on the command line (tpsbench campaign --results URL)",
    # where run has them: one endpoint for the whole campaign, which relays every run's
    "metrics_addr": "on the command line (tpsbench campaign --metrics-addr)",
    "allow_remote": "on the command line, with tpsbench campaign --metrics-addr",
}


def checked_options(campaign: Campaign, where: str | Path) -> Campaign:
    """``campaign`` with its ``[options]`` checked as ``tpsbench run`` checks them (a flag
    set false that has no ``--no-`` spelling dropped); one line naming what is wrong."""
    command = run.get_command(click.Context(run), campaign.workload)
    assert command is not None  # get_command refuses an unknown workload itself
    spellings = _spellings(command)
    accepted = sorted({p.name for p in spellings.values() if p.name not in ELSEWHERE})

    def refuse(what: str) -> TpsbenchError:
        return TpsbenchError(f"campaign file {where}: [options] {what}")

    options: dict[str, str | bool] = {}
    for key, value in campaign.options.items():
        param = spellings.get(key)
        if param is None or param.name in ELSEWHERE:
            said = (f"is not a run option of {campaign.workload}" if param is None
                    else f"is set {ELSEWHERE[str(param.name)]}")
            raise refuse(f"{key} {said}; [options] accepts {', '.join(accepted)}")
        if param.is_flag != isinstance(value, bool):
            raise refuse(f"{key} is {'a flag: true or false' if param.is_flag else 'not a flag: give a value'},"
                         f" not {value!r}")
        if value is False and not param.secondary_opts:
            continue  # the flag's default: absent
        options[str(param.name)] = value
    try:
        values = command.make_context(f"run {campaign.workload}", run_args(options)).params
    except click.ClickException as exc:
        raise refuse(exc.format_message()) from None
    try:
        _as_run_checks(campaign, values)
    except click.ClickException as exc:
        raise refuse(exc.format_message()) from None
    except TpsbenchError as exc:
        raise refuse(str(exc)) from None
    return dataclasses.replace(campaign, options=options)


def _spellings(command: click.Command) -> dict[str, click.Option]:
    """The run's visible options by every name a TOML key may give them: the parameter's
    (``results_url``) and each long flag's (``db``, ``cluster_workers``)."""
    out: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden and param.name:
            out[param.name] = param
            for opt in param.opts:
                if opt.startswith("--"):
                    out.setdefault(opt[2:].replace("-", "_"), param)
    return out


def _as_run_checks(campaign: Campaign, values: dict[str, Any]) -> None:
    """What ``tpsbench run`` checks of these values before it opens the database."""
    workload = get_workload(campaign.workload)
    chosen = {**{o.name: str(values[o.name]) for o in workload.run_options}, **waits(values)}
    cluster_workers(values["cluster"], values["cluster_workers"])
    check_text("the notes", values["notes"])
    warmup_seconds(values, campaign.cache, campaign.duration_s, campaign.interval_s)
    step_rates(parse_rates(values["rate"]), campaign.users, chosen)
    workload.configure(chosen)
