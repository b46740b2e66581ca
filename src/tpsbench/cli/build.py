"""``tpsbench build WORKLOAD`` and ``tpsbench size WORKLOAD``: one subcommand per
workload, each with the workload's scale and the build options that shape its data, so
that the line estimating a build is the line making it with ``size`` for ``build``.
"""

from __future__ import annotations

import click

from tpsbench.cli.options import (
    WorkloadGroup,
    build_options,
    chosen_build_options,
    db_option,
    scale_of,
    scale_option,
    stack,
)
from tpsbench.core.workload import Workload

BUILD_HELP = """Create and load the {name} database at a scale factor ({unit}).

Tables and primary keys first, then the data through the database's bulk path
(COPY, LOAD DATA, executemany) from parallel loader processes, then secondary indexes
and statistics. Existing tables are never touched without --drop-existing, nor
replaced while a run is active on them (--force: that run is gone, its mark stale).
"""
SIZE_HELP = """Estimate the on-disk size of the {name} database built at --scale ({unit}).

From the sizes measured right after a build on each engine (the workload's
scale_factors.toml), for the engine --db names; build options that shape the data
count too. Nothing is created.
"""
LOADERS = click.IntRange(min=1)


def _make_build_command(cls: type[Workload]) -> click.Command:
    """``build <workload>``: the common options and the workload's build options."""
    name = cls.name

    def command(scale: str, url: str | None, loaders: int | None, seed: int, drop_existing: bool, force: bool,
                options: tuple[str, ...], **flags: str | None) -> None:
        from tpsbench.commands.build import build as run_build

        if force and not drop_existing:
            raise click.UsageError("--force replaces tables a run is marked active on, so it goes with"
                                   " --drop-existing: give that too, or leave --force out")
        result = run_build(name, scale_of(cls, scale), url, loaders=loaders, seed=seed, drop_existing=drop_existing,
                           force=force, options=chosen_build_options(options, flags))
        total = sum(result.rows.values())
        click.echo(f"built {result.workload} scale {result.scale} (seed {result.seed}): {total:,} rows "
                   f"in {result.seconds:.1f} s with {result.loaders} loader(s)")

    options = stack(
        scale_option(cls, "Size to build", default=cls.default_scale),
        db_option,
        click.option("--loaders", type=LOADERS, default=None, metavar="N",
                     help="Processes loading rows in parallel (default: one per core). The data does not depend"
                          " on it."),
        click.option("--seed", type=int, default=0, show_default=True, metavar="SEED",
                     help="Random seed, 0 to 2^63-1: the same seed builds the same data."),
        click.option("--drop-existing", is_flag=True, help="Replace the workload's tables if they exist."),
        click.option("--force", is_flag=True,
                     help="With --drop-existing: replace them even though a run is marked active on them (the run "
                          "is gone and its mark is stale)."),
        build_options(cls),
    )
    return click.command(name=name, help=BUILD_HELP.format(name=name, unit=cls.scale_unit),
                         short_help=f"Build {name} at a scale in {cls.scale_unit}.")(options(command))


def _make_size_command(cls: type[Workload]) -> click.Command:
    """``size <workload>``: the scale and build options ``build <workload>`` takes."""
    name = cls.name

    def command(scale: str, url: str | None, options: tuple[str, ...], **flags: str | None) -> None:
        from tpsbench.commands.build import estimate_size

        estimate = estimate_size(name, scale_of(cls, scale), url, options=chosen_build_options(options, flags))
        click.echo(f"{name} scale {estimate.scale} on {estimate.dialect}: about {_human(estimate.megabytes)} "
                   f"({estimate.basis})")

    options = stack(scale_option(cls, "Size to estimate"), db_option, build_options(cls))
    return click.command(name=name, help=SIZE_HELP.format(name=name, unit=cls.scale_unit),
                         short_help=f"Size of {name} at a scale in {cls.scale_unit}.")(options(command))


@click.group(cls=WorkloadGroup, make_command=_make_build_command)
def build() -> None:
    """Create and load WORKLOAD's database at a scale factor (tpsbench build WORKLOAD --help).

    \b
      tpsbench build tpcc --scale 10 --loaders 8 --db postgresql://postgres@127.0.0.1/tpcc
      tpsbench build sysbench --tables 10 --table-size 100000   # --tables: sysbench's word for --scale
      tpsbench build tpce --customers 1000 --trade-days 2 --db sqlite:///tpce.db   # a small TPC-E
      tpsbench build custom --file docs/examples/order_entry.toml --db sqlite:///oe.db
      tpsbench build tpcc --scale 10 --drop-existing --force   # replace it: the run marked on it is gone
    """


@click.group(cls=WorkloadGroup, make_command=_make_size_command)
def size() -> None:
    """Estimate the on-disk size of WORKLOAD at a scale factor, before you build it.

    \b
      tpsbench size tpcc --scale 3000 --db postgresql://postgres@127.0.0.1/tpcc
      tpsbench size sysbench --tables 32 --table-size 1000000 --db mysql://root@127.0.0.1/sbtest
    """


def _human(megabytes: float) -> str:
    return f"{megabytes / 1024:,.1f} GB" if megabytes >= 1024 else f"{megabytes:,.0f} MB"
