"""sysbench 1.0 and tpsbench side by side: same tables, same scripts, same threads.

For PostgreSQL and MariaDB: sysbench prepares 10 x 100,000 rows in a ``tpsb_sb_bench``
database, then for oltp_point_select, oltp_read_only and oltp_read_write sysbench runs 30 s
at 8 threads and tpsbench 30 s at 8 users (through the engine, on the tables sysbench
prepared), one after the other, ``--repeat`` times with the order alternating. Printed per
mode: both mean TPS, the ratio tpsbench/sysbench (of the means, and of each pair), and
what each side cost per transaction: client CPU (the client processes: sysbench, or the
engine's coordinator and workers) and server CPU (PostgreSQL: the backends serving the
benchmark database; MariaDB: the whole mariadbd). On a 2-core machine the client's CPU
is taken from the database, so it bounds the ratio; "other cores" shows how much of the
machine something else used meanwhile (other work on a shared machine, and kernel time
no process is charged for).

    python bench/vs_sysbench.py [--seconds 30] [--threads 8] [--repeat 2] [--out bench/results/vs_sysbench.txt]
        [--pg-url URL] [--mysql-url URL]

Installs Debian's sysbench with apt-get when it is missing. Drops and recreates the
tpsb_sb_bench databases (the URLs' databases: by default tpsb_sb_bench on
$TPSBENCH_BENCH_PG's and $TPSBENCH_BENCH_MYSQL's servers, else 127.0.0.1's; bench/servers.py).
The notes below the table in the output file are kept.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psycopg
import pymysql
from servers import add_url_options, database, mysql_args, pg_conninfo, urls  # type: ignore[import-not-found]

from tpsbench.core.session import RunContext
from tpsbench.engine.coordinator import LoadStep, run_steps
from tpsbench.targets import open_target
from tpsbench.workloads.sysbench import SysbenchWorkload

DB = "tpsb_sb_bench"
TABLES, TABLE_SIZE = 10, 100_000
MODES = ("oltp_point_select", "oltp_read_only", "oltp_read_write")


def sysbench_args(server: str, url: str) -> list[str]:
    """sysbench's options for the database at ``url``."""
    u, driver = urlsplit(url), "pgsql" if server == "postgresql" else "mysql"
    given = {"host": u.hostname, "port": u.port, "user": unquote(u.username or ""),
             "password": unquote(u.password or ""), "db": database(url)}
    return [f"--db-driver={driver}", *(f"--{driver}-{k}={v}" for k, v in given.items() if v)]


@dataclass
class Measured:
    tps: float
    client_cpu_s: float
    server_cpu_s: float
    wall_s: float
    machine_busy: float  # share of all cores busy (any process), 0..1

    def us_per_txn(self, cpu_s: float) -> float:
        return 1e6 * cpu_s / (self.tps * self.wall_s)

    @property
    def other_cores(self) -> float:
        """Cores busy with neither client nor server: other work on a shared machine."""
        cores = os.cpu_count() or 1
        return max(0.0, self.machine_busy * cores - (self.client_cpu_s + self.server_cpu_s) / self.wall_s)


def ensure_sysbench() -> str:
    found = shutil.which("sysbench")
    if found:
        return found
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "sysbench"], check=True, env=env)
    return shutil.which("sysbench") or "sysbench"


def recreate_database(server: str, url: str) -> None:
    db = database(url)
    if server == "postgresql":
        with psycopg.connect(pg_conninfo(url, "postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{db}"')
    else:
        conn = pymysql.connect(**mysql_args(url, db=""), autocommit=True)
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{db}`")
            conn.cursor().execute(f"CREATE DATABASE `{db}` CHARACTER SET utf8mb4")
        finally:
            conn.close()


def prepare_tables(binary: str, server: str, url: str) -> None:
    """A new database at ``url`` with sysbench's tables (TABLES x TABLE_SIZE rows)."""
    recreate_database(server, url)
    subprocess.run([binary, "oltp_read_write", *sysbench_args(server, url), f"--tables={TABLES}",
                    f"--table-size={TABLE_SIZE}", "--threads=2", "prepare"], check=True, capture_output=True)


SERVER_PROCESSES = {"postgresql": ("postgres",), "mariadb": ("mariadbd", "mysqld")}


def _proc_cpu(pid: str) -> tuple[str, int] | None:
    """(command name, utime + stime + cutime + cstime in ticks) of a process, None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    return text[text.index("(") + 1:text.rindex(")")], sum(int(v) for v in rest[11:15])


class ServerCpu(threading.Thread):
    """CPU seconds the server spends on the benchmark database.

    PostgreSQL: the backends whose process title names the database (``postgres: user
    tpsb_sb_bench ...``), sampled every 0.1 s until stopped, so that other databases'
    work on the same server (a shared machine) is not counted. MariaDB runs every
    connection as a thread of one process: its whole CPU is counted there.
    """

    def __init__(self, server: str, db: str) -> None:
        super().__init__(daemon=True)
        self.server, self.db, self.latest, self.stop_event = server, db, {}, threading.Event()
        self.base = self.total_ticks() if server == "mariadb" else 0

    def total_ticks(self) -> int:
        total = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            found = _proc_cpu(pid)
            if found and found[0] in SERVER_PROCESSES[self.server]:
                total += found[1]
        return total

    def run(self) -> None:
        if self.server == "mariadb":
            return
        marker = f" {self.db} ".encode()
        while not self.stop_event.wait(0.1):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if marker not in Path(f"/proc/{pid}/cmdline").read_bytes():
                        continue
                except OSError:
                    continue
                found = _proc_cpu(pid)
                if found and found[0] == "postgres":
                    self.latest[pid] = found[1]

    def seconds(self) -> float:
        self.stop_event.set()
        self.join()
        ticks = self.total_ticks() - self.base if self.server == "mariadb" else sum(self.latest.values())
        return ticks / os.sysconf("SC_CLK_TCK")


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all cores from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class Meter:
    """Client CPU (this process's finished children: sysbench, or the engine's workers),
    server CPU (on database ``db``) and machine load over a ``with`` block."""

    def __init__(self, server: str, db: str) -> None:
        self.server, self.db = server, db

    def __enter__(self) -> Meter:  # noqa: PYI034 - a plain class, never subclassed
        self.server_meter = ServerCpu(self.server, self.db)
        self.server_meter.start()
        self.children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.own = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu = cpu_times()
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.t0
        children, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        self.client_cpu = sum(getattr(children, f) - getattr(self.children, f) for f in ("ru_utime", "ru_stime"))
        self.client_cpu += sum(getattr(own, f) - getattr(self.own, f) for f in ("ru_utime", "ru_stime"))
        busy, total = cpu_times()
        self.busy = (busy - self.cpu[0]) / max(total - self.cpu[1], 1)
        self.server_cpu = self.server_meter.seconds()


def run_sysbench(binary: str, server: str, url: str, mode: str, seconds: int, threads: int) -> Measured:
    args = [binary, mode, *sysbench_args(server, url), f"--tables={TABLES}", f"--table-size={TABLE_SIZE}",
            f"--threads={threads}", f"--time={seconds}", "run"]
    with Meter(server, database(url)) as meter:
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    tps = float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out).group(1))  # type: ignore[union-attr]
    return Measured(tps, meter.client_cpu, meter.server_cpu, meter.wall, meter.busy)


def run_tpsbench(url: str, server: str, mode: str, seconds: int, users: int, workers: int | None = None,
                 multiplex: bool = True) -> Measured:
    """The same script through the engine; the CPU counted is the workers' (spawned children)
    plus this coordinator's own."""
    wl = SysbenchWorkload()
    options = {"mode": mode, "think": "off"}
    wl.configure(options)
    meta = wl.verify_schema(open_target(url))
    ctx = RunContext("sysbench", url, int(meta["scale"]), 1,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
    with Meter(server, database(url)) as meter:
        step = LoadStep(users=users, duration_s=float(seconds), rampup_s=2.0, interval_s=10.0, multiplex=multiplex)
        outcome = run_steps(ctx, wl, [step], workers=workers, live=None)
    result = outcome.steps[0]
    summary = result.summary
    if result.problems or summary is None:
        raise SystemExit(f"tpsbench run failed: {result.problems}")
    # the meter also spans start-up and ramp-up: scale the CPU to the measured window
    scale = seconds / meter.wall
    return Measured(summary.tps, meter.client_cpu * scale, meter.server_cpu * scale, float(seconds), meter.busy)


def pair_line(server: str, mode: str, pairs: list[tuple[Measured, Measured]]) -> str:
    """Means over the pairs: TPS, the ratio of the means and each pair's, CPU per transaction."""
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    sb_tps, our_tps = mean([p[0].tps for p in pairs]), mean([p[1].tps for p in pairs])
    each = ",".join(f"{o.tps / b.tps:.2f}" for b, o in pairs)
    cpu = [mean([m.us_per_txn(getattr(m, f)) for m in side]) for f in ("client_cpu_s", "server_cpu_s")
           for side in ([p[0] for p in pairs], [p[1] for p in pairs])]
    other = [mean([p[i].other_cores for p in pairs]) for i in (0, 1)]
    return (f"{server:10} {mode:18} {sb_tps:9,.0f} {our_tps:9,.0f} {our_tps / sb_tps:5.2f} ({each:<10}) "
            f"{cpu[0]:>6,.0f} | {cpu[1]:<6,.0f}  {cpu[2]:>6,.0f} | {cpu[3]:<6,.0f}  {other[0]:>4.2f} | {other[1]:<4.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeat", type=int, default=2,
                        help="pairs per mode, the order alternating (sysbench first, then tpsbench first)")
    parser.add_argument("--workers", type=int, default=None, help="tpsbench's worker processes (default: its own)")
    parser.add_argument("--no-multiplex", dest="multiplex", action="store_false",
                        help="every tpsbench user on a thread of its own (default: the workers' shared threads)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "vs_sysbench.txt")
    add_url_options(parser, DB)
    args = parser.parse_args(argv)
    binary = ensure_sysbench()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    lines = [
        (f"# sysbench vs tpsbench, {TABLES} x {TABLE_SIZE:,} rows, {args.threads} threads/users, "
         f"{args.seconds} s each; {version}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; "
         f"tpsbench workers {args.workers or 'default'}, {'shared threads' if args.multiplex else 'a thread per user'}"),
        "# CPU columns are per transaction (us) as sysbench | tpsbench; 'other' = cores busy with",
        "# neither client nor server (other work on the machine) during the run",
        (f"{'server':10} {'mode':18} {'sysbench':>9} {'tpsbench':>9} {'ratio':>5} {'(each pair)':<12} "
         f"{'client us/txn':>15}  {'server us/txn':>15}  {'other cores':>11}"),
    ]
    print("\n".join(lines), flush=True)
    for server in args.servers.split(","):
        url = urls(args)[server]
        prepare_tables(binary, server, url)
        for mode in args.modes.split(","):
            pairs = []
            for rep in range(args.repeat):
                if rep % 2:
                    ours = run_tpsbench(url, server, mode, args.seconds, args.threads, args.workers, args.multiplex)
                    sb = run_sysbench(binary, server, url, mode, args.seconds, args.threads)
                else:
                    sb = run_sysbench(binary, server, url, mode, args.seconds, args.threads)
                    ours = run_tpsbench(url, server, mode, args.seconds, args.threads, args.workers, args.multiplex)
                pairs.append((sb, ours))
            line = pair_line(server, mode, pairs)
            lines.append(line)
            print(line, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    notes = args.out.read_text().split("\n## Notes", 1)[1] if args.out.exists() and "\n## Notes" in args.out.read_text() else ""
    args.out.write_text("\n".join(lines) + "\n" + ("\n## Notes" + notes if notes else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
