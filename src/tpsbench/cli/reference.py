"""``tpsbench reference``: published tables kept in the results store, set beside runs."""

from __future__ import annotations

import click

from tpsbench.cli.options import results_option

#: the option of report and compare that sets a reference's configurations beside the runs
reference_option = click.option(
    "--reference", "references", multiple=True, metavar="NAME",
    help="Set the published table NAME (tpsbench reference add) beside the runs, its configurations "
         "labelled [published]: figures not measured here (repeatable). Alone, without run ids, labels or "
         "--campaign: the references only.")


@click.group()
def reference() -> None:
    """Published tables (TPS, response time, IOPS per user load) to set beside your runs.

    \b
      tpsbench reference add docs/examples/perc-h800-h810.toml --name perc
      tpsbench reference list
      tpsbench compare --reference perc              # the published ratios alone
      tpsbench compare 12 --reference perc           # your run beside them
      tpsbench report 12 --reference perc --format html --output perc.html
      tpsbench reference remove perc
    """


@reference.command()
@click.argument("file", metavar="FILE.csv|FILE.toml")
@click.option("--name", required=True, metavar="NAME", help="What report and compare call it (--reference NAME).")
@results_option
def add(file: str, name: str, results_url: str | None) -> None:
    """Store the published table of FILE as reference NAME.

    A CSV has the columns label, users, tps, response_s (seconds) and source, and may have
    iops and workload; an empty figure is one the table did not publish, an empty source
    repeats the row above's. A TOML file has source (and workload, note) at the top and one
    [[row]] per configuration and user load, with the same keys. The whole file is checked
    first: a missing column, a cell that is not a number, a name already taken is one line
    and nothing is stored.

    \b
      label,users,tps,response_s,iops,source
      PERC H800 + Seagate 15K,300,73.8,0.63,6659,"Lab review, 2012"
      PERC H810 + Toshiba 15K,300,119.9,0.41,14829,
    \b
      tpsbench reference add perc.csv --name perc
    """
    from tpsbench.commands.references import add as add_reference

    rows = add_reference(file, name, results_url)
    labels = len({r.label for r in rows})
    click.echo(f"stored reference {name!r}: {len(rows)} row(s), {labels} configuration(s)")


@reference.command(name="list")
@results_option
def list_references(results_url: str | None) -> None:
    """List the references in the results store: name, rows and source."""
    from tpsbench.results.references import reference_names
    from tpsbench.results.store import ResultsStore

    found = reference_names(ResultsStore(results_url, create=False))
    for name, count, source in found:
        click.echo(f"{name}\t{count} row(s)\t{source}")
    if not found:
        click.echo("no references: add one with `tpsbench reference add FILE.csv --name NAME`")


@reference.command()
@click.argument("name", metavar="NAME")
@results_option
def remove(name: str, results_url: str | None) -> None:
    """Remove reference NAME from the results store (the runs are untouched).

    \b
      tpsbench reference remove perc
    """
    from tpsbench.results.references import remove_reference
    from tpsbench.results.store import ResultsStore

    count = remove_reference(ResultsStore(results_url, create=False), name)
    click.echo(f"removed reference {name!r} ({count} row(s))")
