"""Three emulated storage pools, one PostgreSQL cluster on each: does TPS follow the storage?

The storage reviews' setup in small, built so that the storage is what limits (unlike
bench/results/storage_pools.txt, where the database fitted in memory and every pool gave
the same TPS): three pools (bench/pools.py), each holding a PostgreSQL 15 cluster of its
own (pg_createcluster, data and WAL on the pool, its own port, shared_buffers 32MB):

- ``loop-throttled``: ext4 on a loop device throttled by a blkio cgroup to ``--iops``
  read and ``--iops`` write IOPS (a pair of 10K SAS drives);
- ``loop``: the same kind of loop device, unthrottled;
- ``tmpfs``: memory, no device.

Each cluster's processes sit in a memory cgroup of ``--memory-mb`` (the tmpfs cluster's
limit adds the tmpfs's size, whose pages are memory in any case), so that a TPC-C
database several times larger cannot sit in the page cache and reads reach the device.
The database is built once, unthrottled, on the first pool and copied to the others
with the clusters stopped; the loop pools are then mounted again, which empties their
page cache. One campaign over the three pools at ``--users`` (closed loops: no keying or
think times), one pool after the other (``--concurrent``: all at once). Printed per pool
and step from ``tpsbench report --campaign ID --format json``: TPS, p95, the pool device's
IOPS, util and await, device I/O per transaction, tpsbench's verdict (its ``verdict``
object) and its I/O per transaction and per New-Order (``io_per_txn``), and each run's
stored fits-in-memory estimate.

``--all-cached``: no memory cgroup and no throttle (unless ``--iops`` is given; the first
pool is then ``loop-b``, a second unthrottled loop device): the database stays in the
page cache, as in the earlier experiment; tpsbench's own "fits in memory" line and the
compare's warning are printed as they come. Its clusters hold the whole database in
their buffer pool (shared_buffers of 1.5 times its size) and commit with
``synchronous_commit=off``: otherwise a transaction still waits on the pool's device, for
each commit's WAL flush, and, with a small buffer pool, for the reads the page cache
serves and for the WAL flush before a dirty buffer is evicted (measured both ways: the
loop pools were then limited by their storage at 8 users, tmpfs 2.3 times as fast, and
the verdict rightly said storage). With both, the pools differ in nothing a transaction
waits on. With a throttle (``--iops``) the WAL writer's
and checkpointer's writes still reach the throttled device.

Everything set up is taken down at the end, also on Ctrl-C and SIGTERM. Needs root,
cgroup v1 (blkio, memory), postgresql-common, a free loop device; ports 5451-5453
(``--port``). It runs this checkout's tpsbench (src/ first on the path).
Run: ``python bench/storage_sensitivity.py [--duration 60s] | tee bench/results/storage_sensitivity.txt``;
a quicker look (some 8 minutes): ``--rampup 10s --duration 20s --interval 5s``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))
os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])

import pools  # noqa: E402  (bench/, beside this script)
from tpsbench.commands.campaign import run_campaign  # noqa: E402
from tpsbench.core.errors import TpsbenchError  # noqa: E402
from tpsbench.core.parse import parse_duration, parse_users  # noqa: E402
from tpsbench.measure.memory import MemoryFit  # noqa: E402

#: the pools, in the campaign's order (the first holds the build); without a throttle the
#: first is just a second loop device
POOLS, UNTHROTTLED_FIRST = ("loop-throttled", "loop", "tmpfs"), "loop-b"
#: TPC-C's size in PostgreSQL per warehouse and fixed, from bench/results/sizes_tpcc.txt
PG_MB_PER_WAREHOUSE, PG_MB_FIXED = 99.2, 12.6
#: room on each pool beyond the database: the WAL (max_wal_size 1 GB) and the tables' growth
ROOM_MB = 2048


def tpsbench(*args: str, results: str | None = None) -> str:
    """A tpsbench command of this checkout; its output (its one-line error raised)."""
    env = {**os.environ, **({"TPSBENCH_RESULTS": results} if results else {})}
    done = subprocess.run([sys.executable, "-m", "tpsbench", *args], capture_output=True, text=True, env=env,
                          check=False)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        raise SystemExit(f"tpsbench {args[0]}: {said}")
    return done.stdout


def build_and_copy(clusters: dict[str, pools.Cluster], warehouses: int, all_cached: bool) -> float:
    """TPC-C built on the first cluster, unthrottled and outside any cgroup, then its data
    directory copied to the others (all stopped); the seconds it took."""
    start = time.monotonic()
    first, *others = clusters.values()
    first.start()
    first.psql("CREATE DATABASE tpcc")
    tpsbench("build", "tpcc", "--scale", str(warehouses), "--db", first.url("tpcc"))
    first.psql("VACUUM ANALYZE", "tpcc")
    first.stop()
    for other in others:
        pools.copy_data(first, other)
    if not all_cached:
        for cluster in clusters.values():
            pools.drop_pool_cache(cluster.pool)
    return time.monotonic() - start


def campaign_file(folder: Path, clusters: dict[str, pools.Cluster], args: argparse.Namespace) -> Path:
    targets = "".join(f'[[target]]\ndb = "{c.url("tpcc")}"\nstorage = "{name}"\n' for name, c in clusters.items())
    path = folder / "storage_sensitivity.toml"
    path.write_text(f'name = "storage sensitivity"\nworkload = "tpcc"\nscale = {args.warehouses}\n'
                    f'users = [{",".join(map(str, args.users))}]\nrampup = "{args.rampup}"\n'
                    f'duration = "{args.duration}"\ninterval = "{args.interval}"\n'
                    f'[options]\nthink = "off"\nkeying = "off"\n' + targets)
    return path


def _per_txn(per: dict[str, dict[str, float]]) -> str:
    """tpsbench's I/O per committed transaction (and per New-Order) as one line."""
    return "; ".join(f"per {name.replace('_', '-')}: " + ", ".join(f"{value:,.2f} {figure}" for figure, value in figures.items())
                     for name, figures in per.items() if figures)


def step_lines(run: dict[str, Any], device: str | None) -> list[str]:
    """Per step: TPS, p95, the pool device's IOPS/util/await, device I/O per transaction,
    and tpsbench's I/O per transaction and verdict from its JSON report."""
    lines = []
    for step in run["steps"]:
        summary = step["summary"]
        if summary is None:
            continue
        tps = summary["tps"]
        readings = step["readings"]
        io = readings.get("disk_io", {})
        line = f"{run['storage']:15} {step['users']:>3} users  TPS {tps:7.1f}  p95 {summary['latency']['p95']:8.2f} ms"
        if device and f"{device}.r_s" in io:
            iops = io[f"{device}.r_s"] + io[f"{device}.w_s"]
            line += (f"  | {device}: {io[f'{device}.r_s']:6.0f} r/s {io[f'{device}.w_s']:6.0f} w/s, "
                     f"util {io[f'{device}.util_pct']:5.1f} %, r_await {io[f'{device}.r_await_ms']:5.2f} ms, "
                     f"w_await {io[f'{device}.w_await_ms']:5.2f} ms, {iops / tps if tps else 0:5.2f} I/O per txn")
        else:
            line += "  | no device (memory)"
        waits, cpu = readings.get("db_waits", {}), readings.get("host_cpu", {})
        if "io_pct" in waits:
            line += f"  | db waits on I/O {waits['io_pct']:.0f} %"
        if "io_pressure" in cpu:
            line += f", io pressure {cpu['io_pressure']:.0f} %"
        lines.append(line)
        if step.get("io_per_txn"):
            lines.append(f"{'':15}     I/O {_per_txn(step['io_per_txn'])}")
        verdict = step.get("verdict")
        lines.append(f"{'':15}     limited by ({verdict['kind']}): {verdict['text']}" if verdict
                     else f"{'':15}     limited by: (no verdict: the step did not finish)")
    return lines


def acceptance(runs: dict[str, dict[str, Any]]) -> list[str]:
    """Throttled TPS below half the unthrottled loop's at 8 users and more, step by step."""
    tps = {name: {s["users"]: s["summary"]["tps"] for s in run["steps"] if s["summary"]} for name, run in runs.items()}
    lines = []
    for users, fast in sorted(tps.get("loop", {}).items()):
        slow = tps.get(POOLS[0], {}).get(users)
        if users >= 8 and slow is not None:
            lines.append(f"{users:>3} users: throttled {slow:.1f} / unthrottled {fast:.1f} TPS = {slow / fast:.2f} "
                         f"({'below' if slow < fast / 2 else 'NOT below'} half)")
    return lines


def _users(text: str) -> list[int]:
    try:
        return parse_users(text)
    except TpsbenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=(
        "example: python bench/storage_sensitivity.py --duration 60s | tee bench/results/storage_sensitivity.txt"))
    parser.add_argument("--warehouses", type=int, default=20, help="TPC-C warehouses (20: about 2 GB)")
    parser.add_argument("--users", type=_users, default=[1, 8, 32], help="steps, e.g. 1,8,32")
    parser.add_argument("--rampup", default="10s")
    parser.add_argument("--duration", default="60s", help="each step's steady window")
    parser.add_argument("--interval", default="10s")
    parser.add_argument("--iops", type=int, default=None,
                        help="read and write IOPS of the throttled pool (default 200; 0 with --all-cached)")
    parser.add_argument("--memory-mb", type=int, default=512,
                        help="each cluster's memory cgroup limit (its backends need some 6 MB each)")
    parser.add_argument("--all-cached", action="store_true", help="no memory cgroup, no throttle: all in the page cache")
    parser.add_argument("--concurrent", action="store_true", help="the three pools at once, not one after another")
    parser.add_argument("--port", type=int, default=5451, help="the first of three consecutive ports")
    args = parser.parse_args()
    for option in ("rampup", "duration", "interval"):
        try:  # one line before anything is set up
            parse_duration(getattr(args, option))
        except TpsbenchError as exc:
            parser.error(f"--{option}: {exc}")
    iops = args.iops if args.iops is not None else (0 if args.all_cached else 200)
    database_mb = PG_MB_FIXED + PG_MB_PER_WAREHOUSE * args.warehouses
    size_mb = int(database_mb) + ROOM_MB
    memory_mb = None if args.all_cached else args.memory_mb
    buffers = f"{int(database_mb * 1.5)}MB" if args.all_cached else "32MB"
    try:
        pools.check_host()
    except pools.PoolsUnavailable as exc:
        raise SystemExit(f"storage_sensitivity.py cannot run here: {exc}") from None
    print(f"# bench/storage_sensitivity.py {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC: "
          f"{' '.join(sys.argv[1:]) or '(defaults)'}")
    print(f"# TPC-C {args.warehouses} warehouses (about {database_mb:,.0f} MB), PostgreSQL {pools.PG_VERSION} "
          f"shared_buffers {buffers}{', synchronous_commit off' if args.all_cached else ''}, memory cgroup {f'{memory_mb} MB' if memory_mb else 'none'}, "
          f"throttle {f'{iops} read + {iops} write IOPS' if iops else 'none'}, {os.cpu_count()} cores, "
          f"steps {args.rampup} + {args.duration}, {'all pools at once' if args.concurrent else 'one pool after another'}")
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(pools.signals_raise())
            base = stack.enter_context(pools.workspace())
            names = POOLS if iops else (UNTHROTTLED_FIRST, *POOLS[1:])
            made = {name: stack.enter_context(pools.tmpfs_pool(base, name, size_mb) if name == "tmpfs"
                                              else pools.loop_pool(base, name, size_mb)) for name in names}
            settings = {"synchronous_commit": "off"} if args.all_cached else {}
            clusters = {name: stack.enter_context(pools.cluster(pool, f"sens_{n}", args.port + n, buffers,
                                                                settings=settings))
                        for n, (name, pool) in enumerate(made.items())}
            seconds = build_and_copy(clusters, args.warehouses, args.all_cached)
            print(f"# built once and copied to each pool in {seconds:.0f} s; pools: "
                  + ", ".join(f"{name} {pool.device or 'tmpfs'}" for name, pool in made.items()))
            groups_of: dict[str, pools.Cgroups] = {}
            for name, cluster in clusters.items():
                limit = None if memory_mb is None else memory_mb + (size_mb if name == "tmpfs" else 0)
                groups = stack.enter_context(pools.cgroups(f"sens_{name.replace('-', '_')}", limit))
                groups_of[name] = groups
                cluster.start(groups)
                if name == POOLS[0] and iops:
                    groups.throttle(cluster.pool.majmin, iops)
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tpsb-sensitivity-")))
            results = f"sqlite:///{folder / 'results.db'}"
            said: list[str] = []
            outcome = run_campaign(campaign_file(folder, clusters, args), concurrent=args.concurrent,
                                   results_url=results, live=said.append)
            if outcome.status == "interrupted":  # the runs saw the signal, the campaign returned
                raise KeyboardInterrupt
            report(outcome.campaign_id, outcome.status, said, made, results, args.all_cached)
            for name, groups in groups_of.items():
                if groups.oom_kills():
                    print(f"WARNING {name}: the memory cgroup killed {groups.oom_kills()} of its cluster's processes "
                          f"(the cluster restarted): give it more --memory-mb")
    except pools.PoolsUnavailable as exc:
        raise SystemExit(f"storage_sensitivity.py: {exc}") from None
    except KeyboardInterrupt:
        raise SystemExit("storage_sensitivity.py: interrupted; every pool, cgroup and cluster taken down") from None


def report(campaign: int, status: str, said: list[str], made: dict[str, pools.Pool], results: str,
           all_cached: bool) -> None:
    """The campaign's figures per pool and step, and what tpsbench itself said about them."""
    document = json.loads(tpsbench("report", "--campaign", str(campaign), "--format", "json", results=results))
    runs = {run["storage"]: run for run in document["runs"]}
    print(f"campaign {campaign}: {status}")
    for line in said:  # what each run said beside its interval lines ("[ 10s ] step 1/3 ..."): its plan,
        if not line.split("] ", 1)[-1].startswith("[ "):  # memory and cache lines, verdicts, its end
            print(f"  {line}")
    for name, run in runs.items():
        fit = MemoryFit(**((run.get("config") or {}).get("memory") or {}))
        print(f"{name}: {fit.line() or 'the database does not fit in memory (stored estimate)'}")
    for name, run in runs.items():
        for line in step_lines(run, made[name].device):
            print(line)
    for line in acceptance(runs):
        print(line)
    if all_cached:
        compared = tpsbench("compare", "--campaign", str(campaign), results=results)
        print("tpsbench compare --campaign:")
        print(compared, end="")
        print("\n".join(line for line in compared.splitlines() if "WARNING" in line)
              or "tpsbench compare printed no WARNING line")


if __name__ == "__main__":
    main()
