"""sysbench 1.0 and tpsbench side by side: same tables, same scripts, same threads.

For PostgreSQL and MariaDB: sysbench prepares 10 x 100,000 rows in a ``tpsb_sb_bench``
database, then for oltp_point_select, oltp_read_only and oltp_read_write sysbench runs 30 s
at 8 threads and tpsbench 30 s at 8 users (through the engine, on the tables sysbench
prepared), one after the other, ``--repeat`` times with the order alternating. Before every
run, whichever tool's, the server is brought to rest (bench/settle.py: PostgreSQL's tables
vacuumed and a checkpoint, InnoDB's dirty pages flushed and its purge caught up), so that
no run pays for the writes of the one before it. Printed per mode: both mean TPS, the
ratio tpsbench/sysbench (of the means, and of each pair), and what each side cost per
transaction: client CPU (the client processes: sysbench, or the engine's coordinator and
workers) and server CPU (PostgreSQL: the backends serving the benchmark database;
MariaDB: the whole mariadbd). On a 2-core machine the client's CPU
is taken from the database, so it bounds the ratio; "other cores" shows how much of the
machine something else used meanwhile (other work on a shared machine, and kernel time
no process is charged for).

``--split-cores`` measures what a storage review's setup measures, where the driver has a
machine of its own: every thread of the database server is pinned to ``--server-cpus``
(default CPU 0) and this script, with the clients it starts (sysbench, the engine's
coordinator and workers), to the other cores, and every server thread's affinity is put
back afterwards, also after an error, Ctrl-C or SIGTERM. TPS then follows the work the
server does per transaction: the line adds the ratio of the server's CPU per
transaction (tpsbench/sysbench) and how busy the server's cores were. Its output goes
to ``vs_sysbench_split.txt``.

``--clients prepared,text`` measures each of tpsbench's ``--client`` paths beside
sysbench (a line each, ``mode/client``), and ``--baseline REV`` one more tpsbench, that
of git revision REV (bench/revisions.py), in a process of its own: a before and after
measured in one run, every pair's order rotating so that neither side always goes first.

    python bench/vs_sysbench.py [--seconds 30] [--threads 8] [--repeat 4] [--out bench/results/vs_sysbench.txt]
        [--split-cores [--server-cpus 0]] [--clients fast] [--baseline REV] [--pg-url URL] [--mysql-url URL]

Installs Debian's sysbench with apt-get when it is missing. Drops and recreates the
tpsb_sb_bench databases (the URLs' databases: by default tpsb_sb_bench on
$TPSBENCH_BENCH_PG's and $TPSBENCH_BENCH_MYSQL's servers, else 127.0.0.1's; bench/servers.py).
The notes below the table in the output file are kept.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
import pymysql
from cpu_meter import Meter, WindowMeter  # type: ignore[import-not-found]
from split_cores import SplitCores, cpu_text, describe_split, parse_cpus  # type: ignore[import-not-found]
from revisions import source_tree  # type: ignore[import-not-found]
from settle import settle  # type: ignore[import-not-found]
from servers import add_url_options, database, mysql_args, pg_conninfo, urls  # type: ignore[import-not-found]

import tpsbench
from tpsbench.core.session import RunContext
from tpsbench.engine.coordinator import RunStatus, run_steps
from tpsbench.engine.steps import LoadStep
from tpsbench.targets import open_target
from tpsbench.workloads.sysbench import SysbenchWorkload

DB = "tpsb_sb_bench"
TABLES, TABLE_SIZE = 10, 100_000
MODES = ("oltp_point_select", "oltp_read_only", "oltp_read_write")
#: the name of the --baseline tpsbench's runs, beside the --clients
BASELINE = "baseline"


def sysbench_args(server: str, url: str) -> list[str]:
    """sysbench's options for the database at ``url``."""
    u, driver = urlsplit(url), "pgsql" if server == "postgresql" else "mysql"
    given = {"host": u.hostname, "port": u.port, "user": unquote(u.username or ""),
             "password": unquote(u.password or ""), "db": database(url)}
    return [f"--db-driver={driver}", *(f"--{driver}-{k}={v}" for k, v in given.items() if v)]


@dataclass
class Measured:
    tps: float
    client_cpu_s: float
    server_cpu_s: float
    wall_s: float
    machine_busy: float  # share of all cores busy (any process), 0..1
    server_cores_busy: float | None = None  # with --split-cores: share of the server's cores busy, 0..1

    def us_per_txn(self, cpu_s: float) -> float:
        return 1e6 * cpu_s / (self.tps * self.wall_s)

    @property
    def other_cores(self) -> float:
        """Cores busy with neither client nor server: other work on a shared machine."""
        cores = os.cpu_count() or 1
        return max(0.0, self.machine_busy * cores - (self.client_cpu_s + self.server_cpu_s) / self.wall_s)


def ensure_sysbench() -> str:
    found = shutil.which("sysbench")
    if found:
        return found
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "sysbench"], check=True, env=env)
    return shutil.which("sysbench") or "sysbench"


def recreate_database(server: str, url: str) -> None:
    db = database(url)
    if server == "postgresql":
        with psycopg.connect(pg_conninfo(url, "postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{db}"')
    else:
        conn = pymysql.connect(**mysql_args(url, db=""), autocommit=True)
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{db}`")
            conn.cursor().execute(f"CREATE DATABASE `{db}` CHARACTER SET utf8mb4")
        finally:
            conn.close()


def prepare_tables(binary: str, server: str, url: str) -> None:
    """A new database at ``url`` with sysbench's tables (TABLES x TABLE_SIZE rows)."""
    recreate_database(server, url)
    subprocess.run([binary, "oltp_read_write", *sysbench_args(server, url), f"--tables={TABLES}",
                    f"--table-size={TABLE_SIZE}", "--threads=2", "prepare"], check=True, capture_output=True)


def quiet(server: str, url: str) -> None:
    """The server at rest before a measured run (bench/settle.py): the last run's dead rows
    vacuumed and its dirty pages written, whichever tool ran it."""
    tables = tuple(f"sbtest{n}" for n in range(1, TABLES + 1))
    if server == "postgresql":
        with psycopg.connect(pg_conninfo(url), autocommit=True) as conn:
            settle(server, conn, tables)
        return
    conn = pymysql.connect(**mysql_args(url), autocommit=True)
    try:
        settle(server, conn, tables)
    finally:
        conn.close()


def run_sysbench(binary: str, server: str, url: str, mode: str, seconds: int, threads: int,
                 server_cpus: frozenset[int] | None = None) -> Measured:
    args = [binary, mode, *sysbench_args(server, url), f"--tables={TABLES}", f"--table-size={TABLE_SIZE}",
            f"--threads={threads}", f"--time={seconds}", "run"]
    with Meter(server, database(url), server_cpus) as meter:
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    tps = float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out).group(1))  # type: ignore[union-attr]
    return Measured(tps, meter.client_cpu, meter.server_cpu, meter.wall, meter.busy, meter.server_cores_busy)


def run_tpsbench(url: str, server: str, mode: str, seconds: int, users: int, workers: int | None = None,
                 multiplex: bool = True, server_cpus: frozenset[int] | None = None, client: str = "fast") -> Measured:
    """The same script through the engine; the CPU counted is the workers' (spawned children)
    plus this coordinator's own, over the steady window whose TPS it is (cpu_meter.WindowMeter).
    ``server_cpus``: the server's cores, whose busy share is measured (--split-cores);
    ``client``: tpsbench's --client."""
    wl = SysbenchWorkload()
    options = {"mode": mode, "think": "off", "client": client}
    wl.configure(options)
    meta = wl.verify_schema(open_target(url))
    ctx = RunContext("sysbench", url, int(meta["scale"]), 1,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
    meter = WindowMeter(server, database(url), server_cpus)
    step = LoadStep(users=users, duration_s=float(seconds), rampup_s=2.0, interval_s=10.0, multiplex=multiplex)
    outcome = run_steps(ctx, wl, [step], processes=workers, live=None, observers=[meter])
    if outcome.status is RunStatus.INTERRUPTED:  # the engine took the Ctrl-C (SIGTERM) for itself: stop here too
        raise KeyboardInterrupt(f"signal {outcome.signal}")
    result = outcome.steps[0]
    if result.problems or result.summary is None:
        raise SystemExit(f"tpsbench run failed: {result.problems}")
    window = WindowMeter.of(result.observations)  # the steady window only, as the TPS
    return Measured(result.summary.tps, window["client_cpu_s"], window["server_cpu_s"], window["seconds"],
                    window["machine_busy"], window.get("server_cores_busy"))


def run_baseline(src: Path, given: dict[str, Any]) -> Measured:
    """:func:`run_tpsbench` of the tpsbench in ``src``, in a process of its own (this
    script again, with ``src`` first on its path): its Measured, read from its last line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(Path(__file__).parent)]))
    cpus = given["server_cpus"]
    argv = [sys.executable, __file__, "--measure-once",
            json.dumps({**given, "server_cpus": sorted(cpus) if cpus is not None else None})]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout.splitlines()[-1]
    found = json.loads(out)
    if not found.pop("tpsbench").startswith(str(src.resolve())):
        raise SystemExit(f"--baseline {src}: the baseline's process did not import tpsbench from there")
    return Measured(**found)


def pair_line(server: str, mode: str, pairs: list[tuple[Measured, Measured]], split: bool = False) -> str:
    """Means over the pairs: TPS, the ratio of the means and each pair's, CPU per transaction;
    with ``split`` also the server's CPU per transaction as tpsbench/sysbench and the share
    of the server's cores busy."""
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    sb_tps, our_tps = mean([p[0].tps for p in pairs]), mean([p[1].tps for p in pairs])
    each = ",".join(f"{o.tps / b.tps:.2f}" for b, o in pairs)
    cpu = [mean([m.us_per_txn(getattr(m, f)) for m in side]) for f in ("client_cpu_s", "server_cpu_s")
           for side in ([p[0] for p in pairs], [p[1] for p in pairs])]
    other = [mean([p[i].other_cores for p in pairs]) for i in (0, 1)]
    line = (f"{server:10} {mode:27} {sb_tps:9,.0f} {our_tps:9,.0f} {our_tps / sb_tps:5.2f} ({each:<10}) "
            f"{cpu[0]:>6,.0f} | {cpu[1]:<6,.0f}  {cpu[2]:>6,.0f} | {cpu[3]:<6,.0f}  {other[0]:>4.2f} | {other[1]:<4.2f}")
    if not split:
        return line
    busy = [mean([p[i].server_cores_busy or 0.0 for p in pairs]) for i in (0, 1)]
    return f"{line}  {cpu[3] / cpu[2]:>10.3f}  {busy[0]:>4.2f} | {busy[1]:<4.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeat", type=int, default=4,
                        help="pairs per mode, the order alternating (sysbench first, then tpsbench first); "
                             "4 because single pairs on a 2-core machine spread from 0.7 to 1.4")
    parser.add_argument("--workers", type=int, default=None, help="tpsbench's worker processes (default: its own)")
    parser.add_argument("--no-multiplex", dest="multiplex", action="store_false",
                        help="every tpsbench user on a thread of its own (default: the workers' shared threads)")
    parser.add_argument("--split-cores", action="store_true",
                        help="the server's threads on --server-cpus, the clients on the other cores (restored after)")
    parser.add_argument("--server-cpus", type=parse_cpus, default=frozenset({0}), metavar="LIST",
                        help="the server's cores with --split-cores, as taskset lists them (default 0)")
    parser.add_argument("--clients", default="fast",
                        help="tpsbench's --client paths, comma-separated: each measured beside sysbench, the order "
                             "rotating every pair (e.g. prepared,text: MySQL's two paths in one run)")
    parser.add_argument("--baseline", default=None, metavar="REV",
                        help="another revision's tpsbench (exported with git archive), measured with --client fast "
                             "beside this checkout's in a process of its own, the order rotating: a before and "
                             "after in one run")
    parser.add_argument("--measure-once", default=None, help=argparse.SUPPRESS)  # the baseline's process
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default results/vs_sysbench.txt; vs_sysbench_split.txt with --split-cores, "
                             "..._baseline.txt with --baseline)")
    add_url_options(parser, DB)
    args = parser.parse_args(argv)
    if args.measure_once:
        given = json.loads(args.measure_once)
        given["server_cpus"] = frozenset(given["server_cpus"]) if given["server_cpus"] is not None else None
        print(json.dumps({**asdict(run_tpsbench(**given)), "tpsbench": tpsbench.__file__}))
        return
    args.out = args.out or Path(__file__).parent / "results" / (
        f"vs_sysbench{'_split' if args.split_cores else ''}{'_baseline' if args.baseline else ''}.txt")
    allowed = frozenset(os.sched_getaffinity(0))
    if args.split_cores and not args.server_cpus < allowed:
        parser.error(f"--server-cpus {cpu_text(args.server_cpus)} must be some of this process's CPUs "
                     f"{cpu_text(allowed)}, not all")
    with tempfile.TemporaryDirectory(prefix="tpsbench-baseline-") as tmp:
        args.baseline_rev, args.baseline = args.baseline, source_tree(args.baseline, Path(tmp)) if args.baseline else None
        compare(args, args.servers.split(","),
                (args.server_cpus, allowed - args.server_cpus) if args.split_cores else None)


def compare(args: argparse.Namespace, servers: list[str], cores: tuple[frozenset[int], frozenset[int]] | None) -> None:
    """Every server's and mode's pairs, printed line by line and written to ``args.out``.
    ``cores``: the server's and the clients' CPUs (--split-cores), each server pinned only
    while it is measured, so that the other (and what else uses it) keeps every core."""
    binary = ensure_sysbench()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    lines = [
        (f"# sysbench vs tpsbench, {TABLES} x {TABLE_SIZE:,} rows, {args.threads} threads/users, "
         f"{args.seconds} s each; {version}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; "
         f"tpsbench workers {args.workers or 'default'}, {'shared threads' if args.multiplex else 'a thread per user'}, "
         f"--client {args.clients}" + (f", baseline: the tpsbench of {args.baseline_rev}" if args.baseline else "")),
        "# CPU columns are per transaction (us) as sysbench | tpsbench; 'other' = cores busy with",
        "# neither client nor server (other work on the machine) during the run",
        (f"{'server':10} {'mode':27} {'sysbench':>9} {'tpsbench':>9} {'ratio':>5} {'(each pair)':<12} "
         f"{'client us/txn':>15}  {'server us/txn':>15}  {'other cores':>11}"
         + (f"  {'server t/s':>10}  {'server busy':>11}" if cores else "")),
    ]
    if cores:
        lines[1:1] = [
            f"# --split-cores: {describe_split(*cores)}; load average {os.getloadavg()[0]:.2f} (1 minute) at the start",
            "# 'server t/s' = server us/txn of tpsbench / of sysbench; 'server busy' = share of the server's cores busy"]
    print("\n".join(lines), flush=True)
    for server in servers:
        url = urls(args)[server]
        prepare_tables(binary, server, url)
        with SplitCores([server], *cores) if cores else contextlib.nullcontext() as split:
            lines.extend(measure_modes(args, binary, server, url, split))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    notes = args.out.read_text().split("\n## Notes", 1)[1] if args.out.exists() and "\n## Notes" in args.out.read_text() else ""
    args.out.write_text("\n".join(lines) + "\n" + ("\n## Notes" + notes if notes else ""))


def measure_modes(args: argparse.Namespace, binary: str, server: str, url: str, split: SplitCores | None) -> list[str]:
    """Each mode's pairs on ``server``, a line each (printed as it is measured)."""
    server_cpus, lines = split.server_cpus if split else None, []
    clients = args.clients.split(",") + ([BASELINE] if args.baseline else [])
    for mode in args.modes.split(","):
        pairs: dict[str, list[tuple[Measured, Measured]]] = {client: [] for client in clients}
        for rep in range(args.repeat):
            if split:
                split.pin()
            runs = ["sysbench", *clients]
            runs = runs[rep % len(runs):] + runs[:rep % len(runs)]  # each goes first in turn
            measured = {}
            for run in runs:
                quiet(server, url)
                given = {"url": url, "server": server, "mode": mode, "seconds": args.seconds, "users": args.threads,
                         "workers": args.workers, "multiplex": args.multiplex, "server_cpus": server_cpus,
                         "client": "fast" if run == BASELINE else run}
                measured[run] = (run_sysbench(binary, server, url, mode, args.seconds, args.threads, server_cpus)
                                 if run == "sysbench" else
                                 run_baseline(args.baseline, given) if run == BASELINE else run_tpsbench(**given))
            for client in clients:
                pairs[client].append((measured["sysbench"], measured[client]))
        for client in clients:
            line = pair_line(server, mode if client == "fast" else f"{mode}/{client}", pairs[client], split is not None)
            lines.append(line)
            print(line, flush=True)
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
