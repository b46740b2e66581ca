"""``tpsbench capture`` and ``tpsbench replay``: a database's own traffic as a workload."""

from __future__ import annotations

import click
from rich.table import Table

from tpsbench.cli.options import DURATION_FORM, db_option, duration_option, given, results_option
from tpsbench.core.errors import TpsbenchError
from tpsbench.report.progress import make_console

_SHOWN = 60  # characters of a normalised statement in the tables


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


@click.command()
@db_option
@click.option("--duration", default=None, metavar="DURATION",
              help=f"How long to record, a {DURATION_FORM}.")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="The trace file to write (a new file, or an earlier trace it replaces).")
@click.option("--log", default=None, metavar="FILE",
              help="Read this existing PostgreSQL log instead of recording: a csvlog .csv file, or a stderr log "
                   "written with log_line_prefix 'tpsbench|%n|%c|%d|'. --db then only picks its database.")
@click.option("--allow-settings", is_flag=True,
              help="Agree that a live capture changes logging server-wide for its window, with no restart "
                   "(PostgreSQL: log_min_duration_statement = 0, log_line_prefix, log_parameter_max_length by "
                   "ALTER SYSTEM; MariaDB: general_log and log_output); restored after it, also on Ctrl-C or "
                   "a lost connection.")
def capture(url: str | None, duration: str | None, output: str, log: str | None, allow_settings: bool) -> None:
    """Record a live database's statement traffic into a trace file, without stopping it.

    On PostgreSQL the server logs every statement (all clients, the URL's database) for
    DURATION and tpsbench reads the log through the connection, which must be a superuser's;
    on MariaDB/MySQL the general log is turned on for DURATION and read from its table.
    The trace holds each session's statements in order with their start offsets, durations
    and bound parameters (secrets masked, never the URL); transactions the window cut in two
    are left out. A summary of the normalised statements is printed and kept in the file.

    \b
      tpsbench capture --db postgresql://postgres@db1/shop --duration 60s -o shop.trace --allow-settings
      tpsbench capture --db postgresql://postgres@db1/shop --log postgresql.csv -o shop.trace
      tpsbench capture --db mysql://root@db1/shop --duration 60s -o shop.trace --allow-settings
    """
    from tpsbench.commands.capture import capture as run_capture
    from tpsbench.commands.capture import started_text

    trace = run_capture(url, duration, output, log, allow_settings, said=lambda line: click.echo(line, err=True))
    rows = trace.summary["statements"]
    table = Table(title=f"{trace.statements} statements in {len(trace.sessions)} sessions over "
                        f"{trace.window_s:.1f} s from {started_text(trace)} -> {output}", title_justify="left")
    for header in ("statement", "count", "weight %", "per s", "mean ms"):
        table.add_column(header, justify="left" if header == "statement" else "right")
    for row in rows:
        table.add_row(_short(row["statement"]), str(row["count"]), f"{row['weight']:.2f}",
                      f"{row['rate_per_s']:.1f}", "-" if row["mean_ms"] is None else f"{row['mean_ms']:.3f}")
    make_console().print(table)


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("trace_file", metavar="FILE")
@db_option
@click.option("--speed", type=float, default=None, metavar="FACTOR",
              help="Replay faster (2: every gap halved) or slower (0.5) than captured; more than 0. [default: 1]")
@click.option("--stop-on-error", is_flag=True,
              help="Stop at the first statement that fails on the target; by default failures are counted "
                   "and sampled per statement and the replay goes on.")
@results_option
@click.option("--storage", default="", metavar="LABEL",
              help="Name of the storage configuration the replay runs on, e.g. 'RAID10 8x SSHD', stored with the run "
                   "as `tpsbench run` does (compare takes it).")
@duration_option("interval", "10s", "How often the live line prints (stderr), and the length of a stored interval "
                                    "of the replay (a shorter trace: one interval).")
@click.option("--as-mix", is_flag=True,
              help="Run the trace's summary as a workload instead: each normalised statement a transaction of "
                   "its own, dealt by its captured weight, its parameters drawn from their captured values, at "
                   "stepped --users loads with every option of `tpsbench run` (see `tpsbench run tracemix "
                   "--help`), stored and reported as any run.")
@click.pass_context
def replay(ctx: click.Context, trace_file: str, url: str | None, speed: float | None, stop_on_error: bool,
           results_url: str | None, storage: str, interval: str, as_mix: bool) -> None:
    """Re-issue a captured trace's sessions against a database with their original timing,
    or (--as-mix) run its statement mix at stepped user loads.

    Each traced session gets its own connection and sends its statements at their
    captured offsets (divided by --speed), open loop: latency counts from each statement's
    scheduled start, so a target that falls behind shows it. Before anything is sent, a
    target missing a table the trace uses is refused. Replay onto a copy: the trace's
    writes are executed. The replay is stored in --results as a run of workload "replay"
    with one step (its users: the trace's sessions; its transaction types: the normalised
    statements), its intervals and the host's CPU and disk I/O beside it, so `tpsbench
    report RUN` shows it as any run; a live line prints every --interval; Ctrl-C keeps
    what was measured (statements in flight then are counted in doubt, as are those sent on
    a connection that is lost before their answer).

    With --as-mix, the trace's summary becomes the tracemix workload, run by `tpsbench
    run tracemix --file FILE` with the options that follow (--users, --duration, --rampup,
    --storage ...): each virtual user deals the normalised statements from a shuffled deck
    in their captured proportions, each a transaction of its own (BEGIN, COMMIT and other
    statements than SELECT, INSERT, UPDATE, DELETE are left out), its values those of one
    of its captured executions, drawn from a sample of them. Its writes go to the trace's
    own tables, which must exist on the target. Replay onto a copy.

    \b
      tpsbench replay shop.trace --db postgresql://postgres@test1/shop_copy
      tpsbench replay shop.trace --db postgresql://postgres@test1/shop_copy --speed 2 --storage 'RAID10 8x SSD'
      tpsbench replay shop.trace --as-mix --db mysql://root@test1/shop_copy --users 1,8,32 --duration 2m
    """
    if as_mix:
        if speed is not None or stop_on_error:
            raise click.UsageError("--speed and --stop-on-error time a trace's replay; --as-mix runs its mix at "
                                   "stepped loads instead: leave them out")
        # the options both forms take go on to `run` as given
        shared = [(flag, value) for flag, param, value in (("--results", "results_url", results_url),
                                                            ("--storage", "storage", storage),
                                                            ("--interval", "interval", interval)) if given(param)]
        _as_mix(ctx, trace_file, url, [a for pair in shared for a in pair if a is not None])
        return
    if ctx.args:
        raise click.UsageError(f"no such option: {ctx.args[0]} (the options of `tpsbench run` go with --as-mix)")
    speed = 1.0 if speed is None else speed
    from tpsbench.commands.replay_store import replay_stored
    from tpsbench.core.parse import parse_duration

    try:
        interval_s = parse_duration(interval)
    except TpsbenchError as exc:
        raise TpsbenchError(f"--interval {interval}: {exc}") from None
    stored = replay_stored(trace_file, url, results_url, speed=speed, stop_on_error=stop_on_error, storage=storage,
                           interval_s=interval_s, live=lambda line: click.echo(line, err=True))
    result = stored.result
    table = Table(title=f"replayed at speed {speed:g}: {result.replayed_rate:.1f} statements/s "
                        f"(traced {result.traced_rate:.1f}/s) over {result.elapsed_s:.1f} s, "
                        f"{result.errors} error(s), {result.in_doubt} in doubt", title_justify="left")
    for header in ("statement", "traced", "replayed", "errors", "in doubt", "mean ms", "p95 ms", "p99 ms"):
        table.add_column(header, justify="left" if header == "statement" else "right")
    for s in result.statements:
        mean = f"{1000 * sum(s.latencies_s) / len(s.latencies_s):.2f}" if s.latencies_s else "-"
        p95, p99 = s.percentile_ms(95), s.percentile_ms(99)
        table.add_row(_short(s.text), str(s.traced), str(s.replayed), str(s.errors), str(s.in_doubt), mean,
                      "-" if p95 is None else f"{p95:.2f}", "-" if p99 is None else f"{p99:.2f}")
    make_console().print(table)
    for s in result.statements:
        for sample in s.samples:
            click.echo(f"error in {_short(s.text)}: {sample}", err=True)
    click.echo(f"run {stored.run_id} ({stored.status}) stored in {stored.store_url}: tpsbench report {stored.run_id}",
               err=True)
    if result.stopped_by:
        click.echo(f"tpsbench: replay stopped at the first error (--stop-on-error): {result.stopped_by}", err=True)
        raise SystemExit(1)


def _as_mix(ctx: click.Context, trace_file: str, url: str | None, shared: list[str]) -> None:
    """``run tracemix --file FILE [--db URL] ARGS``: the mix runs through run's own command."""
    from tpsbench.cli.run import run

    for arg in ctx.args:
        if arg == "--file" or arg.startswith("--file="):
            raise click.UsageError("--as-mix runs the trace FILE given first: leave out --file")
    command = run.get_command(ctx, "tracemix")
    assert command is not None, "the tracemix workload is one of tpsbench's own"
    args = ["--file", trace_file, *(["--db", url] if url else []), *shared, *ctx.args]
    with command.make_context("tpsbench replay FILE --as-mix", args, parent=ctx) as sub:
        command.invoke(sub)
