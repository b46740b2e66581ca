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
from tpsbench.cli import build as cli_build
from tpsbench.cli import bundle as cli_bundle
from tpsbench.cli import campaign as cli_campaign
from tpsbench.cli import plan as cli_plan
from tpsbench.cli import reference as cli_reference
from tpsbench.cli import report as cli_report
from tpsbench.cli import run as cli_run
from tpsbench.cli import serve as cli_serve
from tpsbench.cli.options import db_option
from tpsbench.cli.replay import capture as capture_command
from tpsbench.cli.replay import replay as replay_command
from tpsbench.core.errors import EXIT_CODES, SAID, CheckFailed, TpsbenchError, interruption_for, signal_of, take_signal
from tpsbench.core.redact import scrub_text
from tpsbench.report.progress import make_console
from tpsbench.workloads import get_workload

workload_argument = click.argument("workload", metavar="WORKLOAD")
#: the file a workload defined by one takes (custom's --file), for the commands that take
#: no workload options of their own
file_option = click.option("--file", "workload_file", default=None, metavar="FILE",
                           help="The workload's own file, for a workload defined by one (custom: its TOML file).")
#: what click (8.2 and later) raises for a bare group (``tpsbench``, ``tpsbench run``):
#: its message is the group's help, to be shown as help and not as an error line
BARE_GROUP = getattr(click.exceptions, "NoArgsIsHelpError", ())


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="tpsbench")
def cli() -> None:
    """Build, run, check and report OLTP benchmarks (TPC-C-like, TPC-E-like, sysbench).

    \b
    A typical session on PostgreSQL:
      tpsbench build tpcc --scale 10 --db postgresql://postgres@127.0.0.1/tpcc
      tpsbench run tpcc --users 1,20,50 --duration 5m --db postgresql://postgres@127.0.0.1/tpcc
      tpsbench check tpcc --db postgresql://postgres@127.0.0.1/tpcc
    """


def file_options(path: str | None) -> dict[str, str]:
    """--file as the workload's option ``file``, when given."""
    return {} if path is None else {"file": path}


@cli.command()
@workload_argument
@db_option
@file_option
@click.option("--force", is_flag=True,
              help="Drop even though a run is marked active on the tables (the run is gone and its mark is stale).")
def drop(workload: str, url: str | None, workload_file: str | None, force: bool) -> None:
    """Drop WORKLOAD's own tables (and nothing else) from the database.

    Refused while a run is active on them: the message names the run and when it started.

    \b
      tpsbench drop tpcc --db postgresql://postgres@127.0.0.1/tpcc
      tpsbench drop tpcc --db sqlite:///tpcc.db --force   # the run that marked it is gone
    """
    from tpsbench.commands.build import drop as run_drop

    dropped = run_drop(workload, url, options=file_options(workload_file), force=force)
    click.echo(f"dropped {len(dropped)} {workload} table(s)" + (f": {', '.join(dropped)}" if dropped else ""))


@cli.command()
@workload_argument
@db_option
@file_option
def check(workload: str, url: str | None, workload_file: str | None) -> None:
    """Verify WORKLOAD's consistency conditions (TPC-C: all twelve of clause 3.3.2).

    Conditions that hold only right after a build (TPC-C's 11th) are skipped once a
    run has changed the data. Exits non-zero when any condition fails.
    """
    from tpsbench.commands.check import check as run_check

    results = run_check(workload, url, options=file_options(workload_file))
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
def presets(workload: str) -> None:
    """List WORKLOAD's named scales, which --scale takes as well as a number."""
    cls = type(get_workload(workload))
    named = cls.scale_factors().get("presets", {})
    for name, entry in named.items():
        click.echo(f"{name:10} {entry['scale']:>6}  {entry.get('note', '')}")
    if not named:
        click.echo(f"{workload} has no named scales: --scale takes a number of {cls.scale_unit}")


for _command in (cli_build.build, cli_build.size, cli_run.run, cli_report.report, cli_report.compare,
                 cli_report.runs, cli_campaign.campaign, cli_plan.plan, cli_serve.serve,
                 cli_bundle.export, cli_bundle.import_, cli_reference.reference):
    cli.add_command(_command)

cli.add_command(capture_command)
cli.add_command(replay_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn user-fixable errors into one line and an exit code."""
    try:
        cli.main(args=argv, prog_name="tpsbench", standalone_mode=False)
        if (swallowed := take_signal()) is not None:  # a library caught the KeyboardInterrupt
            raise interruption_for(swallowed)
    except TpsbenchError as exc:
        click.echo(f"tpsbench: error: {scrub_text(str(exc))}", err=True)  # the last guard: no password shown
        sys.exit(exc.exit_code)
    except BARE_GROUP as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"tpsbench: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, Exception) as exc:  # click.exceptions.Abort included
        interruption = _interruption(exc)
        if interruption is None:
            raise
        signum = signal_of(interruption)
        try:
            click.echo(f"tpsbench: {SAID[signum]}", err=True)
        except OSError:  # SIGHUP: the terminal may be gone
            pass
        sys.exit(EXIT_CODES[signum])


def _interruption(exc: BaseException) -> BaseException | None:
    """The Ctrl-C, SIGTERM or SIGHUP behind ``exc``, which is then an interruption rather than
    a bug: the KeyboardInterrupt itself (tpsbench.core.errors.interruption_for), or the one it came from
    (click turns one into Abort; Python 3.11 turns one raised in a class's ``__set_name__``,
    as dataclasses' fields have, into a RuntimeError), or Abort itself (click's other
    reason for it is the end of input at a prompt)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return exc if isinstance(exc, click.exceptions.Abort) else None
