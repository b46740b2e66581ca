"""Measure a workload's on-disk size per scale unit on each engine, for `tpsbench size`.

TPC-C: builds 1 and 4 warehouses on each engine and reads the size of the workload's
tables with their indexes as the engine reports it; the difference gives the size of one
warehouse, the rest is the fixed ITEM table.

TPC-E (``--workload tpce``): four builds, one load unit with 2 trade days and 261 market
days, the same with 10 trade days, with 783 market days, and two load units; the
differences give the size of a day of trades and of a day of DAILY_MARKET per load
unit, the size of a load unit besides them, and the fixed rest (TpceWorkload.estimate_size).

Paste the printed TOML into the workload's scale_factors.toml; the output is also kept in
bench/results/sizes_<workload>.txt.

    python bench/measure_sizes.py [--workload tpcc|tpce] [--engines sqlite,postgresql,mariadb] [--pg-url URL] [--mysql-url URL]

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
RESULTS = Path(__file__).parent / "results"
SCALES = (1, 4)
#: TPC-E's builds: (customers, trade days, market days)
TPCE_BASE, TPCE_TRADES, TPCE_MARKET, TPCE_UNITS = (1000, 2, 261), (1000, 10, 261), (1000, 2, 783), (2000, 2, 261)


def size_sql(dialect: str, tables: tuple[str, ...]) -> str:
    names = ", ".join(f"'{t}'" for t in tables)
    if dialect == "postgresql":
        return f"SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relname IN ({names}) AND c.relkind = 'r'"
    if dialect == "mysql":
        return ("SELECT SUM(data_length + index_length) FROM information_schema.tables "
                f"WHERE table_schema = DATABASE() AND table_name IN ({names})")
    # the pages in use: a file keeps the pages a dropped build freed
    return ("SELECT (page_count - freelist_count) * page_size"
            " FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()")


def measure(url: str, scale: int, workload: str = "tpcc", options: dict[str, str] | None = None) -> float:
    wl = get_workload(workload)
    build(workload, scale, url, drop_existing=True, show_progress=False, options=options)
    target = open_target(url)
    with target.engine.begin() as conn:
        if target.dialect == "mysql":
            for table in wl.tables:
                conn.exec_driver_sql(f"ANALYZE TABLE {table}")
        megabytes = conn.execute(sa.text(size_sql(target.dialect, wl.tables))).scalar_one() / 2**20
    drop(workload, target)
    return float(megabytes)


def tpcc_lines(engine: str, url: str, dialect: str) -> list[str]:
    small, large = (measure(url, s) for s in SCALES)
    per = (large - small) / (SCALES[1] - SCALES[0])
    fixed = small - per * SCALES[0]
    return [
        f"[size.{dialect}]",
        f"per_scale_mb = {per:.1f}",
        f"fixed_mb = {fixed:.1f}",
        (f'measured = "{engine}: {small:.0f} MB at {SCALES[0]} and {large:.0f} MB at {SCALES[1]} warehouses '
         f'right after a build, {dt.date.today()}"'),
    ]


def tpce_lines(engine: str, url: str, dialect: str) -> list[str]:
    base, trades, market, units = (
        measure(url, customers, "tpce", {"trade_days": str(days), "market_days": str(history)})
        for customers, days, history in (TPCE_BASE, TPCE_TRADES, TPCE_MARKET, TPCE_UNITS))
    trade_day = (trades - base) / (TPCE_TRADES[1] - TPCE_BASE[1])
    market_day = (market - base) / (TPCE_MARKET[2] - TPCE_BASE[2])
    # the fixed tables are a few MB, less than the noise of the two builds' difference
    fixed = max(0.0, base - (units - base))
    per_lu = base - fixed - TPCE_BASE[1] * trade_day - TPCE_BASE[2] * market_day
    return [
        f"[size.{dialect}]",
        f"fixed_mb = {fixed:.1f}",
        f"per_lu_mb = {per_lu:.1f}",
        f"per_lu_trade_day_mb = {trade_day:.2f}",
        f"per_lu_market_day_mb = {market_day:.4f}",
        (f'measured = "{engine}: {base:.0f} MB at 1 load unit with 2 trade days and 261 market days, '
         f'{trades:.0f} MB with 10 trade days, {market:.0f} MB with 783 market days, {units:.0f} MB at 2 load units, '
         f'right after a build, {dt.date.today()}"'),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("tpcc", "tpce"), default="tpcc")
    parser.add_argument("--engines", default="sqlite,postgresql,mariadb")
    add_url_options(parser, DB)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="tpsb-size-")
    engines = {"sqlite": f"sqlite:///{os.path.join(folder, 'size.db')}", **urls(args)}
    lines = [f"# bench/measure_sizes.py --workload {args.workload} {dt.date.today()}"]
    for engine in args.engines.split(","):
        url = engines[engine]
        measured = (tpce_lines if args.workload == "tpce" else tpcc_lines)(engine, url, open_target(url).dialect)
        print("\n".join(measured), flush=True)
        lines += measured
    RESULTS.mkdir(exist_ok=True)
    with (RESULTS / f"sizes_{args.workload}.txt").open("a") as out:
        out.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
