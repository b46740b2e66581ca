"""MySQL/MariaDB's --client paths side by side on TPC-C: TPS, and the client's and the
server's CPU per transaction, on shared cores and with the server on a core of its own.

Why: ``--client fast`` means the path that costs the server least with the driver on a
machine of its own. bench/vs_sysbench.py measures that for sysbench's
statements; TPC-C sends stored-procedure calls, where the server's work is the
procedure's and the statement's parse is a small part of it, while the prepared path
reads every answer through Python (targets/mysql/prepared_rows.py) instead of mysqlclient's C. This
measures both paths on the same database, the order rotating every round, with TPC-C's
procedures (``--procedures on``, the default) and without (each statement sent by the
driver), so that the default can follow the figures.

    python bench/client_paths.py [--warehouses 2] [--users 8] [--seconds 20] [--rounds 2]
        [--clients text,prepared] [--procedures on,off] [--split-cores [--server-cpus 0]] [--mysql-url URL]

Builds TPC-C in ``tpsb_client_paths`` on $TPSBENCH_BENCH_MYSQL's server when it is not
there. Results: bench/results/client_paths.txt (with --split-cores client_paths_split.txt).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

from cpu_meter import WindowMeter  # type: ignore[import-not-found]
from split_cores import SplitCores, cpu_text, describe_split, parse_cpus  # type: ignore[import-not-found]
from servers import add_url_options, database  # type: ignore[import-not-found]

from tpsbench.commands.build import build
from tpsbench.core.meta import read_meta
from tpsbench.core.session import RunContext
from tpsbench.engine.coordinator import run_steps
from tpsbench.engine.steps import LoadStep
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc import TpccWorkload

DB = "tpsb_client_paths"


def measure(url: str, scale: int, constants: dict[str, int], options: dict[str, str], users: int, seconds: int,
            server_cpus: frozenset[int] | None) -> tuple[float, float, float, float | None]:
    """(TPS, client us/txn, server us/txn, share of the server's cores busy) of one run."""
    wl = TpccWorkload()
    wl.configure(options)
    ctx = RunContext("tpcc", url, scale, 11, constants, {"think": "off", **options})
    meter = WindowMeter("mariadb", database(url), server_cpus)
    outcome = run_steps(ctx, wl, [LoadStep(users=users, duration_s=float(seconds), rampup_s=3.0,
                                           interval_s=float(seconds))], live=None, observers=[meter])
    result = outcome.steps[0]
    if result.problems or result.summary is None:
        raise SystemExit(f"tpsbench run failed: {result.problems}")
    window = WindowMeter.of(result.observations)  # the steady window only, as the TPS
    txns = result.summary.tps * window["seconds"]
    return (result.summary.tps, 1e6 * window["client_cpu_s"] / txns, 1e6 * window["server_cpu_s"] / txns,
            window.get("server_cores_busy"))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", default="text,prepared")
    parser.add_argument("--procedures", default="on,off")
    parser.add_argument("--split-cores", action="store_true")
    parser.add_argument("--server-cpus", type=parse_cpus, default=frozenset({0}), metavar="LIST")
    add_url_options(parser, DB, servers=("mariadb",))
    args = parser.parse_args(argv)
    url = args.mariadb_url
    target = open_target(url)
    target.ensure_database()
    if not read_meta(target, "tpcc"):
        build("tpcc", args.warehouses, url, show_progress=False)
    meta = read_meta(target, "tpcc")
    scale = int(meta["scale"])
    constants = {k.removeprefix("const_"): int(v) for k, v in meta.items() if k.startswith("const_")}
    allowed = frozenset(os.sched_getaffinity(0))
    cores = (args.server_cpus, allowed - args.server_cpus) if args.split_cores else None
    out = Path(__file__).parent / "results" / ("client_paths_split.txt" if cores else "client_paths.txt")
    lines = [f"# python bench/client_paths.py {' '.join(argv)}   ({time.strftime('%Y-%m-%d %H:%M')}; TPC-C {scale} "
             f"warehouses, {args.users} users, {args.seconds} s a run; load average {os.getloadavg()[0]:.2f} at the "
             f"start{'; ' + describe_split(*cores) if cores else ''})",
             f"{'procedures':10} {'client':9} {'TPS (each round)':>28} {'client us/txn':>14} {'server us/txn':>14}"
             + ("  server busy" if cores else "")]
    print("\n".join(lines), flush=True)
    runs = [(p, c) for p in args.procedures.split(",") for c in args.clients.split(",")]
    found: dict[tuple[str, str], list[tuple[float, float, float, float | None]]] = {run: [] for run in runs}
    with SplitCores(["mariadb"], *cores) if cores else contextlib.nullcontext() as split:
        for rnd in range(args.rounds):
            for procedures, client in runs[rnd % len(runs):] + runs[:rnd % len(runs)]:
                if split:
                    split.pin()
                found[(procedures, client)].append(measure(url, scale, constants, {
                    "procedures": procedures, "client": client}, args.users, args.seconds,
                    split.server_cpus if split else None))
    for (procedures, client), got in found.items():
        tps = [g[0] for g in got]
        mean = [sum(g[i] for g in got) / len(got) for i in range(3)]
        line = (f"{procedures:10} {client:9} {mean[0]:9,.0f} ({', '.join(f'{t:,.0f}' for t in tps):>16}) "
                f"{mean[1]:14,.0f} {mean[2]:14,.0f}")
        if cores:
            line += f"  {sum(g[3] or 0.0 for g in got) / len(got):11.2f}"
        lines.append(line)
        print(line, flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = out.read_text() if out.exists() else ""
    out.write_text("\n".join(lines) + "\n\n" + previous)
    print(f"server cores: {cpu_text(args.server_cpus) if cores else 'shared'}; written to {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
