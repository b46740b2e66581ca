"""300 TPC-C users against PostgreSQL through the public API: all connected, all measured.

One step of 300 users (think off, warehouses=home: user u works on warehouse u % W + 1,
so the users spread evenly over the W warehouses) on a ``tpsb_eng_300`` database of W
warehouses (default 10, 30 users per warehouse; built anew first, as bench/engine_tpcc.py
builds before every run), 30 s ramp-up and
60 s steady state through :func:`tpsbench.run`. Checked and printed:

- the server's view: the client backends of the database, counted from /proc every
  0.5 s by bench/engine_tpcc.py's monitor (bench/cpu_meter); every sample inside
  the steady window must see all 300;
- the driver's view, user by user: every session counts its commits in an array shared
  with this process (a TpccWorkload subclass that only adds the count, which the run
  gets by swapping tpsbench.commands.run's get_workload: tpsbench.run takes a workload
  by name only), sampled every 0.5 s; every user must have committed inside the steady
  window;
- the driver's total memory at 300 users: RSS and PSS (which shares pages among the
  processes that map them, so it adds up) of the coordinator and its worker processes
  from /proc/<pid>/smaps_rollup, at the middle of the steady window and at its largest;
- TPS, tpmC, errors, retries, the honesty check, and the driver's CPU as in
  bench/engine_tpcc.py.

    python bench/engine_300_users.py [--users 300] [--warehouses 10] [--duration 60] [--rampup 30] [--url URL]

The URL defaults to $TPSBENCH_BENCH_PG's server (else 127.0.0.1's), database tpsb_eng_300.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from engine_tpcc import describe, run_one, steady_window
from servers import add_url_options, pg_conninfo  # type: ignore[import-not-found]

import tpsbench.commands.run as runner  # the module behind tpsbench.run: its get_workload is swapped in main()
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.workloads.tpcc import TpccWorkload
from tpsbench.workloads.tpcc.session import TpccSession

DB = "tpsb_eng_300"
OUT = Path(__file__).parent / "results" / "engine_300_users.txt"


class CountingSession(TpccSession):
    """A TPC-C session that also counts its own commits in a shared array."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target, counts: Any) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        self.counts = counts

    def answered(self, name: str, inputs: object, error: Exception | None) -> bool:
        """The stored-procedure path (this benchmark's, the default): every transaction
        ends here, on the user's own thread or the worker's shared one alike (counting in
        transaction() missed the shared thread, which calls answered() itself since
        ee4bcf6; the run before this fix showed 0 commits for every user)."""
        committed = super().answered(name, inputs, error)
        if committed:
            self.counts[self.user_id] += 1  # one writer per slot: whichever thread runs the user
        return committed


class CountingTpcc(TpccWorkload):
    """TPC-C whose sessions count commits per user; picklable into spawned workers while
    they start (the array is shared memory, handed over at spawn)."""

    def __init__(self, counts: Any) -> None:
        self.counts = counts

    @classmethod
    def folder(cls) -> Path:
        """TPC-C's package folder (its DDL and scale factors), not this script's."""
        return TpccWorkload.folder()

    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        return CountingSession(ctx, user_id, users, conn, target, self.counts)


class CountSampler(threading.Thread):
    """Copies the per-user commit counts every ``every`` seconds, with the time."""

    def __init__(self, counts: Any, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.counts, self.every = counts, every
        self.samples: list[tuple[float, list[int]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while True:
            self.samples.append((time.time(), list(self.counts)))
            if self.done.wait(self.every):
                self.samples.append((time.time(), list(self.counts)))
                return

    def committed_between(self, t0: float, t1: float) -> list[int]:
        """Per user, the commits counted from the first sample at/after t0 to the last at/before t1."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        first, last = inside[0][1], inside[-1][1]
        return [b - a for a, b in zip(first, last)]


def server_settings(url: str) -> str:
    with psycopg.connect(pg_conninfo(url, "postgres")) as conn:
        rows = conn.execute("SELECT name, setting FROM pg_settings WHERE name IN ('max_connections', "
                            "'shared_buffers', 'synchronous_commit', 'server_version')").fetchall()
    return ", ".join(f"{name}={value}" for name, value in rows)


def mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=300)
    parser.add_argument("--warehouses", type=int, default=10)
    parser.add_argument("--rampup", type=float, default=30.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--label", default="")
    add_url_options(parser, DB, ("postgresql",), single=True)
    args = parser.parse_args(argv)

    counts = mp.get_context("spawn").RawArray("q", args.users)
    runner.get_workload = lambda name: CountingTpcc(counts)  # the run's workload: TPC-C that counts per user
    sampler = CountSampler(counts)
    sampler.start()
    head = (f"# bench/engine_300_users.py {time.strftime('%Y-%m-%d %H:%M')}: TPC-C {args.warehouses} warehouses, "
            f"{args.users} users (warehouses=home, think off), {args.rampup:.0f} s ramp-up, {args.duration:.0f} s "
            f"steady, PostgreSQL ({server_settings(args.url)}); Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} cores, "
            f"load average at start {os.getloadavg()[0]:.1f}" + (f"; {args.label}" if args.label else ""))
    print(head, flush=True)
    result, record, monitor = run_one("postgresql", args.users, args.rampup, args.duration,
                                      {"warehouses": "home"}, url=args.url, scale=args.warehouses, every=0.5,
                                      memory_every=4)
    sampler.done.set()
    sampler.join()
    t0, t1 = steady_window(record)
    lines = [head, *describe(result)]

    # the server's view: backends of the database in every sample of the steady window
    seen = [s.backends for s in monitor.samples if t0 <= s.t <= t1]
    lines.append(f"server backends of {DB} during the steady state: min {min(seen)}, max {max(seen)} over "
                 f"{len(seen)} samples (every 0.5 s)")
    # the driver's view: every user committed inside the steady window
    per_user = sampler.committed_between(t0, t1)
    idle = [u for u, n in enumerate(per_user) if n == 0]
    ordered = sorted(per_user)
    lines.append(f"commits per user in the steady state: min {ordered[0]}, median {ordered[len(ordered) // 2]}, "
                 f"max {ordered[-1]}; users without a commit: {len(idle)}{' ' + str(idle[:20]) if idle else ''}")
    # memory of the coordinator and the workers
    with_mem = [s for s in monitor.samples if s.memory and t0 <= s.t <= t1]
    middle = min(with_mem, key=lambda s: abs(s.t - (t0 + t1) / 2))
    largest = max(with_mem, key=lambda s: sum(p for _, p in s.memory.values()))
    for label, sample in (("middle of the steady state", middle), ("largest in the steady state", largest)):
        coordinator = sample.memory.get(os.getpid(), (0, 0))
        workers = [v for pid, v in sample.memory.items() if pid != os.getpid()]
        rss = sum(r for r, _ in sample.memory.values())
        pss = sum(p for _, p in sample.memory.values())
        lines.append(f"driver memory, {label}: RSS {mb(rss)}, PSS {mb(pss)} (coordinator RSS {mb(coordinator[0])}"
                     f" PSS {mb(coordinator[1])}; {len(workers)} workers RSS "
                     f"{' + '.join(mb(r) for r, _ in workers)}, PSS {' + '.join(mb(p) for _, p in workers)}); "
                     f"PSS per user {pss / args.users / 1024:,.0f} KiB")
    ok_backends = min(seen) == args.users
    ok_users = not idle and len(per_user) == args.users
    lines.append(f"# all {args.users} users connected during the whole steady state: {'yes' if ok_backends else 'NO'};"
                 f" every user committed in it: {'yes' if ok_users else 'NO'}")
    for line in lines[1:]:
        print(line, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")
    if not (ok_backends and ok_users):
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
