"""TPC-E against TPC-C on PostgreSQL: which one reads more for what it writes.

TPC-E's I/O is read-heavy (Chen et al., SIGMOD Record 2011: about 9.7 reads per write,
against TPC-C's 1.9), which is why a storage pool can rank differently under the two.
This runs each for ``--duration`` (default 5 minutes) at ``--users`` (default 20) on a
database larger than the server's buffer pool (PostgreSQL's shared_buffers, 128 MB as it
ships), each built anew, one after the other, and prints the read:write ratio of the
database's I/O over the steady window:

- ``data files``: blocks the server read into its buffers against blocks it wrote out of
  them (before PostgreSQL 16 pg_stat_database.blks_read and pg_stat_bgwriter's checkpoint,
  bgwriter and backend writes; from 16 on pg_stat_io's relation reads, writes and
  extends), read by a step observer of this benchmark's (:class:`DataFiles`) beside the
  run's own;
- ``with WAL``: the same reads against those writes plus the WAL's write calls, as the
  run's database-counter observer reports them (tpsbench.measure.db_counters:
  ``reads_s`` / ``writes_s``);
- ``device``: the requests the device sampler (tpsbench.measure.diskstats) saw on the
  data directory's device. The OS page cache of this machine (many GB) holds both
  databases after their builds, so the device sees few reads whatever the workload;
  the page cache is dropped before each run so that it sees the first of them.

TPC-C runs think off; TPC-E as it comes (its users have no think time). A block the
server reads may come from the page cache, not the device: the data-file figure is the
database's demand on storage below its buffer pool, which is what the 2011 paper counts.

    python bench/tpce_io.py [--duration 300] [--users 20] [--warehouses 5]
        [--customers 1000] [--trade-days 10] [--url URL]

The URL defaults to $TPSBENCH_BENCH_PG's server (else 127.0.0.1's), database tpsb_bench_io.
Needs root to drop the page cache (skipped otherwise, and said).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path
from typing import Any

import psycopg
from servers import add_url_options, pg_conninfo  # type: ignore[import-not-found]

from tpsbench import RunConfig, build, drop, run
from tpsbench.commands.run import default_observers
from tpsbench.commands.storage import storage_facts
from tpsbench.measure.observers import StepObserver
from tpsbench.results.records import RunData
from tpsbench.targets import open_target

DB = "tpsb_bench_io"
RESULTS = Path(__file__).parent / "results" / "tpce_io.txt"


def admin(url: str, sql: str, db: str | None = None) -> Any:
    """The first row of ``sql`` on the URL's database (or ``db``); None for a command."""
    with psycopg.connect(pg_conninfo(url, db), autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchone() if cur.description else None


#: (blocks read into the buffers, blocks written from them) of the data files, before and from 16
DATA_FILES = {False: "SELECT (SELECT blks_read FROM pg_stat_database WHERE datname = current_database()),"
                     " (SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter)",
              True: "SELECT sum(reads), sum(coalesce(writes, 0) + coalesce(extends, 0)) FROM pg_stat_io"
                    " WHERE object = 'relation'"}


class DataFiles(StepObserver):
    """The data files' block reads and writes per second, WAL left out (module docstring)."""

    name = "data_files"
    connections = 1

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(pg_conninfo(url, None), autocommit=True)
        self.query = DATA_FILES[self.conn.info.server_version >= 160000]

    def sample(self) -> tuple[float, float]:
        reads, writes = self.conn.execute(self.query).fetchone()
        return float(reads), float(writes)

    def reading(self, before: tuple[float, float], after: tuple[float, float], seconds: float) -> dict[str, float]:
        return {"reads_s": (after[0] - before[0]) / seconds, "writes_s": (after[1] - before[1]) / seconds}


def drop_page_cache() -> str:
    """Empty the OS page cache (root only), so that the device sees the run's first reads."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as exc:
        return f"page cache kept ({exc.strerror})"
    return "page cache dropped"


def steady_io(data: RunData) -> dict[str, float]:
    """The step's database and device I/O per second over its steady window."""
    step = data.steps[0]
    seen = data.readings(step.step)
    db, files, io = seen.get("database", {}), seen.get("data_files", {}), seen.get("disk_io", {})
    devices = sorted({name.split(".")[0] for name in io} - {"total"})
    return {"tps": step.summary.tps if step.summary else 0.0, "reads": files.get("reads_s", 0.0),
            "data_writes": files.get("writes_s", 0.0), "db_reads": db.get("reads_s", 0.0),
            "writes": db.get("writes_s", 0.0), "hit": db.get("buffer_hit_pct", 0.0),
            "dev_r": sum(io.get(f"{d}.r_s", 0.0) for d in devices),
            "dev_w": sum(io.get(f"{d}.w_s", 0.0) for d in devices), "devices": ", ".join(devices) or "none"}


def ratio(reads: float, writes: float) -> str:
    return f"{reads / writes:6.2f}" if writes else "   n/a"


def one(workload: str, scale: int, options: dict[str, str], args: argparse.Namespace, tmp: Path) -> str:
    """Build ``workload`` anew, run one step, and describe its I/O in one line."""
    build(workload, scale, args.url, seed=0, drop_existing=True, show_progress=False,
          options={k: v for k, v in options.items() if k == "trade_days"})
    admin(args.url, "CHECKPOINT")  # the build's dirty pages are the build's to write
    size = admin(args.url, "SELECT pg_database_size(current_database())")[0] / 2**20
    target = open_target(args.url)
    files = DataFiles(args.url)
    watch = default_observers(target, storage_facts(target, "", None, None).devices) + [files]
    cache = drop_page_cache()
    try:
        record = run(RunConfig(workload, args.url, users=[args.users], rampup_s=30.0, duration_s=args.duration,
                               interval_s=10.0, seed=1,
                               options={k: v for k, v in options.items() if k != "trade_days"},
                               results_url=f"sqlite:///{tmp / 'results.db'}"), live=lambda line: None,
                     observers=watch)
    finally:
        files.conn.close()
    got = steady_io(record.store.load_run(record.run_id))
    drop(workload, args.url)
    return (f"{workload:5} {size:7,.0f} MB  TPS {got['tps']:8.1f}  buffer hit {got['hit']:5.1f} %  "
            f"data files: {got['reads']:8.1f} reads/s {got['data_writes']:7.1f} writes/s read:write "
            f"{ratio(got['reads'], got['data_writes'])}  | with WAL: {got['db_reads']:.1f} reads/s "
            f"{got['writes']:.1f} writes/s read:write {ratio(got['db_reads'], got['writes'])}  | device {got['devices']}: {got['dev_r']:.1f} r/s "
            f"{got['dev_w']:.1f} w/s read:write {ratio(got['dev_r'], got['dev_w'])}; {cache}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of steady state per workload")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--warehouses", type=int, default=5)
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--trade-days", type=int, default=10)
    parser.add_argument("--label", default="", help="a note for the output header (the machine's state)")
    add_url_options(parser, DB, servers=("postgresql",), single=True)
    args = parser.parse_args()
    shared = admin(args.url, "SHOW shared_buffers", "postgres")[0]
    version = admin(args.url, "SHOW server_version", "postgres")[0]
    lines = [f"# bench/tpce_io.py {dt.datetime.now():%Y-%m-%d %H:%M}: PostgreSQL {version}, shared_buffers "
             f"{shared}, {args.users} users, 30 s ramp-up + {args.duration:.0f} s steady each, TPC-C "
             f"{args.warehouses} warehouses think off, TPC-E {args.customers:,} customers {args.trade_days} "
             f"trade days; {os.cpu_count()} cores{'; ' + args.label if args.label else ''}"]
    print(lines[0], flush=True)
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"tpsb-io-{os.getpid()}"
    tmp.mkdir()
    for workload, scale, options in (("tpcc", args.warehouses, {"think": "off"}),
                                     ("tpce", args.customers, {"trade_days": str(args.trade_days)})):
        lines.append(one(workload, scale, options, args, tmp))
        print(lines[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("a") as out:
        out.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
