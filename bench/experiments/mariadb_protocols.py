"""MariaDB point selects: mysqlclient's text protocol vs MariaDB Connector/Python's binary one.

Why: sysbench sends its statements as server-side prepared statements (binary protocol);
tpsbench's fast MySQL path is mysqlclient's ``query`` + ``store_result`` with the values
as literals (text protocol), so the server parses every statement. bench/vs_sysbench.py
showed MariaDB spending more CPU per point select for tpsbench than for sysbench. This
measures, on one connection, what each client path costs the client and the server per
statement, the paths interleaved in rounds:

* ``mysqlclient text``: ``conn.query(b"SELECT c FROM sbtest1 WHERE id=%d" % id)`` + ``store_result()``
* ``mariadb binary``: ``cursor(prepared=True).execute("... id=?", (id,))`` + ``fetchall()``
  (MariaDB Connector/Python, ``pip install mariadb``, needs libmariadb-dev)

    python bench/experiments/mariadb_protocols.py [--statements 20000] [--rounds 3] [--url URL]

Needs the tables of bench/vs_sysbench.py (tpsb_sb_bench; the URL defaults to
$TPSBENCH_BENCH_MYSQL's server, else 127.0.0.1's, bench/servers.py). Server CPU is all of
mariadbd. Results: bench/experiments/results/mariadb_protocols.txt.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the modules shared with it
from servers import add_url_options, mysql_args  # type: ignore[import-not-found]  # noqa: E402

DB = "tpsb_sb_bench"
TABLE_SIZE = 100_000


def mariadbd_seconds() -> float:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if text[text.index("(") + 1:text.rindex(")")] in ("mariadbd", "mysqld"):
            rest = text[text.rindex(")") + 2:].split()
            return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
    raise SystemExit("no mariadbd process")


def mysqlclient_text(url: str) -> Callable[[int], None]:
    import MySQLdb

    conn = MySQLdb.connect(**mysql_args(url), autocommit=True)

    def one(ident: int) -> None:
        conn.query(b"SELECT c FROM sbtest1 WHERE id=%d" % ident)
        conn.store_result()

    return one


def mariadb_binary(url: str) -> Callable[[int], None]:
    import mariadb

    conn = mariadb.connect(**mysql_args(url), autocommit=True)
    cur = conn.cursor(prepared=True)
    sql = "SELECT c FROM sbtest1 WHERE id=?"

    def one(ident: int) -> None:
        cur.execute(sql, (ident,))
        cur.fetchall()

    return one


PATHS = {"mysqlclient text": mysqlclient_text, "mariadb binary": mariadb_binary}


def measure(one: Callable[[int], None], n: int) -> tuple[float, float, float, float]:
    """(statements/s, client user us, client sys us, server us) per statement."""
    ids = [random.randint(1, TABLE_SIZE) for _ in range(n)]
    for ident in ids[:200]:
        one(ident)
    r0, s0, t0 = resource.getrusage(resource.RUSAGE_SELF), mariadbd_seconds(), time.perf_counter()
    for ident in ids:
        one(ident)
    r1, s1, t1 = resource.getrusage(resource.RUSAGE_SELF), mariadbd_seconds(), time.perf_counter()
    return (n / (t1 - t0), 1e6 * (r1.ru_utime - r0.ru_utime) / n, 1e6 * (r1.ru_stime - r0.ru_stime) / n,
            1e6 * (s1 - s0) / n)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    add_url_options(parser, DB, ("mariadb",), single=True)
    args = parser.parse_args(argv)
    paths = {name: make(args.url) for name, make in PATHS.items()}
    results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in paths}
    for round_no in range(args.rounds):
        for name in (list(paths) if round_no % 2 == 0 else list(paths)[::-1]):
            results[name].append(measure(paths[name], args.statements))
    print(f"# one connection, {args.statements:,} point selects x {args.rounds} rounds, interleaved; us per statement")
    print(f"{'path':18} {'stmt/s':>8} {'client user':>12} {'client sys':>11} {'server':>8}")
    for name, rows in results.items():
        mean = [sum(col) / len(col) for col in zip(*rows)]
        print(f"{name:18} {mean[0]:8,.0f} {mean[1]:12.1f} {mean[2]:11.1f} {mean[3]:8.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
