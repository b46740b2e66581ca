"""15,000 TPC-C users with the rules' keying and think times, from one driver: on MariaDB
(its thread pool) and on PostgreSQL through PgBouncer (transaction pooling).

Why: the storage reviews' SQL Server runs drive 15,000 virtual users; with the rules'
waits a user spends about 21 s a transaction, so what is at stake is the driver holding
15,000 connections and sleeping users cheaply and waking each on time, and the servers
set up to hold them (docs/postgresql.md, docs/getting-started.md).

Users on their driver process's shared thread, as ``tpsbench run`` has them
(``--no-multiplex``: a thread each). ``--cluster N``: the users on N Dask workers of a
LocalCluster on this host instead of the run's own driver processes, and every interval
checked to be the sum of the workers' reports of it (commits, each transaction's latency
histogram and each wait's, count for count). One step of ``--users`` users (default 15000)
per server, ``--keying spec --think spec``, ``--rampup`` s (60) of ramp-up and
``--duration`` s (300) measured, on TPC-C of ``--warehouses`` (50; users spread over them
by user number). ``--realtime``: the driver's processes at real-time priority, so that on
cores shared with the server a user wakes when due rather than when the scheduler next
lets the driver run (what ``chrt -r 1 tpsbench run ...`` does; docs/postgresql.md):

- MariaDB: a private mariadbd (tests/private_servers.py) started with
  thread_handling=pool-of-threads, max_connections = users + 200, open_files_limit
  (and its process's file limit) 2 x users + 2000, stored_program_cache ``--program-cache``
  (0: each connection's compiled procedures freed after each call) and a buffer pool of
  ``--buffer-pool`` (4G); or ``--mysql-url`` one set up already;
- PostgreSQL: a database on the shared server (``--pg-url``), behind a private PgBouncer
  (transaction pooling, ``--pool`` server connections, max_client_conn = users + 100).

Printed per server: users connected (the server's or PgBouncer's count, every 5 s of the
measured window: min and max), the driver's resident memory (its processes' RSS summed,
and PSS) in all and per user, the driver's CPU per second of the window, tpmC against
the rules' ceiling for the users present (12.86 tpmC per 10 users), the realised keying
and think means against the asked ones and a KS test of the think times, the wake-up lag
p50/p99/max, errors and reconnects, the honesty check and `tpsbench check tpcc`.
Appended to bench/results/fifteen_thousand.txt.

    python bench/fifteen_thousand.py [--users 15000] [--warehouses 50] [--rampup 60] [--duration 300]
    python bench/fifteen_thousand.py --users 3000 --warehouses 5 --duration 60 --servers mariadb
    python bench/fifteen_thousand.py --cluster 3
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from engine_tpcc import rebuild, steady_window  # type: ignore[import-not-found]
from servers import add_url_options  # type: ignore[import-not-found]
from sqlalchemy.engine import make_url

from tpsbench import RunConfig, run
from tpsbench.commands.run import RunRecord
from tpsbench.engine.dask.transport import DaskTransport
from tpsbench.engine.descriptors import raise_soft_limit
from tpsbench.measure.clients import clients_connected
from tpsbench.measure.histogram import LatencyHistogram, merged
from tpsbench.measure.procfs import descendants, memory, processes
from tpsbench.measure.reports import IntervalReport
from tpsbench.measure.waits import LAG, decoded, keying_name, ks_negexp, think_name, wait_stats
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc.table import KEYING_S, THINK_CAP, THINK_MEAN_S, TRANSACTIONS

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from private_servers import private_pgbouncer, private_server  # type: ignore[import-not-found]

OUT = Path(__file__).parent / "results" / "fifteen_thousand.txt"
DB = "tpsb_15k"
#: the rules' ceiling: with their keying and think times a user completes at most about
#: 1.29 New-Orders a minute (45% of cards, ~21 s a card), 12.86 tpmC per 10 users
TPMC_PER_USER = 1.286
EVERY_S = 5.0


class Watch(threading.Thread):
    """Every EVERY_S: the clients the server counts, the driver's RSS and PSS, its CPU ticks."""

    def __init__(self, url: str, servers: set[int]) -> None:
        super().__init__(daemon=True)
        self.target, self.servers = open_target(url), servers
        self.samples: list[tuple[float, int, int, int, int]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(EVERY_S):
            stats = processes()
            skip = {pid for server in self.servers for pid in descendants(stats, server)}
            driver = [pid for pid in descendants(stats, os.getpid()) if pid not in skip]
            rss, pss = memory(driver)
            cpu = sum(stats[pid].cpu for pid in driver)
            self.samples.append((time.time(), clients_connected(self.target), rss, pss, cpu))


@contextlib.contextmanager
def mariadb(args: argparse.Namespace) -> Iterator[tuple[str, set[int]]]:
    """The MariaDB URL with TPC-C built, and the server's process to leave out of the driver's."""
    if args.mysql_url:
        rebuild("mariadb", args.mysql_url, args.warehouses)
        yield args.mysql_url, set()
        return
    # a process cannot raise its open files past the hard limit (a container's): at most that
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = 2 * args.users + 2000 if hard == resource.RLIM_INFINITY else min(2 * args.users + 2000, hard)
    # stored_program_cache 0: a connection's compiled procedures (about 1.3 MiB for TPC-C's
    # three) are freed after each call instead of kept for the connection's life
    options = ("--thread-handling=pool-of-threads", f"--max-connections={args.users + 200}",
               f"--open-files-limit={files}", f"--innodb-buffer-pool-size={args.buffer_pool}",
               "--innodb-flush-log-at-trx-commit=2", f"--stored-program-cache={args.program_cache}")
    with private_server("mysql", files=files, args=options) as server:
        url = make_url(server.url).set(drivername="mysql").render_as_string(False)
        rebuild("mariadb", url, args.warehouses)
        yield url, {server.process.pid}


@contextlib.contextmanager
def bouncer(args: argparse.Namespace) -> Iterator[tuple[str, set[int]]]:
    """The URL through a private PgBouncer in front of a TPC-C database on ``--pg-url``."""
    direct = make_url(args.url)
    rebuild("postgresql", args.url, args.warehouses)
    before = set(processes())
    with private_pgbouncer(direct.host or "127.0.0.1", direct.port or 5432, direct.username or "postgres",
                           pool=args.pool, clients=args.users + 100) as port:
        mine = {pid for pid, st in processes().items() if pid not in before and st.ppid == os.getpid()}
        yield direct.set(port=port).update_query_dict({"pool_mode": "transaction"}).render_as_string(False), mine


@contextlib.contextmanager
def dask_workers(count: int) -> Iterator[tuple[str | None, list[tuple[int, IntervalReport]]]]:
    """A LocalCluster of ``count`` Dask worker processes (none: no cluster), and the interval
    reports as its workers send them, before the coordinator merges them."""
    seen: list[tuple[int, IntervalReport]] = []
    if not count:
        yield None, seen
        return
    import distributed

    receive = DaskTransport.receive

    def recording(self: DaskTransport, timeout: float) -> list[tuple[int, object]]:
        out = receive(self, timeout)
        seen.extend((i, m) for i, m in out if isinstance(m, IntervalReport))
        return out

    with distributed.LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(count, timeout=120)
        DaskTransport.receive = recording  # type: ignore[method-assign]
        try:
            yield cluster.scheduler_address, seen
        finally:
            DaskTransport.receive = receive  # type: ignore[method-assign]


def sums(record: RunRecord, seen: list[tuple[int, IntervalReport]], workers: int) -> str:
    """Whether every merged interval is the sum of the workers' reports of it, in one line."""
    intervals = record.outcome.steps[0].intervals
    for report in intervals:
        parts = [r for _, r in seen if r.interval == report.interval]
        if len(parts) != workers:
            return f"interval {report.interval}: {len(parts)} workers' reports, not {workers}"
        if report.total("commits") != sum(p.total("commits") for p in parts):
            return f"interval {report.interval}: commits differ from the workers' sum"
        for name in report.txns:
            if report.histogram(name) != merged(p.histogram(name) for p in parts if name in p.txns):
                return f"interval {report.interval}: {name}'s histogram is not the workers' merged"
        for name, data in report.timings.items():
            theirs = [LatencyHistogram.decode(p.timings[name]) for p in parts if name in p.timings]
            if LatencyHistogram.decode(data) != merged(theirs):
                return f"interval {report.interval}: {name}'s histogram is not the workers' merged"
    commits = [sum(r.total("commits") for i, r in seen if i == worker) for worker in range(workers)]
    return (f"every one of {len(intervals)} intervals is the sum of the {workers} workers' reports (commits, "
            f"histograms count for count); commits by worker {commits}")


def one(server: str, url: str, servers: set[int], args: argparse.Namespace) -> tuple[list[str], bool]:
    """The step on ``url``: its lines, and whether it met the acceptance."""
    if args.realtime:  # the driver's processes and threads, started from here, inherit it
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    watch = Watch(url, servers)
    watch.start()
    with tempfile.TemporaryDirectory(prefix="tpsb_15k_") as tmp, dask_workers(args.cluster) as (cluster, seen):
        config = RunConfig(workload="tpcc", url=url, users=[args.users], rampup_s=args.rampup,
                           duration_s=args.duration, interval_s=args.interval, seed=15000,
                           options={"keying": "spec", "think": "spec", "procedures": args.procedures},
                           results_url=f"sqlite:///{tmp}/results.db",
                           multiplex=args.multiplex, cluster=cluster)
        record: RunRecord = run(config, live=print)
        summed = sums(record, seen, args.cluster) if cluster else ""
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        watch.done.set()
        watch.join()
        stored = record.store.load_run(record.run_id).steps[0].summary
        record.store.engine.dispose()
    step = record.outcome.steps[0]
    t0, t1 = steady_window(record)
    inside = [s for s in watch.samples if t0 + args.interval <= s[0] <= t1]
    if stored is None or len(inside) < 2:
        return [f"{server}: no steady window to judge ({len(inside)} samples)"], False
    connected = [s[1] for s in inside]
    rss = max(s[2] for s in inside)
    pss = max(s[3] for s in inside)
    cpu_s = (inside[-1][4] - inside[0][4]) / os.sysconf("SC_CLK_TCK") / (inside[-1][0] - inside[0][0])
    waits = decoded(stored.waits)
    stats = wait_stats(waits)
    thinks = [(waits[think_name(n)], THINK_MEAN_S[n]) for n in TRANSACTIONS if think_name(n) in waits]
    p = ks_negexp(thinks, THINK_CAP)
    tpmc = stored.txns["new_order"].tpm if "new_order" in stored.txns else 0.0
    ceiling = TPMC_PER_USER * args.users
    errors, reconnects = stored.total("errors"), stored.reconnects
    check = subprocess.run([sys.executable, "-m", "tpsbench", "check", "tpcc", "--db", url],
                           capture_output=True, text=True, timeout=3600)
    lines = [
        f"{server}: users connected (server's count every {EVERY_S:.0f} s of the window) min {min(connected):,} max "
        f"{max(connected):,} of {args.users:,}; problems: {step.problems or 'none'}",
        f"{server}: driver RSS {rss / 2**20:,.0f} MiB ({rss / args.users / 1024:,.0f} KiB a user), PSS "
        f"{pss / 2**20:,.0f} MiB ({pss / args.users / 1024:,.0f} KiB a user); driver CPU {cpu_s:.2f} s/s",
        f"{server}: tpmC {tpmc:,.0f} of the rules' ceiling {ceiling:,.0f} for {args.users:,} users "
        f"({tpmc / ceiling:.1%}); TPS {stored.tps:.1f}; errors {errors}, reconnects {reconnects}",
    ]
    if stats is not None:
        asked_k = ", ".join(f"{n} {stats.keying_mean_s.get(n, 0):.2f}/{KEYING_S[n]:g}" for n in TRANSACTIONS)
        asked_t = ", ".join(f"{n} {stats.think_mean_s.get(n, 0):.2f}/{THINK_MEAN_S[n]:g}" for n in TRANSACTIONS)
        lines += [f"{server}: keying realised/asked (s): {asked_k}",
                  f"{server}: think realised/asked (s): {asked_t}; KS p = {p:.3f} over "
                  f"{sum(h.count() for h, _ in thinks):,} think times",
                  f"{server}: wake-up lag p50/p99/max {stats.lag_p50_ms:.2f} / {stats.lag_p99_ms:.2f} / "
                  f"{stats.lag_max_ms:.2f} ms, mean {stats.lag_mean_ms:.2f} ms over {waits[LAG].count():,} waits"]
    if summed:
        lines.append(f"{server}: Dask: {summed}")
    honest = record.honesty.get("match") is True
    lines.append(f"{server}: honesty check {'matches' if honest else record.honesty}; check tpcc "
                 f"{'passes' if check.returncode == 0 else 'FAILS: ' + (check.stdout + check.stderr)[-300:]}")
    ok = (min(connected) >= args.users and not step.problems and errors == 0 and reconnects == 0 and honest
          and check.returncode == 0 and p > 0.01 and stats is not None and stats.lag_p99_ms < 10.0
          and rss <= 2 * 2**30 and bool(waits.get(keying_name("new_order")))
          and (not summed or summed.startswith("every")))
    lines.append(f"# {server}: acceptance (all connected, 0 errors, KS p > 0.01, lag p99 < 10 ms, RSS <= 2 GiB, "
                 f"honest, checked): {'met' if ok else 'NOT met'}")
    print("\n".join(lines), flush=True)
    return lines, ok


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=15000)
    parser.add_argument("--warehouses", type=int, default=50)
    parser.add_argument("--rampup", type=float, default=60.0)
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--pool", type=int, default=40, help="PgBouncer's server connections (default_pool_size)")
    parser.add_argument("--servers", default="mariadb,postgresql", help="which of mariadb,postgresql")
    parser.add_argument("--no-multiplex", dest="multiplex", action="store_false",
                        help="a thread per user (default: the driver process's shared thread, as run's default)")
    parser.add_argument("--cluster", type=int, default=0, metavar="N",
                        help="the users on N Dask workers of a LocalCluster on this host (default 0: none)")
    parser.add_argument("--procedures", default="auto", choices=("auto", "on", "off"),
                        help="TPC-C's run option: 'off' sends the statements (MariaDB compiles a stored procedure"
                             " once per connection and keeps it there, in memory that 15,000 connections multiply)")
    parser.add_argument("--realtime", action="store_true",
                        help="the driver at real-time priority (SCHED_RR 1, as chrt -r 1 sets it; root or "
                             "CAP_SYS_NICE): woken at once, not after the server's processes on shared cores")
    parser.add_argument("--program-cache", type=int, default=0,
                        help="the private MariaDB's stored_program_cache (default 0: compiled procedures freed "
                             "after each call; MariaDB's own default, 256, keeps them per connection)")
    parser.add_argument("--buffer-pool", default="4G", help="the private MariaDB's innodb_buffer_pool_size")
    parser.add_argument("--mysql-url", default="", help="a MariaDB set up already (default: a private one)")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path, default=OUT)
    add_url_options(parser, DB, ("postgresql",), single=True)
    args = parser.parse_args(argv)
    limit = raise_soft_limit()  # PgBouncer started from here inherits it too
    head = (f"# bench/fifteen_thousand.py {time.strftime('%Y-%m-%d %H:%M')}: {args.users:,} users, keying and think"
            f" spec, TPC-C {args.warehouses} warehouses, {args.rampup:.0f} s ramp-up, {args.duration:.0f} s measured;"
            f" {'multiplexed' if args.multiplex else 'a thread per user'}"
            + (f" on {args.cluster} Dask workers" if args.cluster else "")
            + (", the driver at real-time priority (SCHED_RR 1)" if args.realtime else "")
            + (f", --procedures {args.procedures}" if args.procedures != "auto" else "")
            + f"; {os.cpu_count()} cores, open files {limit},"
            f" load average at start {os.getloadavg()[0]:.1f}"
            + (f"; private MariaDB: stored_program_cache {args.program_cache}, buffer pool {args.buffer_pool}"
               if "mariadb" in args.servers and not args.mysql_url else "")
            + (f"; {args.label}" if args.label else ""))
    print(head, flush=True)
    lines, ok = [head], True
    for server in args.servers.split(","):
        with (mariadb if server == "mariadb" else bouncer)(args) as (url, pids):
            done, met = one(server, url, pids, args)
        lines += done
        ok = ok and met
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
