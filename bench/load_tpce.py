"""TPC-E load speed against the engine's own ingest limit, side by side in one run.

The method of bench/load_tpcc.py (whose functions this uses) on TPC-E's 33 tables: a
full ``tpsbench build tpce`` (tables, parallel generation by load unit, bulk load,
indexes, statistics) against the engine ingesting the very same rows from files with
the same number of sessions (COPY FROM file on PostgreSQL, LOAD DATA LOCAL INFILE on
MariaDB/MySQL), then the same indexes and statistics. Target: build / ingest <= 1.5
on PostgreSQL at 5 load units.

The trade history is shortened (``--trade-days``, default 2 of the rule's 300): at 300
days 5 load units are some 63 GB, more than this machine's disk can spare twice; the
trades, their history and settlements are the same kind of rows at any number of days,
so the ratio does not depend on it, only the seconds do.

    python bench/load_tpce.py [--customers 5000] [--trade-days 2] [--workers 2]
        [--engines postgresql] [--pg-url URL] [--mysql-url URL]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from load_tpcc import DB, side_by_side  # type: ignore[import-not-found]
from servers import add_url_options  # type: ignore[import-not-found]

RESULTS = Path(__file__).parent / "results" / "load_tpce.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--customers", type=int, default=5000)
    parser.add_argument("--trade-days", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--engines", default="postgresql")
    add_url_options(parser, DB)
    args = parser.parse_args()
    heading = (f"bench/load_tpce.py, {args.customers:,} customers ({args.customers // 1000} load units), "
               f"{args.trade_days} trade days")
    side_by_side("tpce", args.customers, {"trade_days": str(args.trade_days)}, args, heading, RESULTS)


if __name__ == "__main__":
    main()
