"""``tpsbench export`` and ``tpsbench import``: result bundles, one file per set of runs."""

from __future__ import annotations

import click

from tpsbench.cli.options import campaign_option, results_option


@click.command("export")
@click.argument("run_ids", nargs=-1, type=int, metavar="RUN...")
@campaign_option
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The bundle to write; refused if FILE exists.")
@results_option
def export(run_ids: tuple[int, ...], campaign_id: int | None, output: str, results_url: str | None) -> None:
    """Write runs to one result bundle FILE that anyone can read, check and import.

    The bundle is a small SQLite results store holding only these runs (and their
    campaign): each run's configuration and seed, workload and scale, versions, server
    settings, host facts, storage description and detection, every step, interval,
    histogram, observer reading, error sample and the honesty check; with a manifest of
    SHA-256 digests that `tpsbench import` checks. No password or URL user info is in it.
    `report`, `compare`, `plan` and `serve` read it as it is with --results FILE.

    \b
      tpsbench export 3 4 -o pools.tpsbench
      tpsbench export --campaign 1 -o raid10.tpsbench --results postgresql://bench@db1/results
      tpsbench report --results pools.tpsbench --format markdown
    """
    from tpsbench.commands.bundle import export_runs

    bundle = export_runs(run_ids, campaign_id, output, results_url)
    click.echo(f"wrote {output}: run(s) {', '.join(map(str, bundle.runs))}, digest {bundle.digest}")


@click.command("import")
@click.argument("path", metavar="FILE")
@results_option
def import_(path: str, results_url: str | None) -> None:
    """Add the runs and campaigns of the result bundle FILE to the results store.

    They get new ids in the store; each keeps where it came from in its config
    (imported_from: the bundle's digest, the original run and campaign ids, the host that
    exported it). Refused in one line, the store unchanged, when FILE is not a bundle, is
    truncated, does not match its digests, is of a newer format, or was imported into
    this store already.

    \b
      tpsbench import pools.tpsbench
      tpsbench import pools.tpsbench --results mysql://bench@db1/results
    """
    from tpsbench.commands.bundle import import_runs

    done = import_runs(path, results_url)
    for old, new in done.runs.items():
        click.echo(f"run {old} of {path} is run {new}")
    for old, new in done.campaigns.items():
        click.echo(f"campaign {old} of {path} is campaign {new}")
