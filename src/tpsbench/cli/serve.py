"""``tpsbench serve``: the live web view of a results store (tpsbench.serve)."""

from __future__ import annotations

import click

from tpsbench.cli.options import results_option


@click.command()
@results_option
@click.option("--host", default="127.0.0.1", show_default=True, metavar="HOST",
              help="The address to listen on; one that other hosts can reach needs --allow-remote.")
@click.option("--port", type=click.IntRange(0, 65535), default=8150, show_default=True, metavar="PORT",
              help="The port to listen on (0: any free one, said on start).")
@click.option("--allow-remote", is_flag=True,
              help="Listen on an address other hosts can reach: the pages have no login and show database "
                   "URLs (without passwords) and server settings.")
def serve(results_url: str | None, host: str, port: int, allow_remote: bool) -> None:
    """Serve a web view of the results store: every run and campaign, their HTML reports,
    the comparison of two runs, and running runs drawn live.

    A running run's page shows TPS, p95/p99 latency and device I/O per interval, the step
    markers and the time left, updated as its intervals are stored; a run started from
    another terminal into the same store shows up too. Everything the pages need is served
    by tpsbench itself (they work with the network off), and the store is only read.

    Needs the live extra: pip install 'tpsbench[live]'.

    \b
      tpsbench serve                                     # http://127.0.0.1:8150/
      tpsbench serve --results postgresql://bench@db1/results --port 9000
      tpsbench serve --host 0.0.0.0 --allow-remote       # seen from other hosts
    """
    from tpsbench.serve.server import serve as start

    start(results_url, host, port, allow_remote, said=lambda line: click.echo(line, err=True))
