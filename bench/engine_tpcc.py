"""TPC-C through the public API on PostgreSQL and MariaDB, with the driver's own CPU bill.

For each server: a ``tpsb_eng_tpcc`` database of 2 warehouses, then
one step of 8 users, no think time, 10 s ramp-up and 60 s steady state through
:func:`tpsbench.run` (tpsbench.commands.run); the database is built anew before every
run (see :func:`run_one` for why). Printed per server: tpmC, TPS, the driver's CPU
seconds per 1,000 committed transactions and the driver's share of the CPU that driver
and database together used during the steady state.

How CPU is counted: from /proc, sampled every 0.25 s by a separate monitor process that
is not counted (bench/cpu_meter, which says which processes and threads count as
the driver, as this run's database ("ours") and as the server's background), then
interpolated at the first and last second of the steady window, which the run's own
steady intervals give.

share = driver / (driver + server ours + server background); ``share (vs ours only)``
leaves background out, which is the upper bound on the driver's share.

    python bench/engine_tpcc.py [--servers postgresql,mariadb] [--duration 60] [--repeat 1]
        [--variants procedures=on,procedures=off] [--pg-url URL] [--mysql-url URL]

The URLs default to $TPSBENCH_BENCH_PG and $TPSBENCH_BENCH_MYSQL's servers (else
127.0.0.1's), database tpsb_eng_tpcc (bench/servers.py).

``--variants`` lists the run options to compare, run alternately (options of one variant
joined by ``+``, e.g. ``procedures=off+client=dbapi``): the stored-procedure path (one
call per transaction, the default wherever it exists) against the statement path.
Two engine settings can be varied too: ``multiplex=on|off`` (users sharing one thread
per worker, tpsbench.engine.multiplex, or a thread each) and ``workers=K``; and the
transport: ``transport=tcp`` (the default: the URL's host) or ``transport=socket`` (the
servers' Unix sockets, as pgbench and the MySQL clients connect to ``localhost``; the
kernel's loopback TCP path is a third of the driver's CPU, bench/results/engine_tpcc.txt).

Also checks, before the runs, that psycopg really runs the TPC-C statements as
prepared statements (pg_prepared_statements of a session after 300 transactions).

bench/engine_tpcc_revs.py runs this script against older revisions' packages too, so it
imports the package under test through a compatibility shim (below), and measures with
this checkout's bench/cpu_meter whatever the revision.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cpu_meter import SAMPLE_S, Monitor, Window  # type: ignore[import-not-found]
from servers import (  # type: ignore[import-not-found]
    add_url_options,
    database,
    default_url,
    pg_conninfo,
    socket_url,
    urls,
)

# The package under test, whichever revision is first on PYTHONPATH: the public API
# since the layered layout (db3e1fb), else the module paths before it (tpsbench.api.*,
# d2030a4 and older), which bench/engine_tpcc_revs.py measures side by side with it.
try:
    from tpsbench import RunConfig, build, run
    from tpsbench.core.session import RunContext
except ImportError:  # the old layout: no public names in tpsbench, no tpsbench.core
    from tpsbench.api.build import build  # type: ignore[no-redef]
    from tpsbench.api.runner import RunConfig, run  # type: ignore[no-redef]
    from tpsbench.api.session import RunContext  # type: ignore[no-redef]
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc import TpccWorkload

if TYPE_CHECKING:
    from tpsbench import RunRecord

DB = "tpsb_eng_tpcc"
OUT = Path(__file__).parent / "results" / "engine_tpcc.txt"


def steady_window(record: RunRecord) -> tuple[float, float]:
    """Wall-clock first and last second of the (one) step's steady state."""
    steady = [r for r in record.outcome.steps[0].intervals if r.steady]
    if not steady:
        raise SystemExit("the run has no steady interval")
    return steady[0].t_start, steady[-1].t_end


# -- pg_prepared_statements ---------------------------------------------------------------
def check_prepared(url: str, transactions: int = 300) -> str:
    """Run TPC-C transactions on one statement-path session and read back its pg_prepared_statements."""
    target = open_target(url)
    wl = TpccWorkload()
    meta = wl.verify_schema(target)
    ctx = RunContext("tpcc", url, int(meta["scale"]), 7,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")},
                     {"think": "off", "procedures": "off"})
    conn = target.connect()
    try:
        session = wl.open_session(ctx, 0, 1, conn, target)
        executions = 0
        for _ in range(transactions):
            name = session.next_transaction()
            session.execute(name, session.inputs(name))
        cur = conn.cursor()
        cur.execute("SELECT count(*), coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements")
        count, executions = cur.fetchone()
        cur.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement ~* '(INSERT|UPDATE|DELETE|SELECT)'"
                    " AND generic_plans + custom_plans > 1")
        reused = cur.fetchone()[0]
        conn.rollback()
    finally:
        conn.close()
    return (f"pg_prepared_statements after {transactions} TPC-C transactions on one session: {count} statements "
            f"prepared, {reused} of them executed more than once, {executions} executions of prepared plans")


# -- one run ------------------------------------------------------------------------------
@dataclass
class Result:
    server: str
    tpmc: float
    tps: float
    commits: int
    window: Window
    honesty: bool
    errors: int
    retries: int
    variant: str = ""

    @property
    def cpu_per_1000(self) -> float:
        return 1000.0 * self.window.driver / self.commits if self.commits else float("nan")


def rebuild(server: str, url: str, scale: int = 2) -> None:
    """Build TPC-C at ``url`` anew (seed 0, ANALYZE after the load: see :func:`run_one`)."""
    build("tpcc", scale, url, seed=0, drop_existing=True, show_progress=False)
    if server == "postgresql":  # the load's dirty pages are the build's to write, not the run's
        import psycopg

        with psycopg.connect(pg_conninfo(url, "postgres"), autocommit=True) as conn:
            conn.execute("CHECKPOINT")


def run_one(server: str, users: int, rampup: float, duration: float, options: dict[str, str] | None = None,
            url: str | None = None, scale: int = 2, every: float = SAMPLE_S, memory_every: int = 0,
            workers: int | None = None, fresh: bool = True, multiplex: bool = True, socket: bool = False,
            interval: float = 10.0, metrics_addr: str | None = None) -> tuple[Result, RunRecord, Monitor]:
    """One step through :func:`tpsbench.run`, watched by a :class:`Monitor`; the result
    of its steady window. ``url``: the database (default: tpsb_eng_tpcc on the
    environment's server, bench/servers.py).

    ``fresh``: build the database anew first (seed 0, ANALYZE after the load), so that every run
    starts from the same data and statistics. This server runs with autovacuum off (its
    CI configuration), so a run leaves the small hot tables bloated (DISTRICT grows from 1
    to thousands of pages) and their statistics stale, which turns the planner's
    Stock-Level plan from 1 ms to 0.1-1 s: a database worn by earlier runs measures
    itself, not the driver. Without ``fresh`` the database is built only when missing.
    ``socket``: the driver connects through the server's Unix socket, not TCP. ``interval``
    and ``metrics_addr``: the run's own (bench/metrics_overhead.py).
    """
    tcp = url or default_url(server, DB)
    url = socket_url(server, tcp) if socket else tcp
    if fresh:
        rebuild(server, url, scale)
    else:
        open_target(url).ensure_database()  # run() builds into an existing database only
    with tempfile.TemporaryDirectory(prefix="tpsb_eng_") as tmp:
        config = RunConfig(workload="tpcc", url=url, users=[users], rampup_s=rampup, duration_s=duration,
                           interval_s=interval, options={"think": "off", **(options or {})}, build_scale=scale,
                           results_url=f"sqlite:///{tmp}/results.db", seed=12345, processes=workers,
                           multiplex=multiplex, metrics_addr=metrics_addr)
        with Monitor(server, database(url), every, memory_every, url) as monitor:
            record = run(config, live=None)
        summary = record.outcome.steps[0].summary
        if summary is None or record.outcome.steps[0].problems:
            raise SystemExit(f"{server}: the run failed: {record.outcome.steps[0].problems}")
        t0, t1 = steady_window(record)
        window = monitor.window(t0, t1)
        result = Result(server, summary.txns["new_order"].tpm, summary.tps, summary.commits, window,
                        bool(record.honesty["match"]), summary.total("errors"), summary.total("retries"))
        record.store.engine.dispose()
    return result, record, monitor


def describe(r: Result) -> list[str]:
    w = r.window
    p = w.parts
    return [
        (f"{r.server:10} {r.variant:16} tpmC {r.tpmc:9,.0f}  TPS {r.tps:7,.1f}  driver CPU {r.cpu_per_1000:7.4f} s/1,000 txn"
         f"  driver share {100 * w.share:5.1f}% (vs ours only {100 * w.share_vs_ours:5.1f}%)"),
        (f"{'':27} steady {w.seconds:.1f} s, {r.commits:,} commits, {r.errors} errors, {r.retries} retries, "
        f"honesty {'ok' if r.honesty else 'FAILED'}; CPU s: coordinator {p.get('driver:coordinator', 0):.2f} "
        f"workers {p.get('driver:worker', 0):.2f} | server ours {p.get('server:ours', 0):.2f} "
        f"background {p.get('server:background', 0):.2f} | machine busy {w.machine_cores:.2f} of "
        f"{os.cpu_count()} cores (others' work included)"
        + (f"; UNRELIABLE, more than one core's CPU in the window: {', '.join(w.impossible)}" if w.impossible else "")),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--rampup", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--label", default="", help="a note for the output header (what code was measured)")
    parser.add_argument("--variants", default="procedures=on,procedures=off",
                        help="TPC-C run options to compare, comma-separated, options of one variant joined by +")
    add_url_options(parser, DB)
    args = parser.parse_args(argv)
    import psycopg

    head = [f"# bench/engine_tpcc.py {time.strftime('%Y-%m-%d %H:%M')}: TPC-C 2 warehouses, {args.users} users, "
            f"think off, {args.rampup:.0f} s ramp-up, {args.duration:.0f} s steady; Python {sys.version.split()[0]}, "
            f"psycopg {psycopg.__version__} ({psycopg.pq.__impl__}), {os.cpu_count()} cores, "
            f"load average at start {os.getloadavg()[0]:.1f}" + (f"; {args.label}" if args.label else "")]
    print(head[0], flush=True)
    lines = list(head)
    results: list[Result] = []
    for server in args.servers.split(","):
        url = urls(args)[server]
        if server == "postgresql":
            build("tpcc", 2, url, seed=0, drop_existing=True, show_progress=False)
            line = check_prepared(url)
            print(line, flush=True)
            lines.append(f"# {line}")
        for _ in range(args.repeat):
            for variant in args.variants.split(","):
                options = dict(item.split("=", 1) for item in variant.split("+"))
                transport = options.pop("transport", "tcp")
                if transport not in ("tcp", "socket"):
                    raise SystemExit(f"engine_tpcc: transport={transport!r}: use tcp or socket")
                engine: dict[str, Any] = {"multiplex": options.pop("multiplex", "on") == "on",
                                          "socket": transport == "socket"}
                if "workers" in options:
                    engine["workers"] = int(options.pop("workers"))
                result, _, _ = run_one(server, args.users, args.rampup, args.duration, options, url, **engine)
                result.variant = variant
                results.append(result)
                for line in describe(result):
                    print(line, flush=True)
                    lines.append(line)
    first = args.variants.split(",")[0]
    worst = max(r.window.share_vs_ours for r in results if r.variant == first)
    lines.append(f"# target driver share <= 10% ({first}, against our backends alone): "
                 f"{'met' if worst <= 0.10 else 'NOT met'} (worst {100 * worst:.1f}%)")
    print(lines[-1])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])
