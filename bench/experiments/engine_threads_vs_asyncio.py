"""Threads or asyncio for the virtual users inside one worker process? Measured here.

The same trivial transaction (one prepared point select on a 100,000-row table,
autocommit) runs with N users in one process, once as N threads each on its own
synchronous psycopg connection and once as N asyncio tasks each on its own
``psycopg.AsyncConnection``. Each (mode, N) runs in a fresh child process so that the
client CPU (user + system, from getrusage of that process alone) covers nothing else.
"Think" rows add a 10 ms sleep between transactions, as a run with think time does: many
users, mostly idle, which is where asyncio is said to shine.

Usage:  python bench/experiments/engine_threads_vs_asyncio.py [--url postgresql://postgres@127.0.0.1:5432/tpsb_engine_bench]
Output: one line per case; kept in bench/experiments/results/engine_threads_vs_asyncio.txt
The URL defaults to $TPSBENCH_BENCH_PG's server (else 127.0.0.1's), database
tpsb_engine_bench, which must exist (bench/servers.py).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import platform
import random
import resource
import sys
import threading
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the modules shared with it
from servers import add_url_options, pg_conninfo  # type: ignore[import-not-found]  # noqa: E402

SQL = "SELECT c FROM sbtest1 WHERE id = %s"
ROWS = 100_000


def setup(conninfo: str) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('sbtest1')").fetchone()[0] is None:
            conn.execute("CREATE TABLE sbtest1 (id int PRIMARY KEY, k int NOT NULL, c char(120) NOT NULL)")
            conn.execute(f"INSERT INTO sbtest1 SELECT i, i % 1000, md5(i::text) FROM generate_series(1, {ROWS}) i")
            conn.execute("VACUUM ANALYZE sbtest1")


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_threads(conninfo: str, users: int, seconds: float, think_s: float) -> tuple[int, float, float]:
    conns = [psycopg.connect(conninfo, autocommit=True) for _ in range(users)]
    counts = [0] * users
    start = threading.Barrier(users + 1)
    stop = threading.Event()

    def user(i: int) -> None:
        cur = conns[i].cursor()
        rnd = random.Random(i)
        n = 0
        start.wait()
        while not stop.is_set():
            cur.execute(SQL, (rnd.randint(1, ROWS),), prepare=True)
            cur.fetchone()
            n += 1
            if think_s:
                time.sleep(think_s)
        counts[i] = n

    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    for t in threads:
        t.start()
    start.wait()
    t0, c0 = time.perf_counter(), cpu_s()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - t0, cpu_s() - c0
    for c in conns:
        c.close()
    return sum(counts), elapsed, cpu


async def _run_async(conninfo: str, users: int, seconds: float, think_s: float) -> tuple[int, float, float]:
    conns = [await psycopg.AsyncConnection.connect(conninfo, autocommit=True) for _ in range(users)]
    counts = [0] * users
    go = asyncio.Event()
    stop = False

    async def user(i: int) -> None:
        cur = conns[i].cursor()
        rnd = random.Random(i)
        n = 0
        await go.wait()
        while not stop:
            await cur.execute(SQL, (rnd.randint(1, ROWS),), prepare=True)
            await cur.fetchone()
            n += 1
            if think_s:
                await asyncio.sleep(think_s)
        counts[i] = n

    tasks = [asyncio.create_task(user(i)) for i in range(users)]
    await asyncio.sleep(0.1)
    t0, c0 = time.perf_counter(), cpu_s()
    go.set()
    await asyncio.sleep(seconds)
    stop = True
    await asyncio.gather(*tasks)
    elapsed, cpu = time.perf_counter() - t0, cpu_s() - c0
    for c in conns:
        await c.close()
    return sum(counts), elapsed, cpu


def run_asyncio(conninfo: str, users: int, seconds: float, think_s: float) -> tuple[int, float, float]:
    return asyncio.run(_run_async(conninfo, users, seconds, think_s))


def child(mode: str, conninfo: str, users: int, seconds: float, think_s: float, out: mp.Queue) -> None:
    fn = run_threads if mode == "threads" else run_asyncio
    out.put(fn(conninfo, users, seconds, think_s))


def measure(mode: str, conninfo: str, users: int, seconds: float, think_s: float) -> tuple[int, float, float]:
    ctx = mp.get_context("spawn")
    q: mp.Queue = ctx.Queue()
    p = ctx.Process(target=child, args=(mode, conninfo, users, seconds, think_s, q))
    p.start()
    result = q.get(timeout=seconds + 120)
    p.join()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_url_options(ap, "tpsb_engine_bench", ("postgresql",), single=True)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--users", default="1,8,32,90")
    ap.add_argument("--think-users", default="90")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    args.url = pg_conninfo(args.url)
    setup(args.url)
    print(f"# {platform.python_version()} psycopg {psycopg.__version__}, {mp.cpu_count()} cores, "
          f"{args.seconds:.0f} s per case, best of {args.repeat} by tps; one process, N users; "
          f"load average at start {os.getloadavg()[0]:.2f} (the server shares the cores)")
    print(f"{'mode':8} {'users':>5} {'think':>6} {'txn/s':>9} {'client CPU us/txn':>18} {'client cores':>12}")
    cases = [(int(n), 0.0) for n in args.users.split(",")]
    cases += [(int(n), 0.010) for n in args.think_users.split(",") if n]
    for users, think in cases:
        for mode in ("threads", "asyncio"):
            best = None
            for _ in range(args.repeat):
                n, elapsed, cpu = measure(mode, args.url, users, args.seconds, think)
                row = (n / elapsed, cpu / n * 1e6, cpu / elapsed)
                if best is None or row[0] > best[0]:
                    best = row
            tps, us, cores = best
            print(f"{mode:8} {users:>5} {think * 1000:>4.0f}ms {tps:>9.0f} {us:>18.1f} {cores:>12.2f}", flush=True)


if __name__ == "__main__":
    main()
