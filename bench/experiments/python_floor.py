"""The floor under any CPython client: sysbench's point select against the cheapest Python loops.

Why: the goal is to match sysbench (C and LuaJIT) pair by pair on a 2-core
machine where client and server share the cores, so every microsecond of client CPU is
taken from the server. This measures how far the driver layer alone allows that: loops
with nothing of tpsbench in them, laid out two ways (``epoll``: one thread waiting on all
its connections, as tpsbench's shared thread does; ``procs``: a process per connection,
each blocking on its own, as sysbench's threads do), each connection sending
``SELECT c FROM sbtestN WHERE id=?`` again as soon as its last answer is in (one prepared
statement per table on libpq; the text protocol on mysqlclient, as tpsbench sends it),
ids drawn with ``random.randint``, rows read and dropped, no histogram, no transaction
generator, no results store. Whatever tpsbench does on top of this costs more; if these
loops already fall short of sysbench, no CPython driver on these client libraries
reaches 1.0 on point select here.

``--tpcc`` does the same for the TPC-C driver share target: TPC-C's stored-procedure calls
(bench/engine_tpcc.py's database, 2 warehouses, built anew before each run), drawn by
tpsbench's own TPC-C sessions before the clock starts (``--threads`` users, enough calls
each for the run), then sent by the same bare epoll loop for ``--seconds``; the driver's
CPU and share are measured by engine_tpcc's monitor (bench/cpu_meter), as that
bench measures the engine's. Errors (the 1 % New-Order rollback, a deadlock) are read and dropped.

Each line: sysbench's oltp_point_select and one loop, ``--seconds`` each at
``--threads`` threads / connections, means of ``--repeat`` rounds (sysbench and both
loops, the order rotating), on the tables bench/vs_sysbench.py prepares (tpsb_sb_bench,
prepared here with sysbench when missing), with client and server CPU per transaction
measured as vs_sysbench measures them.

    python bench/experiments/python_floor.py [--servers postgresql,mariadb] [--seconds 20] [--repeat 3] [--tpcc]
        [--pg-url URL] [--mysql-url URL]

The URLs are vs_sysbench's databases (default: tpsb_sb_bench on $TPSBENCH_BENCH_PG's and
$TPSBENCH_BENCH_MYSQL's servers, else 127.0.0.1's; bench/servers.py); ``--tpcc`` uses
tpsb_eng_tpcc on the PostgreSQL server. Results: bench/experiments/results/python_floor.txt.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the modules shared with it
from servers import (  # type: ignore[import-not-found]  # noqa: E402
    add_url_options,
    database,
    mysql_args,
    pg_conninfo,
    urls,
    with_database,
)
from cpu_meter import Meter  # type: ignore[import-not-found]  # noqa: E402
from vs_sysbench import (  # type: ignore[import-not-found]  # noqa: E402
    DB,
    TABLE_SIZE,
    TABLES,
    Measured,
    ensure_sysbench,
    prepare_tables,
    run_sysbench,
)

OUT = Path(__file__).parent / "results" / "python_floor.txt"
#: how the bare loop waits (see LOOP)
LAYOUTS = ("epoll", "procs")

#: the loop, in a child process (so that its CPU is a child's, as sysbench's is): prints
#: the statements answered per second
LOOP = r"""
import json, multiprocessing, random, select, sys, time
url, server, layout = sys.argv[1:4]
threads, seconds, tables, size = map(int, sys.argv[4:8])
randint = random.randint


def connect():
    if server == "postgresql":
        import psycopg
        pg = psycopg.connect(url, autocommit=True).pgconn
        for t in range(1, tables + 1):
            pg.prepare(b"s%d" % t, b"SELECT c FROM sbtest%d WHERE id=$1" % t)
        return pg
    import MySQLdb
    from urllib.parse import urlsplit
    u = urlsplit(url)
    return MySQLdb._mysql.connect(host=u.hostname, user=u.username, database=u.path[1:])


if server == "postgresql":
    def send(pg):
        pg.send_query_prepared(b"s%d" % randint(1, tables), [b"%d" % randint(1, size)])
    def receive(pg):
        pg.consume_input()
        if pg.is_busy():
            return False
        while (res := pg.get_result()) is not None:
            res.get_value(0, 0)
        return True
    def fileno(pg):
        return pg.socket
else:
    def send(my):
        my.send_query(b"SELECT c FROM sbtest%d WHERE id=%d" % (randint(1, tables), randint(1, size)))
    def receive(my):
        my.read_query_result()
        my.store_result().fetch_row()
        return True
    def fileno(my):
        return my.fileno()


def serve(count, answered):
    # count connections on this process's one thread, until the time is up
    conns = [connect() for _ in range(count)]
    poll, fds = select.epoll(), {fileno(c): c for c in conns}
    for fd in fds:
        poll.register(fd, select.EPOLLIN)
    for conn in conns:
        send(conn)
    done, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for fd, _ in poll.poll(0.1):
            conn = fds[fd]
            if receive(conn):
                done += 1
                send(conn)
    answered.put(done)


answered = multiprocessing.get_context("fork").Queue()
if layout == "epoll":  # one thread waits on every connection
    serve(threads, answered)
    total = answered.get()
else:  # "procs": a process per connection, each waiting on its own, as sysbench's threads do
    procs = [multiprocessing.get_context("fork").Process(target=serve, args=(1, answered)) for _ in range(threads)]
    for p in procs:
        p.start()
    total = sum(answered.get() for _ in procs)
    for p in procs:
        p.join()
print(json.dumps({"tps": total / seconds}))
"""


def run_loop(url: str, server: str, layout: str, threads: int, seconds: int) -> Measured:
    with Meter(server, database(url)) as meter:
        out = subprocess.run([sys.executable, "-c", LOOP, url, server, layout, str(threads), str(seconds), str(TABLES),
                              str(TABLE_SIZE)], check=True, capture_output=True, text=True).stdout
    tps = json.loads(out.strip().splitlines()[-1])["tps"]
    # the child's connecting and preparing are in the meter too: scale to the loop's time
    scale = seconds / meter.wall
    return Measured(tps, meter.client_cpu * scale, meter.server_cpu * scale, float(seconds), meter.busy)


def tpcc_calls(url: str, users: int, per_user: int) -> list[tuple[Any, list[tuple[bytes, Any]]]]:
    """Per user: its connection (a libpq cursor, which prepares) and its calls as
    (prepared name, parameters as sent), drawn by tpsbench's TPC-C session."""
    from tpsbench.core.session import RunContext
    from tpsbench.targets import open_target
    from tpsbench.workloads import get_workload

    wl = get_workload("tpcc")
    options = {o.name: o.default for o in wl.run_options} | {"think": "off", "procedures": "on"}
    wl.configure(options)
    target = open_target(url)
    meta = wl.verify_schema(target)
    ctx = RunContext("tpcc", url, int(meta["scale"]), 1,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
    out = []
    for user in range(users):
        session = wl.open_session(ctx, user, users, target.connect(), target)
        cur = session.transaction_cursor
        calls = []
        for _ in range(per_user):
            name = session.next_transaction()
            sql, params = next(session.transaction(name, session.inputs(name)))
            calls.append(cur.encode(sql, params))  # (prepared name, text parameters): the calls have some
        out.append((cur, calls))
    return out


def tpcc_loop(url: str, users: int, seconds: float, per_user: int, told: Any) -> None:
    """The bare loop over pre-drawn TPC-C calls (a spawned child: the monitor counts it
    as the driver); tells (loop start, loop end, calls answered)."""
    prepared = tpcc_calls(url, users, per_user)
    poll = select.epoll()
    fds, queues = {}, {}
    for cur, calls in prepared:
        pg = cur.pgconn
        fds[pg.socket], queues[pg.socket] = pg, iter(calls)
        poll.register(pg.socket, select.EPOLLIN)
        pg.send_query_prepared(*next(queues[pg.socket]))
    done, t0 = 0, time.time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for fd, _ in poll.poll(0.1):
            pg = fds[fd]
            pg.consume_input()
            if pg.is_busy():
                continue
            while (res := pg.get_result()) is not None:
                if res.ntuples:
                    res.get_value(0, 0)
            done += 1
            pg.send_query_prepared(*next(queues[fd]))
    told.send((t0, time.time(), done))


def run_tpcc_floor(url: str, seconds: int, users: int) -> tuple[float, Any]:
    """One fresh build at ``url``, then the loop under engine_tpcc's monitor: (calls per second, window)."""
    from cpu_meter import Monitor  # type: ignore[import-not-found]
    from engine_tpcc import rebuild  # type: ignore[import-not-found]

    rebuild("postgresql", url)
    spawn = mp.get_context("spawn")
    ours, theirs = spawn.Pipe(duplex=False)
    per_user = int(seconds * 4000 / users) + 1000  # more than the fastest run answers
    with Monitor("postgresql", database(url)) as monitor:
        child = spawn.Process(target=tpcc_loop, args=(url, users, float(seconds), per_user, theirs))
        child.start()
        t0, t1, done = ours.recv()
        child.join()
    return done / (t1 - t0), monitor.window(t0 + 1, t1 - 1)


def has_tables(server: str, url: str) -> bool:
    if server == "postgresql":
        import psycopg

        with psycopg.connect(pg_conninfo(url, "postgres"), autocommit=True) as conn:
            return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database(url),)).fetchone() is not None
    import pymysql

    conn = pymysql.connect(**mysql_args(url, db=""))
    try:
        with conn.cursor() as cur:
            return bool(cur.execute("SHOW DATABASES LIKE %s", (database(url),)))
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of sysbench and each loop, the order rotating")
    parser.add_argument("--tpcc", action="store_true", help="also the TPC-C floor (PostgreSQL)")
    add_url_options(parser, DB)
    args = parser.parse_args(argv)
    binary = ensure_sysbench()
    lines = [
        (f"# sysbench oltp_point_select vs the cheapest CPython loops, {TABLES} x {TABLE_SIZE:,} rows, "
         f"{args.threads} threads/connections, {args.seconds} s each, {args.repeat} rounds, the order rotating; "
         f"{os.cpu_count()} cores; Python {sys.version.split()[0]}; {time.strftime('%Y-%m-%d %H:%M')}"),
        "# epoll: one thread waits on every connection (tpsbench's shared thread, bare); procs: a process",
        "# per connection, each blocking on its own (sysbench's threads, in Python). CPU: us per transaction",
        f"{'server':10} {'loop':6} {'sysbench TPS':>12} {'loop TPS':>9} {'ratio':>5}  {'client sysbench|loop':>21}  "
        f"{'server sysbench|loop':>21}",
    ]
    print("\n".join(lines), flush=True)
    sides = ("sysbench", *LAYOUTS)
    for server in args.servers.split(","):
        url = urls(args)[server]
        if not has_tables(server, url):
            prepare_tables(binary, server, url)
        rounds: list[dict[str, Measured]] = []
        for i in range(args.repeat):
            runs = {}
            for side in sides[i % len(sides):] + sides[:i % len(sides)]:
                runs[side] = (run_sysbench(binary, server, url, "oltp_point_select", args.seconds, args.threads)
                              if side == "sysbench" else run_loop(url, server, side, args.threads, args.seconds))
            rounds.append(runs)
        for layout in LAYOUTS:
            pairs = [(r["sysbench"], r[layout]) for r in rounds]
            sb = sum(p[0].tps for p in pairs) / len(pairs)
            loop = sum(p[1].tps for p in pairs) / len(pairs)
            cpu = [sum(p[i].us_per_txn(getattr(p[i], f)) for p in pairs) / len(pairs)
                   for f in ("client_cpu_s", "server_cpu_s") for i in (0, 1)]
            line = (f"{server:10} {layout:6} {sb:12,.0f} {loop:9,.0f} {loop / sb:5.2f}  "
                    f"{cpu[0]:>10.1f} | {cpu[1]:<8.1f}  {cpu[2]:>10.1f} | {cpu[3]:<8.1f}")
            lines.append(line)
            print(line, flush=True)
    if args.tpcc:
        lines.append(f"# TPC-C stored-procedure calls, 2 warehouses, {args.threads} connections, the bare loop "
                     f"(compare bench/results/engine_tpcc.txt)")
        for _ in range(args.repeat):
            rate, window = run_tpcc_floor(with_database(args.postgresql_url, "tpsb_eng_tpcc"), args.seconds,
                                          args.threads)
            per_1000 = window.driver / (rate * window.seconds) * 1000
            line = (f"postgresql tpcc floor  TPS {rate:7,.1f}  driver CPU {per_1000:6.3f} s/1,000 txn  driver share "
                    f"{100 * window.share:5.1f}% (vs ours only {100 * window.share_vs_ours:5.1f}%)  "
                    f"machine busy {window.machine_cores:.2f} cores")
            lines.append(line)
            print(line, flush=True)
    notes = OUT.read_text().partition("## Notes")[1:] if OUT.exists() else ("", "")
    OUT.write_text("\n".join(lines) + "\n\n" + "".join(notes))


if __name__ == "__main__":
    main()
