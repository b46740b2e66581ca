"""The client CPU of one stored-procedure call from Python, by thread count.

What the TPC-C driver cannot go below with procedures=on: every transaction is one call.
Threads of this process (1, 2, 4, 8 ...) each hold a connection and loop on
``tpcc_payment`` through the target's fast cursor (libpq prepared statement on
PostgreSQL, mysqlclient's C query on MariaDB), no session, no engine. Printed per thread
count: client user and system CPU per call (getrusage of this process), calls per second
and voluntary context switches per call. Equal CPU per call at every thread count means
threads and the GIL add nothing; the engine's CPU per transaction minus this is what the
session and the engine cost.

    python bench/experiments/round_trip_cost.py [--servers postgresql,mariadb] [--threads 1,2,4,8] [--calls 12000]
        [--pg-url URL] [--mysql-url URL]

Uses the 2-warehouse database of bench/engine_tpcc.py (tpsb_eng_tpcc on $TPSBENCH_BENCH_PG's
and $TPSBENCH_BENCH_MYSQL's servers by default, else 127.0.0.1's; built when missing).
Results: bench/experiments/results/round_trip_cost.txt.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
from pathlib import Path

from tpsbench import build
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.schema import install_routines
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc import TpccWorkload
from tpsbench.workloads.tpcc.sql import statements

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the modules shared with it
from servers import add_url_options, urls  # type: ignore[import-not-found]  # noqa: E402

OUT = Path(__file__).parent / "results" / "round_trip_cost.txt"


def measure(url: str, threads: int, calls: int) -> str:
    """One round of ``calls`` payments spread over ``threads`` threads; a result line."""
    target = open_target(url)
    call = statements(target.sql, target.placeholder()).call_payment
    done: list[int] = []

    def user(k: int, n: int) -> None:
        conn = target.connect()
        target.set_autocommit(conn)
        cur = target.fast_cursor(conn)
        w, d = 1 + k % 2, 1 + k % 10
        params = (w, d, w, d, 100 + k, None, "12.50")
        for _ in range(n):
            cur.execute(call, params)
            cur.fetchone()
        conn.close()
        done.append(n)

    workers = [threading.Thread(target=user, args=(k, calls // threads)) for k in range(threads)]
    r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    n = sum(done)
    return (f"{threads} thread(s): client user {1e6 * (r1.ru_utime - r0.ru_utime) / n:5.1f} us"
            f" + sys {1e6 * (r1.ru_stime - r0.ru_stime) / n:5.1f} us per call, {n / (w1 - w0):6,.0f} calls/s,"
            f" {(r1.ru_nvcsw - r0.ru_nvcsw) / n:.2f} voluntary context switches per call")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--threads", default="1,2,4,8")
    parser.add_argument("--calls", type=int, default=12000)
    parser.add_argument("--out", type=Path, default=OUT)
    add_url_options(parser, "tpsb_eng_tpcc")
    args = parser.parse_args(argv)
    lines = [f"# bench/experiments/round_trip_cost.py {time.strftime('%Y-%m-%d %H:%M')}: tpcc_payment calls, "
             f"{args.calls} per thread count; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"]
    print(lines[0], flush=True)
    for server in args.servers.split(","):
        url = urls(args)[server]
        target = open_target(url)
        target.ensure_database()
        wl = TpccWorkload()
        try:
            wl.verify_schema(target)
        except TpsbenchError:  # no complete build of TPC-C there
            build("tpcc", 2, url, seed=0, drop_existing=True, show_progress=False)
        install_routines(wl, target)
        for threads in (int(t) for t in args.threads.split(",")):
            lines.append(f"{server:10} {measure(url, threads, args.calls)}")
            print(lines[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])
