"""The ``tpsbench`` command: a thin layer over :mod:`tpsbench.commands`.

Every command parses its options, calls one API function and prints the outcome.
Errors the user can fix (bad input, unreachable database, existing tables) end in one
line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import sys

import click
from rich.table import Table

from tpsbench import __version__
from tpsbench.cli import run as cli_run
from tpsbench.core.errors import CheckFailed, Terminated, TpsbenchError
from tpsbench.core.parse import parse_options, parse_scale
from tpsbench.core.redact import scrub_text
from tpsbench.core.workload import Workload
from tpsbench.report.progress import make_console
from tpsbench.targets import DEFAULT_URL, ENV_VAR
from tpsbench.workloads import get_workload

DB_HELP = f"SQLAlchemy URL of the database, e.g. postgresql://postgres@127.0.0.1/tpcc [env {ENV_VAR}; default {DEFAULT_URL}]"

db_option = click.option("--db", "url", envvar=ENV_VAR, default=None, metavar="URL", help=DB_HELP)
workload_argument = click.argument("workload", metavar="WORKLOAD")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="tpsbench")
def cli() -> None:
    """Build, run, check and report OLTP benchmarks (TPC-C-like, TPC-E-like, sysbench).

    \b
    A typical session on PostgreSQL:
      tpsbench build tpcc --scale 10 --db postgresql://postgres@127.0.0.1/tpcc
      tpsbench check tpcc --db postgresql://postgres@127.0.0.1/tpcc
    """


BUILD_HELP = """Create and load the {name} database at a scale factor ({unit}).

Tables and primary keys first, then the data through the database's bulk path
(COPY, LOAD DATA, executemany) from parallel processes, then secondary indexes and
statistics. Existing tables are never touched without --drop-existing.
"""


def _make_build_command(cls: type[Workload]) -> click.Command:
    """``build <workload>``: the common options, ``--scale`` also under the workload's own
    word for it (``--warehouses``, ``--tables``), and the workload's build options as flags
    (sysbench's ``--table-size``), so that a sysbench user types what sysbench takes."""
    name, unit = cls.name, cls.scale_unit

    def command(scale: str, url: str | None, workers: int | None, seed: int, drop_existing: bool,
                options: tuple[str, ...], **flags: str | None) -> None:
        from tpsbench.commands.build import build as run_build

        chosen = parse_options(options)
        chosen.update({key: value for key, value in flags.items() if value is not None})
        result = run_build(name, parse_scale(scale, cls.scale_factors().get("presets")), url, workers=workers, seed=seed,
                           drop_existing=drop_existing, options=chosen)
        total = sum(result.rows.values())
        click.echo(f"built {result.workload} scale {result.scale} (seed {result.seed}): {total:,} rows "
                   f"in {result.seconds:.1f} s with {result.workers} worker(s)")

    for option in reversed(cls.build_options):
        command = cli_run.workload_option(option, unset=True)(command)
    decorators = [
        click.option("--scale", f"--{unit}", "scale", required=True, metavar="N|PRESET",
                     help=f"Size: {unit}, or a preset name (tpsbench presets {name})."),
        db_option,
        click.option("--workers", type=int, default=None, metavar="K",
                     help="Loader processes (default: one per core). The data does not depend on it."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Random seed: the same seed builds the same data."),
        click.option("--drop-existing", is_flag=True, help="Replace the workload's tables if they exist."),
        click.option("-o", "--option", "options", multiple=True, metavar="NAME=VALUE",
                     help="A build option as NAME=VALUE, repeatable (the flags below say the same)."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return click.command(name=name, help=BUILD_HELP.format(name=name, unit=unit),
                         short_help=f"Build {name} at a scale in {unit}.")(command)


@cli.group(cls=cli_run.WorkloadGroup, make_command=_make_build_command)
def build() -> None:
    """Create and load WORKLOAD's database at a scale factor (tpsbench build WORKLOAD --help).

    \b
      tpsbench build tpcc --warehouses 10 --db postgresql://postgres@127.0.0.1/tpcc
      tpsbench build sysbench --tables 10 --table-size 100000
    """


@cli.command()
@workload_argument
@db_option
def drop(workload: str, url: str | None) -> None:
    """Drop WORKLOAD's own tables (and nothing else) from the database."""
    from tpsbench.commands.build import drop as run_drop

    dropped = run_drop(workload, url)
    click.echo(f"dropped {len(dropped)} {workload} table(s)" + (f": {', '.join(dropped)}" if dropped else ""))


@cli.command()
@workload_argument
@db_option
def check(workload: str, url: str | None) -> None:
    """Verify WORKLOAD's consistency conditions (TPC-C: all twelve of clause 3.3.2).

    Conditions that hold only right after a build (TPC-C's 11th) are skipped once a
    run has changed the data. Exits non-zero when any condition fails.
    """
    from tpsbench.commands.check import check as run_check

    results = run_check(workload, url)
    table = Table(title=f"{workload} consistency", title_justify="left")
    for header in ("#", "condition", "result", "violating rows"):
        table.add_column(header)
    for r in results:
        verdict = "skipped" if r.violations is None else ("pass" if r.passed else "FAIL")
        count = r.skipped_because if r.violations is None else str(r.violations)
        table.add_row(str(r.number), r.title, verdict, count)
    make_console().print(table)
    failed = [r.number for r in results if r.violations]
    if failed:
        raise CheckFailed(f"{len(failed)} condition(s) failed: {', '.join(map(str, failed))}")


@cli.command()
@workload_argument
@click.option("--scale", required=True, metavar="N|PRESET", help="Warehouses (tpcc) or a preset name.")
@db_option
def size(workload: str, scale: str, url: str | None) -> None:
    """Estimate the on-disk size of WORKLOAD built at --scale on the database at --db.

    Uses per-scale sizes measured on each engine (the workload's scale_factors.toml).
    """
    from tpsbench.commands.build import estimate_size

    presets = type(get_workload(workload)).scale_factors().get("presets")
    estimate = estimate_size(workload, parse_scale(scale, presets), url)
    click.echo(f"{workload} scale {estimate.scale} on {estimate.dialect}: about {_human(estimate.megabytes)} "
               f"({estimate.basis})")


@cli.command()
@workload_argument
def presets(workload: str) -> None:
    """List WORKLOAD's named scale presets."""
    for name, entry in type(get_workload(workload)).scale_factors().get("presets", {}).items():
        click.echo(f"{name:10} {entry['scale']:>6}  {entry.get('note', '')}")


for _command in (cli_run.run, cli_run.report, cli_run.compare, cli_run.runs):
    cli.add_command(_command)


def _human(megabytes: float) -> str:
    return f"{megabytes / 1024:,.1f} GB" if megabytes >= 1024 else f"{megabytes:,.0f} MB"


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn user-fixable errors into one line and an exit code."""
    try:
        cli.main(args=argv, prog_name="tpsbench", standalone_mode=False)
    except TpsbenchError as exc:
        click.echo(f"tpsbench: error: {scrub_text(str(exc))}", err=True)  # the last guard: no password shown
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:  # click's wrapping of a KeyboardInterrupt
        terminated = isinstance(exc.__cause__ or exc.__context__, Terminated)
        click.echo(f"tpsbench: {'terminated' if terminated else 'interrupted'}", err=True)
        sys.exit(143 if terminated else 130)
    except click.ClickException as exc:
        click.echo(f"tpsbench: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except Terminated:
        click.echo("tpsbench: terminated", err=True)
        sys.exit(143)
    except KeyboardInterrupt:
        click.echo("tpsbench: interrupted", err=True)
        sys.exit(130)
