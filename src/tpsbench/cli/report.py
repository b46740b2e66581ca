"""The reading commands: ``runs``, ``report`` and ``compare`` (they never write)."""

from __future__ import annotations

import click

from tpsbench.cli.options import campaign_option, force_option, output_option, results_option, storage_option
from tpsbench.cli.reference import reference_option
from tpsbench.report.progress import make_console

FORMATS = ["rich", "markdown", "csv", "json", "html"]


def emit(text: str, output: str | None, kind: str, force: bool) -> None:
    """To ``output`` when given (said on stderr; tpsbench.report.output refuses a file it
    would destroy), else to the terminal."""
    if output is None:
        click.echo(text, nl=kind != "report --format rich" and not text.endswith("\n"))
        return
    from tpsbench.report.output import write_output

    written = write_output(output, text, kind, force)
    click.echo(f"wrote {output} ({written:,} bytes)", err=True)


def refuse_bad_output(output: str | None, kind: str, force: bool) -> None:
    """Refuse a bad --output (or --force without it) before the store is read."""
    from tpsbench.core.errors import TpsbenchError
    from tpsbench.report.output import check_output

    if output is None:
        if force:
            raise TpsbenchError("--force only applies with --output FILE")
        return
    check_output(output, kind, force)


@click.command()
@click.argument("run_ids", nargs=-1, type=int)
@campaign_option
@storage_option
@reference_option
@results_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="rich", show_default=True,
              help="rich for the terminal, markdown for a review, csv for a sheet, json with everything the "
                   "store has (schema tpsbench-report/2; /3 with runs of --repeat), html: one file with charts "
                   "that opens offline.")
@output_option
@force_option
@click.option("--txns", is_flag=True,
              help="Add each transaction type's rows: TPS, realised mix, avg, p95 and p99 latency, errors.")
@click.option("--review", is_flag=True,
              help="Only the two rows storage reviews publish, TPS and Resp. time (s), with their one decimal "
                   "(otherwise response times get the digits that keep them non-zero).")
def report(run_ids: tuple[int, ...], campaign_id: int | None, labels: tuple[str, ...], references: tuple[str, ...],
           results_url: str | None, fmt: str, output: str | None, force: bool, txns: bool, review: bool) -> None:
    """Show runs side by side (default: the latest), one block per storage configuration.

    Each block has the user loads across and TPS, response time in seconds, the latency
    percentiles, the workload's metric (tpmC), errors, what limited each step ("Limited
    by": storage, server CPU, driver CPU, locks, ...), whether it reached steady state by
    the SNIA criterion ("Steady state (SNIA)": over the last 5 steady intervals, TPS and p95
    each within 20% max - min and 10% least-squares slope of their average; "too few
    intervals to judge" below 5), the I/O, host CPU and database
    counters read beside each step and the I/O per transaction; then what the data cannot
    support, as warnings (with two runs or more: that no step was limited by storage, in
    every format: on stderr for markdown, csv and json).

    \b
      tpsbench report 3 4 --format markdown
      tpsbench report 3 4 --format markdown --review     # the table a review publishes
      tpsbench report --txns                             # per transaction type too
      tpsbench report --campaign 1 --format html --output pools.html
      tpsbench report --format csv --output notes.csv --force   # replace a file not a report
      tpsbench report --storage "RAID10 8x SSHD" --storage "RAID10 10K SAS"
      tpsbench report 3 --reference perc --format markdown   # beside a published table
    """
    if review and (txns or fmt in ("json", "html")):
        from tpsbench.core.errors import TpsbenchError

        raise TpsbenchError("--review is the published two-row table: use it with --format rich, markdown "
                            "or csv and without --txns")
    if references and fmt == "json":
        from tpsbench.core.errors import TpsbenchError

        raise TpsbenchError("--reference is not for --format json, whose runs are measured ones: "
                            "use markdown, csv, html or rich")
    refuse_bad_output(output, f"report --format {fmt}", force)
    from tpsbench.commands.references import selected_with_references
    from tpsbench.results.store import ResultsStore

    store = ResultsStore(results_url, create=False)
    from tpsbench.report.rounds import merge_rounds

    runs, histograms = merge_rounds(selected_with_references(store, run_ids, campaign_id, labels, references),
                                    store.load_histogram)
    if fmt == "json":
        from tpsbench.report.export import load_histograms, to_json

        text = to_json(runs, load_histograms(store, runs, histograms))
    elif fmt == "html":
        from tpsbench.report.html import to_html

        text = to_html(runs, histograms=histograms, txns=txns)
    else:
        from tpsbench.report.environment import to_text as environment_text
        from tpsbench.report.table import render
        from tpsbench.report.warnings import warnings
        from tpsbench.results.references import measured_only, source_lines

        text = render(runs, format=fmt, review=review, txns=txns, histograms=histograms)
        if fmt != "csv" and not review and (differ := environment_text(runs)):
            text += "\n" + differ
        if fmt == "rich" and not review:
            text += "".join(f"WARNING: {line}\n" for line in warnings(measured_only(runs)))
        text += "".join(f"{line}\n" for line in source_lines(runs)) if fmt != "csv" else ""
    if fmt in ("markdown", "csv", "json") and not review:
        from tpsbench.report.limits import not_storage_warning

        if (warning := not_storage_warning(runs)) is not None:
            click.echo(f"WARNING: {warning}", err=True)
    emit(text, output, f"report --format {fmt}", force)


@click.command()
@click.argument("runs_or_labels", nargs=-1, metavar="RUN_OR_LABEL...")
@campaign_option
@click.option("--workload", default=None, metavar="WORKLOAD", help="Only runs of this workload, e.g. tpcc.")
@reference_option
@results_option
@output_option
@force_option
def compare(runs_or_labels: tuple[str, ...], campaign_id: int | None, workload: str | None,
            references: tuple[str, ...], results_url: str | None, output: str | None, force: bool) -> None:
    """Compare storage configurations side by side, with ratios against the first.

    Each RUN_OR_LABEL is a run id or a storage label (its latest completed run); without
    any, every label in the store. The last lines say it as a review does:
    "H810 vs H800 at 300 users: +62% TPS (95% CI +55% to +69%), +123% IOPS, -35% avg
    latency", and a warning when no compared step was limited by storage (the difference
    is then not the storage's).

    Every TPS ratio carries its 95% confidence interval, from the two steps' steady
    intervals cut into 5 batches (batch means absorb one interval's noise carrying into the
    next); a difference whose interval holds 1.0 is "within the noise". A step needs 3
    steady intervals or more for one: run steps longer, or with a shorter --interval.

    \b
      tpsbench compare "RAID10 10K SAS" "RAID10 8x SSHD"
      tpsbench compare 3 4
      tpsbench compare --campaign 1 --output pools.txt
      tpsbench compare 3 --reference perc     # run 3 against a published table (3 is the baseline)
      tpsbench compare --reference perc       # the published table's own ratios
    """
    from tpsbench.commands.references import selected_with_references
    from tpsbench.report.compare import compare as comparison_of
    from tpsbench.report.compare import summary_lines, to_text
    from tpsbench.report.environment import to_text as environment_text
    from tpsbench.report.limits import not_storage_warning
    from tpsbench.report.table import render
    from tpsbench.results.references import source_lines
    from tpsbench.results.store import ResultsStore

    refuse_bad_output(output, "compare", force)
    store = ResultsStore(results_url, create=False)
    ids = [int(arg) for arg in runs_or_labels if arg.isdigit()]
    labels = [arg for arg in runs_or_labels if not arg.isdigit()]
    from tpsbench.report.rounds import merge_rounds

    runs, _ = merge_rounds(selected_with_references(store, ids, campaign_id, labels, references, workload=workload,
                                                    default="labels"))
    comparison = comparison_of(runs)
    warning = not_storage_warning(runs)  # before the ratios it qualifies; the review's sentences stay last
    differ = environment_text(runs)  # what else differs, before the review's sentences
    lines = [*([f"WARNING: {warning}"] if warning is not None else []), to_text(comparison),
             *([differ] if differ else []), *summary_lines(comparison), *source_lines(runs)]
    emit(render(runs) + "".join(f"{line}\n" for line in lines), output, "compare", force)


@click.command()
@results_option
def runs(results_url: str | None) -> None:
    """List the runs in the results store."""
    from rich.table import Table

    from tpsbench.results.store import ResultsStore

    table = Table(title="runs", title_justify="left")
    for header in ("id", "workload", "storage", "status", "started", "database"):
        table.add_column(header)
    store = ResultsStore(results_url, create=False)
    for r in store.list_runs():
        table.add_row(str(r.id), r.workload, r.storage, r.status, f"{r.started_at:%Y-%m-%d %H:%M}", r.db_url)
    make_console().print(table)
    for line in store.unreadable:
        click.echo(f"WARNING: {line}", err=True)
