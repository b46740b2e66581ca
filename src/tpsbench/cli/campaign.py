"""``tpsbench campaign FILE.toml``: the same run on several databases, then side by side."""

from __future__ import annotations

import signal

import click

from tpsbench.cli.options import format_option, metrics_options, results_option
from tpsbench.core.errors import EXIT_CODES


@click.command()
@click.argument("campaign_file", metavar="FILE.toml", type=click.Path(dir_okay=False))
@click.option("--concurrent", is_flag=True,
              help="Run every target at the same time (one database per drive, as the storage reviews ran "
                   "them), each target's I/O read from its own devices. Default: one after another.")
@metrics_options
@results_option
@format_option
def campaign(campaign_file: str, concurrent: bool, metrics_addr: str | None, allow_remote: bool,
             results_url: str | None, fmt: str) -> None:
    """Run one workload on every target of FILE.toml, record the runs under one campaign id,
    and show them side by side; builds first where a target has no build.

    \b
    FILE.toml names the workload, scale, users, rampup, duration and interval once, and
    each database under [[target]] with db = "URL", storage = "NAME" (and data_path);
    no two targets may be one database. [options] sets run options for every target by
    name (processes = 2, think = "off", multiplex = false, mix = "..."): those of
    `tpsbench run WORKLOAD --help`, except what a target or the file's top sets.
    repeat = N runs every target N times: one after another, in rounds (A B C A B C, so
    that a slow drift does not read as a difference between targets); with --concurrent,
    each target's run repeats its own steps, as run --repeat N.
    Ctrl-C (SIGTERM, SIGHUP) ends every run, keeps what finished, starts no further target
    and exits 130 (143, 129).

    \b
      tpsbench campaign pools.toml --concurrent
      tpsbench campaign pools.toml   # with repeat = 3 in it: A B C A B C A B C
      tpsbench report --campaign 3 --format markdown
    """
    from tpsbench.cli.campaign_options import checked_options
    from tpsbench.commands.campaign import run_campaign
    from tpsbench.core.campaign import load_campaign
    from tpsbench.core.errors import TpsbenchError
    from tpsbench.report.table import render

    checked = checked_options(load_campaign(campaign_file), campaign_file)
    outcome = run_campaign(checked, concurrent=concurrent, results_url=results_url,
                           live=lambda line: click.echo(line, err=True), metrics_addr=metrics_addr,
                           allow_remote=allow_remote)
    try:
        runs = outcome.store.campaign_runs(outcome.campaign_id)
    except TpsbenchError:  # no run got as far as being stored: the lines above say why
        runs = []
    if runs:
        click.echo(render([outcome.store.load_run(r.id) for r in runs], format=fmt), nl=fmt != "rich")
    for target in outcome.targets:
        click.echo(f"[{target.storage}] {target.said or f'ended with exit code {target.exit_code}'}")
    click.echo(f"campaign {outcome.campaign_id}: {outcome.status}")
    if outcome.status == "interrupted":
        raise SystemExit(EXIT_CODES[outcome.signal or signal.SIGINT])
    if outcome.status != "completed":
        raise SystemExit(1)
