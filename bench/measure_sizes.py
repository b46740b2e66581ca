"""Measure TPC-C on-disk size per warehouse on each engine, for `tpsbench size`.

Builds 1 and 4 warehouses on each engine and reads the size of the workload's tables
with their indexes as the engine reports it; the difference gives the size of one
warehouse, the rest is the fixed ITEM table. Paste the printed TOML into
src/tpsbench/workloads/tpcc/scale_factors.toml; the output is also kept in
bench/results/sizes_tpcc.txt.

    python bench/measure_sizes.py [--engines sqlite,postgresql,mariadb] [--pg-url URL] [--mysql-url URL]

SQLite builds in a temporary folder; the server URLs default to $TPSBENCH_BENCH_PG's and
$TPSBENCH_BENCH_MYSQL's servers (else 127.0.0.1's), database tpsb_bench_size (bench/servers.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import tempfile
from pathlib import Path

import sqlalchemy as sa
from servers import add_url_options, urls  # type: ignore[import-not-found]

from tpsbench import build, drop
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload

DB = "tpsb_bench_size"
RESULTS = Path(__file__).parent / "results" / "sizes_tpcc.txt"
SCALES = (1, 4)


def size_sql(dialect: str, tables: tuple[str, ...]) -> str:
    names = ", ".join(f"'{t}'" for t in tables)
    if dialect == "postgresql":
        return f"SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relname IN ({names}) AND c.relkind = 'r'"
    if dialect == "mysql":
        return ("SELECT SUM(data_length + index_length) FROM information_schema.tables "
                f"WHERE table_schema = DATABASE() AND table_name IN ({names})")
    return "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"


def measure(url: str, scale: int) -> float:
    wl = get_workload("tpcc")
    build("tpcc", scale, url, drop_existing=True, show_progress=False)
    target = open_target(url)
    with target.engine.begin() as conn:
        if target.dialect == "mysql":
            for table in wl.tables:
                conn.exec_driver_sql(f"ANALYZE TABLE {table}")
        megabytes = conn.execute(sa.text(size_sql(target.dialect, wl.tables))).scalar_one() / 2**20
    drop("tpcc", target)
    return float(megabytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="sqlite,postgresql,mariadb")
    add_url_options(parser, DB)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="tpsb-size-")
    engines = {"sqlite": f"sqlite:///{os.path.join(folder, 'size.db')}", **urls(args)}
    lines = [f"# bench/measure_sizes.py {dt.date.today()}"]
    for engine in args.engines.split(","):
        small, large = (measure(engines[engine], s) for s in SCALES)
        per = (large - small) / (SCALES[1] - SCALES[0])
        fixed = small - per * SCALES[0]
        dialect = open_target(engines[engine]).dialect
        lines += [
            f"[size.{dialect}]",
            f"per_scale_mb = {per:.1f}",
            f"fixed_mb = {fixed:.1f}",
            f'measured = "{engine}: {small:.0f} MB at {SCALES[0]} and {large:.0f} MB at {SCALES[1]} warehouses '
            f'right after a build, {dt.date.today()}"',
        ]
        print("\n".join(lines[-4:]), flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("a") as out:
        out.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
