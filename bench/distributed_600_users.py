"""600 TPC-C users spread over 3 Dask workers: every user connected, the driver's memory per user.

One step of ``--users`` users (default 600) on ``--workers`` tpsbench worker processes
(default 3), one per worker of a LocalCluster of as many worker processes, through
:func:`tpsbench.run` with ``cluster=``; TPC-C on a ``tpsb_dask_600`` database of
``--warehouses`` warehouses (default 10, built anew), keying and think times as the
rules set them (``--think spec``: a user types and thinks for about half a minute per
transaction, as 600 terminals would), ``--rampup`` s ramp-up and ``--duration`` s steady.
The server needs room for them: max_connections above the users (the CI server's 500 is
not; ``--url`` another one).

Checked and printed:

- the server's view: the client backends of the database, counted from pg_stat_activity
  every 0.5 s; every sample inside the steady window must see all the users (the run's
  only observer is the host's CPU, so no other connection of tpsbench's is open then);
- the driver's memory at the middle of the steady window: RSS and PSS (which shares the
  pages the processes map together, so it adds up) of the coordinator, the Dask worker
  processes and the tpsbench worker processes they started (/proc/<pid>/smaps_rollup),
  and PSS per user, all of it and the worker processes' alone;
- TPS, errors, the honesty check, and the problems of the step (none expected).

    python bench/distributed_600_users.py [--users 600] [--workers 3] [--warehouses 10] [--url URL]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
from engine_tpcc import rebuild, steady_window  # type: ignore[import-not-found]
from servers import add_url_options, database, pg_conninfo  # type: ignore[import-not-found]

from tpsbench import HostCpu, RunConfig, run
from tpsbench.measure.procfs import all_pids, cmdline, memory, read_stat

DB = "tpsb_dask_600"
OUT = Path(__file__).parent / "results" / "distributed_600_users.txt"


class Watch(threading.Thread):
    """Every 0.5 s: the database's client backends, and the driver's memory by part."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.db = url, database(url)
        self.samples: list[tuple[float, int, dict[str, tuple[int, int]]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(pg_conninfo(self.url, "postgres"), autocommit=True) as conn:
            while not self.done.wait(0.5):
                row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = "
                                   "'client backend'", (self.db,)).fetchone()
                self.samples.append((time.time(), int(row[0]) if row else 0, driver_memory()))


def driver_memory() -> dict[str, tuple[int, int]]:
    """(RSS, PSS) of the coordinator, the Dask worker processes and the tpsbench worker processes."""
    me = os.getpid()
    stats = {pid: st for pid in all_pids() if (st := read_stat(f"/proc/{pid}/stat")) is not None}
    dask = [pid for pid, st in stats.items() if st.ppid == me and "spawn_main" in cmdline(pid)]
    workers = [pid for pid, st in stats.items() if st.ppid in dask]
    return {"coordinator": memory([me]), "dask": memory(dask), "workers": memory(workers)}


def mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=600)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--warehouses", type=int, default=10)
    parser.add_argument("--rampup", type=float, default=30.0)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path, default=OUT)
    add_url_options(parser, DB, ("postgresql",), single=True)
    args = parser.parse_args(argv)
    from distributed import LocalCluster

    with psycopg.connect(pg_conninfo(args.url, "postgres")) as conn:
        limit = conn.execute("SHOW max_connections").fetchone()
    head = (f"# bench/distributed_600_users.py {time.strftime('%Y-%m-%d %H:%M')}: TPC-C {args.warehouses} "
            f"warehouses, {args.users} users (think spec) on {args.workers} workers of a LocalCluster of "
            f"{args.workers} worker processes, {args.rampup:.0f} s ramp-up, {args.duration:.0f} s steady; PostgreSQL "
            f"max_connections={limit[0] if limit else '?'}; {os.cpu_count()} cores, load average at start "
            f"{os.getloadavg()[0]:.1f}" + (f"; {args.label}" if args.label else ""))
    print(head, flush=True)
    rebuild("postgresql", args.url, args.warehouses)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            tempfile.TemporaryDirectory(prefix="tpsb_dask_") as tmp:
        watch = Watch(args.url)
        watch.start()
        config = RunConfig(workload="tpcc", url=args.url, users=[args.users], rampup_s=args.rampup,
                           duration_s=args.duration, interval_s=10.0, options={"think": "spec"}, processes=args.workers,
                           results_url=f"sqlite:///{tmp}/results.db", seed=12345, cluster=cluster.scheduler_address)
        record = run(config, live=print, observers=[HostCpu()])
        watch.done.set()
        watch.join()
        record.store.engine.dispose()
    step = record.outcome.steps[0]
    t0, t1 = steady_window(record)
    inside = [s for s in watch.samples if t0 <= s[0] <= t1]
    seen = [n for _, n, _ in inside]
    middle = min(inside, key=lambda s: abs(s[0] - (t0 + t1) / 2))[2]
    pss = sum(p for _, p in middle.values())
    summary = step.summary
    lines = [head,
             (f"TPS {summary.tps if summary else 0:.1f}, errors {summary.total('errors') if summary else '?'}, "
              f"honesty {'ok' if record.honesty['match'] else 'FAILED'}, problems: {step.problems or 'none'}"),
             (f"server client backends of {database(args.url)} during the steady state: min {min(seen)}, max "
              f"{max(seen)} over {len(seen)} samples (every 0.5 s)"),
             "driver memory at the middle of the steady state: " + "; ".join(
                 f"{part} RSS {mib(r)} PSS {mib(p)}" for part, (r, p) in middle.items())
             + f"; PSS per user {pss / args.users / 1024:,.0f} KiB in all, "
               f"{middle['workers'][1] / args.users / 1024:,.0f} KiB in the worker processes"]
    ok = min(seen) == args.users and not step.problems
    lines.append(f"# all {args.users} users connected during the whole steady state: {'yes' if ok else 'NO'}")
    for line in lines[1:]:
        print(line, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
