"""``tpsbench capture`` and ``tpsbench replay``: a database's own traffic as a workload."""

from __future__ import annotations

import click
from rich.table import Table

from tpsbench.cli.options import DURATION_FORM, db_option
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


@click.command()
@click.argument("trace_file", metavar="FILE")
@db_option
@click.option("--speed", type=float, default=1.0, show_default=True, metavar="FACTOR",
              help="Replay faster (2: every gap halved) or slower (0.5) than captured; more than 0.")
@click.option("--stop-on-error", is_flag=True,
              help="Stop at the first statement that fails on the target; by default failures are counted "
                   "and sampled per statement and the replay goes on.")
def replay(trace_file: str, url: str | None, speed: float, stop_on_error: bool) -> None:
    """Re-issue a captured trace's sessions against a database with their original timing.

    Each traced session gets its own connection and sends its statements at their
    captured offsets (divided by --speed), open loop: latency counts from each statement's
    scheduled start, so a target that falls behind shows it. Before anything is sent, a
    target missing a table the trace uses is refused. Replay onto a copy: the trace's
    writes are executed.

    \b
      tpsbench replay shop.trace --db postgresql://postgres@test1/shop_copy
      tpsbench replay shop.trace --db postgresql://postgres@test1/shop_copy --speed 2
    """
    from tpsbench.commands.replay import replay as run_replay

    result = run_replay(trace_file, url, speed, stop_on_error)
    table = Table(title=f"replayed at speed {speed:g}: {result.replayed_rate:.1f} statements/s "
                        f"(traced {result.traced_rate:.1f}/s) over {result.elapsed_s:.1f} s, "
                        f"{result.errors} error(s)", title_justify="left")
    for header in ("statement", "traced", "replayed", "errors", "mean ms", "p95 ms", "p99 ms"):
        table.add_column(header, justify="left" if header == "statement" else "right")
    for s in result.statements:
        mean = f"{1000 * sum(s.latencies_s) / len(s.latencies_s):.2f}" if s.latencies_s else "-"
        p95, p99 = s.percentile_ms(95), s.percentile_ms(99)
        table.add_row(_short(s.text), str(s.traced), str(s.replayed), str(s.errors), mean,
                      "-" if p95 is None else f"{p95:.2f}", "-" if p99 is None else f"{p99:.2f}")
    make_console().print(table)
    for s in result.statements:
        for sample in s.samples:
            click.echo(f"error in {_short(s.text)}: {sample}", err=True)
    if result.stopped_by:
        click.echo(f"tpsbench: replay stopped at the first error (--stop-on-error): {result.stopped_by}", err=True)
        raise SystemExit(1)
