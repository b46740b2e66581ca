"""What the commands share: their common options, typed for --help, and the group with
one subcommand per workload (``run``, ``build``, ``size``).

Every option that takes a value names its kind (URL, DURATION, N, LIST, SCALE, SEED ...)
instead of click's TEXT or INTEGER, so that --help teaches what to type;
tests/test_cli_help.py walks every command and holds them all to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

from tpsbench.core.parse import parse_options, parse_scale
from tpsbench.core.workload import Option, Workload
from tpsbench.targets import DEFAULT_URL, ENV_VAR
from tpsbench.workloads import workload_classes

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

#: how a duration is written, said once in the help of every duration option
DURATION_FORM = "DURATION like 30s, 5m or 1h"


def stack(*decorators: Decorator) -> Decorator:
    """The decorators applied as if written one above the other, the first on top, so
    that --help lists their options in the order given."""
    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func
    return apply


db_option = click.option("--db", "url", envvar=ENV_VAR, default=None, metavar="URL",
                         help=f"SQLAlchemy URL of the database, e.g. postgresql://postgres@127.0.0.1/tpcc;"
                              " through PgBouncer add its pool mode, ?pool_mode=transaction, and nothing is"
                              f" prepared [env {ENV_VAR}; default {DEFAULT_URL}].")
results_option = click.option("--results", "results_url", envvar="TPSBENCH_RESULTS", default=None, metavar="URL",
                              help="SQLAlchemy URL of the results store, or the path of a SQLite one; a result bundle"
                                   " (tpsbench export) is read by path too, never written"
                                   " [env TPSBENCH_RESULTS; default sqlite:///tpsbench-results.db].")
#: which runs a reading command is about (tpsbench.commands.selection), beside RUN_IDS
campaign_option = click.option("--campaign", "campaign_id", type=int, default=None, metavar="ID",
                               help="The runs of campaign ID, in the order of its targets.")
storage_option = click.option("--storage", "labels", multiple=True, metavar="LABEL",
                              help="The latest completed run of storage configuration LABEL (repeatable).")
#: where a reading command writes instead of the terminal (tpsbench.report.output guards it)
output_option = click.option("--output", default=None, metavar="FILE",
                             help="Write to FILE instead of the terminal. An existing FILE is replaced only when it "
                                  "is an earlier output of the same command and format; a SQLite database never is.")
force_option = click.option("--force", is_flag=True,
                            help="With --output: replace an existing FILE that is not an earlier output of this "
                                 "kind (never a SQLite database: a results store or a benchmark database).")
format_option = click.option("--format", "fmt", type=click.Choice(["rich", "markdown", "csv"]), default="rich",
                             show_default=True, help="Table for the terminal, Markdown for a review, CSV for a sheet.")


metrics_options = stack(
    click.option("--metrics-addr", default=None, metavar="[HOST:]PORT",
                 help="While it lasts, serve the figures to Prometheus at http://HOST:PORT/metrics (127.0.0.1"
                      " when only a port is given): transactions, retries and latency histograms per"
                      " transaction type, the current step and users, and the step observers' latest readings,"
                      " each sample stamped with its interval's end (a campaign serves all its runs there)."
                      " Needs the live extra (pip install 'tpsbench[live]')."),
    click.option("--allow-remote", is_flag=True,
                 help="Let --metrics-addr bind an address other hosts can reach (the endpoint has no"
                      " authentication; by default only this host's loopback is accepted)."),
)


def duration_option(name: str, default: str, help: str) -> Decorator:
    """``--NAME DURATION``, its help ending in how a duration is written."""
    return click.option(f"--{name}", default=default, show_default=True, metavar="DURATION",
                        help=f"{help} A {DURATION_FORM}.")


def scale_option(cls: type[Workload], purpose: str, required: bool = True, alias: bool = True,
                 default: int | None = None) -> Decorator:
    """``--scale SCALE``: a number of the workload's units or a preset name, the one
    spelling of a scale in every command. ``alias``: also under the workload's own word
    for it where that is one word and no build option's name (``--warehouses`` for
    TPC-C, ``--tables`` for sysbench), so that a HammerDB or sysbench user types what
    those tools take. ``default``: the scale when none is given (then not required)."""
    unit = cls.scale_unit
    taken = {option.name for option in cls.build_options}
    names = ["--scale"]
    if alias and re.fullmatch(r"[a-z][a-z0-9-]*", unit) and unit.replace("-", "_") not in taken:
        names.append(f"--{unit}")
    # no default at all unless there is one: click takes an explicit None for a value given
    given: dict[str, Any] = {} if default is None else {"default": str(default), "show_default": True}
    return click.option(*names, "scale", required=required and default is None, metavar="SCALE", **given,
                        help=f"{purpose}: a number of {unit}, or a preset name (tpsbench presets {cls.name}).")


def scale_of(cls: type[Workload], text: str) -> int:
    """The scale ``--scale`` names: a whole number, or one of the workload's presets."""
    return parse_scale(text, cls.scale_factors().get("presets"))


def _metavar(option: Option) -> str | None:
    """What a workload's option takes, told by its default: N for a whole number, NUMBER
    for a decimal one, VALUE for anything else (FILE for an option called file); None
    where click lists the choices."""
    if option.choices:
        return None
    if option.name == "file":
        return "FILE"
    if re.fullmatch(r"\d+", option.default):
        return "N"
    return "NUMBER" if re.fullmatch(r"\d*\.\d+", option.default) else "VALUE"


def workload_option(option: Option, unset: bool = False) -> Decorator:
    """``--NAME`` for a workload's declared option. ``unset``: the flag is None unless
    given (build lets ``-o NAME=VALUE`` stand then), its help naming the default."""
    flag, metavar = f"--{option.name.replace('_', '-')}", _metavar(option)
    kind = click.Choice(option.choices) if option.choices else str
    if unset:
        suffix = f" [default: {option.default}]" if option.default else ""
        return click.option(flag, option.name, type=kind, default=None, metavar=metavar, help=option.help + suffix)
    return click.option(flag, option.name, type=kind, default=option.default, metavar=metavar,
                        show_default=bool(option.default), help=option.help)


def build_options(cls: type[Workload]) -> Decorator:
    """The options that shape a workload's data (sysbench's ``--table-size``), as flags
    and as ``-o NAME=VALUE``: what ``build`` loads and ``size`` estimates."""
    return stack(click.option("-o", "--option", "options", multiple=True, metavar="NAME=VALUE",
                              help="A build option as NAME=VALUE, repeatable (the flags below say the same)."),
                 *(workload_option(option, unset=True) for option in cls.build_options))


def chosen_build_options(options: tuple[str, ...], flags: dict[str, str | None]) -> dict[str, str]:
    """The build options given: ``-o`` pairs, then the flags given over them."""
    chosen = parse_options(options)
    chosen.update({key: value for key, value in flags.items() if value is not None})
    return chosen


def given(param: str) -> bool:
    """Whether the current command's parameter ``param`` was typed (or set in the
    environment) rather than left at its default."""
    source = click.get_current_context().get_parameter_source(param)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def refuse_orphans(options: tuple[Option, ...], values: dict[str, Any]) -> None:
    """Refuse, in one line, a workload option given where it does nothing: without the
    value of the other option it applies with (``Option.needs``)."""
    for option in options:
        if option.needs and given(option.name):
            other, *wanted = option.needs
            if str(values[other]) not in wanted:
                flag, needed = option.name.replace("_", "-"), other.replace("_", "-")
                raise click.UsageError(f"--{flag} applies only with --{needed} {' or '.join(wanted)} (not"
                                       f" {values[other]}): give that too, or leave --{flag} out")


class WorkloadGroup(click.Group):
    """A command with one subcommand per discovered workload (``run``, ``build``,
    ``size``), made by ``make_command(workload class)`` so that each shows its
    workload's own options; --help says WORKLOAD and lists them under "Workloads"."""

    def __init__(self, *args: Any, make_command: Callable[[type[Workload]], click.Command], **kwargs: Any) -> None:
        kwargs.setdefault("subcommand_metavar", "WORKLOAD [ARGS]...")
        super().__init__(*args, **kwargs)
        self.make_command = make_command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(workload_classes())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cls = workload_classes().get(name.lower())
        if cls is None:
            raise click.UsageError(f"unknown workload {name!r}; known: {', '.join(sorted(workload_classes()))}")
        return self.make_command(cls)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows = [(name, self.make_command(workload_classes()[name]).get_short_help_str(limit)) for name in names]
        with formatter.section("Workloads"):
            formatter.write_dl(rows)
