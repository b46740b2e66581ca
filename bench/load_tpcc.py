"""TPC-C load speed against the engine's own ingest limit, side by side in one run.

For each engine: (1) time a full `tpsbench build` (tables, parallel generate + bulk
load, secondary indexes, statistics); (2) write the very same rows to files on disk
(the loader's own generator and text form, so the rows are identical byte for byte);
(3) time the engine ingesting those files with no generator in the way: the same
tables, the same number of parallel sessions, server-side COPY FROM file on PostgreSQL
and LOAD DATA LOCAL INFILE on MariaDB/MySQL, then the same indexes and statistics.
The ratio build / ingest is what the generator and the client path cost on top of the
engine's own ingest. Targets: <= 1.3 on PostgreSQL, <= 1.5 on MariaDB.

    python bench/load_tpcc.py [--warehouses 10] [--workers 2] [--engines postgresql,mariadb]
        [--pg-url URL] [--mysql-url URL]

The URLs default to $TPSBENCH_BENCH_PG's and $TPSBENCH_BENCH_MYSQL's servers (else
127.0.0.1's), database tpsb_bench_load (bench/servers.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from servers import add_url_options, urls  # type: ignore[import-not-found]

from tpsbench import build, drop
from tpsbench.core.schema import execute_ddl, split_ddl
from tpsbench.core.target import Target
from tpsbench.core.workload import LoadParams, Workload
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload

DB = "tpsb_bench_load"
RESULTS = Path(__file__).parent / "results" / "load_tpcc.txt"


def write_files(wl: Workload, scale: int, seed: int, load_time: str, folder: Path) -> list[tuple[str, Path]]:
    """Every batch the loader would send, as TSV files: (table, path), in task order."""
    params = LoadParams(scale, seed, load_time, wl.constants(seed))
    files = []
    for t, task in enumerate(wl.tasks(scale)):
        for b, batch in enumerate(wl.generate(task, params)):
            path = folder / f"{t:05d}-{b:03d}-{batch.table}.tsv"
            path.write_bytes(batch.to_tsv())
            os.chmod(path, 0o644)
            files.append((batch.table, path))
    return files


def ingest_statement(target: Target, table: str, path: Path) -> str:
    if target.dialect == "postgresql":
        return f"COPY {table} FROM '{path}'"
    return f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {table}"


def ingest(target: Target, wl: Workload, scale: int, files: list[tuple[str, Path]], workers: int) -> float:
    """Seconds to create the tables, ingest the files with `workers` sessions, index, analyze;
    the tables are dropped afterwards (by name: tpsbench's drop refuses tables it did not build)."""
    drop(wl.name, target)
    tables_ddl, index_ddl = split_ddl(wl.schema_file(target.dialect).read_text())
    started = time.monotonic()
    execute_ddl(target, tables_ddl, "creating tables")
    # Same work split as the loader: consecutive chunks of one task stay on one session.
    shares: list[list[tuple[str, Path]]] = [[] for _ in range(workers)]
    for i, item in enumerate(files):
        shares[int(item[1].name[:5]) % workers].append(item)

    def load_share(share: list[tuple[str, Path]]) -> None:
        conn = target.connect()
        try:
            cur = conn.cursor()
            for table, path in share:
                cur.execute(ingest_statement(target, table, path))
                conn.commit()
        finally:
            conn.close()

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(load_share, shares))
    execute_ddl(target, index_ddl, "building indexes")
    conn = target.connect()
    try:
        target.after_load(conn, list(wl.table_names(scale)))
    finally:
        conn.close()
    seconds = time.monotonic() - started
    execute_ddl(target, [f"DROP TABLE {table}" for table in wl.table_names(scale)], "dropping tables")
    return seconds


def side_by_side(workload: str, scale: int, options: dict[str, str], args: argparse.Namespace,
                 heading: str, results: Path) -> None:
    """Build, then ingest the same rows from files, on every engine of ``args``; one line each,
    appended under ``heading`` to ``results``."""
    wl = get_workload(workload)
    wl.configure(options)
    load_time = dt.datetime(2026, 1, 1).isoformat(sep=" ")
    lines = [f"# {heading} {dt.datetime.now():%Y-%m-%d %H:%M}, {args.workers} workers/sessions, {os.cpu_count()} cores"]
    folder = Path(tempfile.mkdtemp(prefix="tpsb-load-", dir="/var/tmp"))
    os.chmod(folder, 0o755)
    try:
        files = write_files(wl, scale, 0, load_time, folder)
        mb = sum(p.stat().st_size for _, p in files) / 1e6
        lines.append(f"rows as text: {mb:,.0f} MB in {len(files)} files")
        for engine in args.engines.split(","):
            url = urls(args)[engine]
            target = open_target(url)
            target.ensure_database()
            result = build(workload, scale, url, loaders=args.workers, seed=0, load_time=load_time,
                           drop_existing=True, show_progress=False, options=options)
            limit = ingest(target, wl, scale, files, args.workers)
            lines.append(f"{engine:10} tpsbench build {result.seconds:7.1f} s   engine ingest of the same rows "
                         f"{limit:7.1f} s   ratio {result.seconds / limit:.2f}")
            print(lines[-1], flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    results.parent.mkdir(exist_ok=True)
    with results.open("a") as out:
        out.write("\n".join(lines) + "\n\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouses", type=int, default=10)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--engines", default="postgresql,mariadb")
    add_url_options(parser, DB)
    args = parser.parse_args()
    side_by_side("tpcc", args.warehouses, {}, args, f"bench/load_tpcc.py, {args.warehouses} warehouses", RESULTS)


if __name__ == "__main__":
    main()
