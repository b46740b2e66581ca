"""``tpsbench run WORKLOAD`` and the commands that read the results store.

``run`` has one subcommand per workload, so that each workload's own options (TPC-C's
--think and --warehouses, sysbench's --mode ...) appear in its --help, generated from
the options the workload declares.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import click

from tpsbench.core.parse import parse_duration, parse_scale, parse_users
from tpsbench.core.workload import Option, Workload
from tpsbench.report.progress import make_console
from tpsbench.workloads import workload_classes

RESULTS_HELP = "SQLAlchemy URL of the results store [env TPSBENCH_RESULTS; default sqlite:///tpsbench-results.db]"
results_option = click.option("--results", "results_url", envvar="TPSBENCH_RESULTS", default=None, metavar="URL",
                              help=RESULTS_HELP)
FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["rich", "markdown", "csv"]), default="rich",
                             show_default=True, help="Table for the terminal, Markdown for a review, CSV for a sheet.")


def common_run_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every workload's run takes: the user-load steps and their timing."""
    decorators = [
        click.option("--db", "url", envvar="TPSBENCH_DB", default=None, metavar="URL",
                     help="SQLAlchemy URL of the database [env TPSBENCH_DB; default sqlite:///tpsbench.db]."),
        click.option("--users", default="1,20,50,100,300", show_default=True, metavar="N,N,...",
                     help="Virtual users of each step, run one step after the other."),
        click.option("--rampup", default="30s", show_default=True,
                     help="Per step: users connect spread over this time; not measured."),
        click.option("--duration", default="2m", show_default=True,
                     help="Per step: the steady-state window that alone is measured (s, m, h)."),
        click.option("--interval", default="10s", show_default=True, help="Live line and stored interval length."),
        click.option("--storage", default="", metavar="LABEL",
                     help="Name of the storage configuration under test, e.g. 'RAID10 8x SSHD'."),
        click.option("--workers", type=click.IntRange(min=1), default=None, metavar="K",
                     help="Driver processes hosting the users, every step spread over all of them. Default: at"
                          " most one per core, and for TPC-C with stored procedures one per 100 users of a step"
                          " (fuller workers take less CPU from a database on the same cores)."),
        click.option("--multiplex/--no-multiplex", default=True, show_default=True,
                     help="Let one thread per worker wait on the sockets of all its users whose transactions go"
                          " statement by statement through libpq or mysqlclient (TPC-C with stored procedures,"
                          " every sysbench mode): less client CPU per transaction than a thread per user."
                          " --no-multiplex gives every user a thread of its own."),
        click.option("--seed", type=int, default=None, help="Random seed (default: drawn, and stored with the run)."),
        click.option("--force", is_flag=True,
                     help="Run even while another run is active on the same database (both honesty checks then"
                          " fail: each counts the other's commits)."),
        click.option("--notes", default="", help="Free text stored with the run."),
        click.option("--build-if-missing", "build_scale", default=None, metavar="SCALE",
                     help="Build the workload at SCALE first when the database has no build of it."),
        results_option,
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def workload_option(option: Option, unset: bool = False) -> Callable[..., Any]:
    """``--NAME`` for a workload's declared option. ``unset``: the flag is None unless
    given (build lets ``-o NAME=VALUE`` stand then), its help naming the default."""
    kind = click.Choice(option.choices) if option.choices else str
    if unset:
        return click.option(f"--{option.name.replace('_', '-')}", option.name, type=kind, default=None,
                            help=f"{option.help} [default: {option.default}]")
    return click.option(f"--{option.name.replace('_', '-')}", option.name, type=kind, default=option.default,
                        show_default=True, help=option.help)


#: the honesty check's verdict as the last line says it (None: no step's counts came back)
HONESTY = {True: "matches", False: "FAILED", None: "skipped (no step finished)"}


def _make_run_command(cls: type[Workload]) -> click.Command:
    """``run <workload>``: the common options and the workload's own, from its declaration."""
    name, options = cls.name, cls.run_options
    doc = (cls.__doc__ or f"Run the {cls.name} workload.").strip()

    def command(**values: Any) -> None:
        from tpsbench.commands.run import RunConfig, run
        from tpsbench.report.table import render

        config = RunConfig(
            workload=name, url=values["url"], users=parse_users(values["users"]),
            rampup_s=parse_duration(values["rampup"]), duration_s=parse_duration(values["duration"]),
            interval_s=parse_duration(values["interval"]), storage=values["storage"], workers=values["workers"],
            seed=values["seed"], options={o.name: str(values[o.name]) for o in options},
            results_url=values["results_url"], notes=values["notes"],
            build_scale=None if values["build_scale"] is None else parse_scale(
                values["build_scale"], cls.scale_factors().get("presets")),
            multiplex=values["multiplex"], force=values["force"],
        )
        record = run(config, live=lambda line: click.echo(line, err=True))
        click.echo(render([record.store.load_run(record.run_id)]), nl=False)
        short = [str(step.step) for step in record.outcome.steps if step.problems]
        click.echo(f"run {record.run_id}: {record.status}"
                   f"{'; step ' + ', '.join(short) + ' ran short of its plan (PROBLEM above)' if short else ''}"
                   f"; honesty check {HONESTY[record.honesty['match']]}")
        if record.status == "interrupted":
            raise SystemExit(143 if record.outcome.signal == signal.SIGTERM else 130)
        if not record.honesty["match"] or record.status != "completed" or short:
            raise SystemExit(1)

    for option in reversed(options):
        command = workload_option(option)(command)
    return click.command(name=name, help=doc)(common_run_options(command))


class WorkloadGroup(click.Group):
    """A command with one subcommand per discovered workload (``run``, ``build``), made
    by ``make_command(workload class)`` so that each shows its workload's own options."""

    def __init__(self, *args: Any, make_command: Callable[[type[Workload]], click.Command], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.make_command = make_command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(workload_classes())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cls = workload_classes().get(name.lower())
        if cls is None:
            raise click.UsageError(f"unknown workload {name!r}; known: {', '.join(sorted(workload_classes()))}")
        return self.make_command(cls)


@click.group(cls=WorkloadGroup, make_command=_make_run_command)
def run() -> None:
    """Run WORKLOAD at stepped user loads and record every step in the results store.

    \b
    Each step: users connect spread over --rampup, then the --duration window is
    measured; a live line prints every --interval; at the end, a table with user loads
    across and TPS, response times and percentiles down, and the host's CPU.

    \b
      tpsbench run tpcc --users 1,20,50 --duration 5m --storage "RAID10 8x SSHD"
      tpsbench run tpcc --think spec --delivery deferred   # TPC-C's queued Delivery
      tpsbench run sysbench --mode oltp_read_only --users 8,16
      tpsbench run tpcc --force     # even while another run is active on the database
      TPSBENCH_WORKLOADS=~/my-workloads tpsbench run kvtoy   # a workload of your own
    """


@click.command()
@click.argument("run_ids", nargs=-1, type=int)
@results_option
@FORMAT_OPTION
def report(run_ids: tuple[int, ...], results_url: str | None, fmt: str) -> None:
    """Show runs side by side (default: the latest), one block per run.

    Give several RUN_IDS, one per storage configuration, to compare them.
    """
    from tpsbench.core.errors import TpsbenchError
    from tpsbench.report.table import render
    from tpsbench.results.store import ResultsStore

    store = ResultsStore(results_url, create=False)
    ids = list(run_ids) or [r.id for r in store.list_runs()[-1:]]
    if not ids:
        raise TpsbenchError("the results store has no runs yet: run one with `tpsbench run tpcc`")
    click.echo(render([store.load_run(i) for i in ids], format=fmt), nl=fmt != "rich")


@click.command()
@click.argument("labels", nargs=-1)
@click.option("--workload", default=None, help="Only runs of this workload.")
@results_option
@FORMAT_OPTION
def compare(labels: tuple[str, ...], workload: str | None, results_url: str | None, fmt: str) -> None:
    """Compare storage configurations: the latest completed run of each LABEL side by side.

    Without LABELS, every storage label in the store.
    """
    from tpsbench.core.errors import TpsbenchError
    from tpsbench.report.table import render
    from tpsbench.results.store import ResultsStore

    store = ResultsStore(results_url, create=False)
    latest: dict[str, int] = {}
    for r in store.list_runs():
        if r.status == "completed" and (workload is None or r.workload == workload):
            latest[r.storage] = r.id
    wanted = list(labels) or sorted(latest)
    missing = [label for label in wanted if label not in latest]
    if missing or not wanted:
        raise TpsbenchError(f"no completed run for storage label(s) {', '.join(missing) or '(none in store)'}")
    click.echo(render([store.load_run(latest[label]) for label in wanted], format=fmt), nl=fmt != "rich")


@click.command()
@results_option
def runs(results_url: str | None) -> None:
    """List the runs in the results store."""
    from rich.table import Table

    from tpsbench.results.store import ResultsStore

    table = Table(title="runs", title_justify="left")
    for header in ("id", "workload", "storage", "status", "started", "database"):
        table.add_column(header)
    for r in ResultsStore(results_url, create=False).list_runs():
        table.add_row(str(r.id), r.workload, r.storage, r.status, f"{r.started_at:%Y-%m-%d %H:%M}", r.db_url)
    make_console().print(table)
