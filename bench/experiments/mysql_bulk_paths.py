"""Which bulk path should the MySQL/MariaDB target use? Measure, per driver.

Candidates, each loading the same generated batch into an empty TPC-C table (no
secondary indexes, as in a build) and committing once:

- ``load_data``: LOAD DATA LOCAL INFILE of the batch's TSV from a file in /dev/shm
  (tpsbench.targets.mysql.load_data_local);
- ``insert_4m`` / ``insert_1m``: multi-row INSERT statements of about 4 MiB / 1 MiB,
  rendered from the batch's text form (tpsbench.targets.mysql.insert_rows);
- ``executemany``: the driver's own ``executemany`` of row tuples, which PyMySQL and
  mysqlclient also rewrite into multi-row INSERTs (1 MB each), as a baseline.

Times include turning the batch into text or rows, since the loader pays for that too.
"client CPU" is this process's user+system time: on a small machine the loader's CPU
is taken from the server. Best of ``--repeat`` runs, the paths taking turns.

Usage: python bench/experiments/mysql_bulk_paths.py [--url mysql://root@127.0.0.1:3306/tpsb_tgt_bench]

The URL defaults to $TPSBENCH_BENCH_MYSQL's server (else 127.0.0.1's), database
tpsb_tgt_bench (bench/servers.py); the database is dropped at the end. Results:
bench/experiments/results/mysql_bulk_paths.txt.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.engine import make_url

from tpsbench.core.batch import Batch
from tpsbench.core.schema import split_ddl
from tpsbench.targets.mysql.target import MysqlTarget, insert_rows, load_data_local
from tpsbench.workloads.tpcc import TpccWorkload

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the modules shared with it
from servers import add_url_options  # type: ignore[import-not-found]  # noqa: E402

ROWS = {"order_line": 300_000, "stock": 100_000, "customer": 30_000}


def letters(rng: np.random.Generator, n: int, low: int, high: int) -> np.ndarray:
    """``n`` random alphanumeric strings of ``low``..``high`` characters, as an S array."""
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype="S1")
    chars = alphabet[rng.integers(0, len(alphabet), size=(n, high))]
    lengths = rng.integers(low, high + 1, size=n)
    chars[np.arange(high)[None, :] >= lengths[:, None]] = b""
    return chars.view(f"S{high}").ravel()


def make_batch(table: str, n: int, rng: np.random.Generator) -> Batch:
    """A batch shaped like ``table``'s rows: its column types, widths and NULLs."""
    ids = np.arange(1, n + 1)
    stamp = np.datetime64("2024-01-01T00:00:00") + rng.integers(0, 86_400 * 365, n).astype("timedelta64[s]")
    money = lambda high: np.round(rng.uniform(0, high, n), 2)
    small = lambda high: rng.integers(1, high + 1, n)
    if table == "order_line":
        cols = {"ol_o_id": (ids - 1) // 10 + 1, "ol_d_id": np.ones(n, int), "ol_w_id": np.ones(n, int),
                "ol_number": (ids - 1) % 10 + 1, "ol_i_id": small(100_000), "ol_supply_w_id": np.ones(n, int),
                "ol_delivery_d": stamp, "ol_quantity": small(10), "ol_amount": money(9999.99),
                "ol_dist_info": letters(rng, n, 24, 24)}
        return Batch(table, cols, {"ol_delivery_d": rng.random(n) < 0.3})
    if table == "stock":
        cols: dict[str, Any] = {"s_i_id": ids, "s_w_id": np.ones(n, int), "s_quantity": small(100)}
        cols.update({f"s_dist_{d:02d}": letters(rng, n, 24, 24) for d in range(1, 11)})
        cols.update({"s_ytd": np.zeros(n, int), "s_order_cnt": np.zeros(n, int), "s_remote_cnt": np.zeros(n, int),
                     "s_data": letters(rng, n, 26, 50)})
        return Batch(table, cols)
    cols = {"c_id": (ids - 1) % 3000 + 1, "c_d_id": (ids - 1) // 3000 + 1, "c_w_id": np.ones(n, int),
            "c_first": letters(rng, n, 8, 16), "c_middle": np.full(n, b"OE"), "c_last": letters(rng, n, 6, 16),
            "c_street_1": letters(rng, n, 10, 20), "c_street_2": letters(rng, n, 10, 20),
            "c_city": letters(rng, n, 10, 20), "c_state": letters(rng, n, 2, 2), "c_zip": letters(rng, n, 9, 9),
            "c_phone": letters(rng, n, 16, 16), "c_since": stamp, "c_credit": np.full(n, b"GC"),
            "c_credit_lim": np.full(n, 50000.0), "c_discount": np.round(rng.uniform(0, 0.5, n), 4),
            "c_balance": np.full(n, -10.0), "c_ytd_payment": np.full(n, 10.0), "c_payment_cnt": np.ones(n, int),
            "c_delivery_cnt": np.zeros(n, int), "c_data": letters(rng, n, 300, 500)}
    return Batch(table, cols)


def executemany(conn: Any, batch: Batch) -> None:
    marks = ",".join(["%s"] * len(batch.columns))
    cur = conn.cursor()
    cur.executemany(f"INSERT INTO {batch.table} ({','.join(batch.names)}) VALUES ({marks})", batch.to_rows())
    cur.close()


PATHS: dict[str, Callable[[Any, Batch], None]] = {
    "load_data": load_data_local,
    "insert_4m": lambda conn, batch: insert_rows(conn, batch, 4 << 20),
    "insert_1m": lambda conn, batch: insert_rows(conn, batch, 1 << 20),
    "executemany": executemany,
}


def measure(target: MysqlTarget, batch: Batch, path: Callable[[Any, Batch], None]) -> tuple[float, float]:
    """(wall seconds, client CPU seconds) of one load into the emptied table."""
    conn = target.connect()
    try:
        cur = conn.cursor()
        cur.execute(f"TRUNCATE TABLE {batch.table}")
        cur.close()
        wall, cpu = time.perf_counter(), time.process_time()
        path(conn, batch)
        conn.commit()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        cur = conn.cursor()
        cur.execute(f"SELECT COUNT(*) FROM {batch.table}")
        assert cur.fetchone()[0] == len(batch), "rows lost"
        cur.close()
    finally:
        conn.close()
    return wall, cpu


def best_of(target: MysqlTarget, batch: Batch, repeat: int) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) per path; the paths take turns, so that a change in the
    machine's load during the run hits them all alike."""
    best = {name: (float("inf"), float("inf")) for name in PATHS}
    for _ in range(repeat):
        for name, path in PATHS.items():
            best[name] = min(best[name], measure(target, batch, path))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_url_options(parser, "tpsb_tgt_bench", ("mariadb",), single=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the row counts")
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    batches = {table: make_batch(table, int(n * args.scale), rng) for table, n in ROWS.items()}
    tables, _ = split_ddl(TpccWorkload.schema_file("mysql").read_text())
    base = make_url(args.url)
    setup = MysqlTarget(base.set(drivername="mysql+pymysql"))
    setup.ensure_database()
    with setup.session("creating tables") as conn:
        cur = conn.cursor()
        for table in batches:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in tables:
            if statement.split()[2] in batches:
                cur.execute(statement)
    info = setup.server_info()
    print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, server "
          f"{info.get('version')} (innodb_buffer_pool_size {info.get('innodb_buffer_pool_size')}, "
          f"innodb_flush_log_at_trx_commit {info.get('innodb_flush_log_at_trx_commit')}), best of {args.repeat}, "
          f"load average at start {os.getloadavg()[0]:.1f}")
    print(f"{'driver':<8} {'table':<11} {'rows':>7} {'path':<12} {'rows/s':>9} {'MB/s':>6} {'client CPU s':>12} {'wall s':>7}")
    try:
        for driver in ("mysqldb", "pymysql"):
            target = MysqlTarget(base.set(drivername=f"mysql+{driver}"))
            for table, batch in batches.items():
                megabytes = len(batch.to_tsv()) / 1e6
                for name, (wall, cpu) in best_of(target, batch, args.repeat).items():
                    print(f"{driver:<8} {table:<11} {len(batch):>7} {name:<12} {len(batch) / wall:>9,.0f} "
                          f"{megabytes / wall:>6.1f} {cpu:>12.2f} {wall:>7.2f}", flush=True)
    finally:
        print(f"# load average at end {os.getloadavg()[0]:.1f}")
        with setup.session("dropping the database") as conn:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS {base.database}")


if __name__ == "__main__":
    main()
