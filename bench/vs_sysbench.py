"""sysbench 1.0 and tpsbench side by side: same tables, same scripts, same threads.

For PostgreSQL and MariaDB: sysbench prepares 10 x 100,000 rows in a ``tpsb_sb_bench``
database, then for oltp_point_select, oltp_read_only and oltp_read_write sysbench runs 30 s
at 8 threads and tpsbench 30 s at 8 users (through the engine, on the tables sysbench
prepared), one after the other. Printed per pair: both TPS, the ratio tpsbench/sysbench,
and what the clients cost (CPU seconds of the client processes per transaction, and the
share of the machine's two cores they took), because on a 2-core machine the client's
CPU is taken from the database and bounds the ratio.

    python bench/vs_sysbench.py [--seconds 30] [--threads 8] [--out bench/results/vs_sysbench.txt]

Installs Debian's sysbench with apt-get when it is missing. Drops and recreates the
tpsb_sb_bench databases.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pymysql

from tpsbench.api.engine import Step, run_steps
from tpsbench.api.session import RunContext
from tpsbench.targets import open_target
from tpsbench.workloads.sysbench import SysbenchWorkload

DB = "tpsb_sb_bench"
TABLES, TABLE_SIZE = 10, 100_000
MODES = ("oltp_point_select", "oltp_read_only", "oltp_read_write")
SERVERS = {
    "postgresql": (f"postgresql://postgres@127.0.0.1/{DB}",
                   ["--db-driver=pgsql", "--pgsql-host=127.0.0.1", "--pgsql-user=postgres", f"--pgsql-db={DB}"]),
    "mariadb": (f"mysql://root@127.0.0.1/{DB}",
                ["--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-user=root", f"--mysql-db={DB}"]),
}


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


def recreate_database(server: str) -> None:
    if server == "postgresql":
        with psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{DB}"')
    else:
        conn = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{DB}`")
            conn.cursor().execute(f"CREATE DATABASE `{DB}` CHARACTER SET utf8mb4")
        finally:
            conn.close()


SERVER_PROCESSES = {"postgresql": ("postgres",), "mariadb": ("mariadbd", "mysqld")}


def server_cpu(server: str) -> float:
    """CPU seconds of the server's processes so far: PostgreSQL's live processes plus what
    the postmaster reaped of its exited backends (cutime), or mariadbd's threads."""
    names, tick, total = SERVER_PROCESSES[server], os.sysconf("SC_CLK_TCK"), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if comm in names:
            total += sum(int(v) for v in rest[11:15])  # utime stime cutime cstime
    return total / tick


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all cores from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class Meter:
    """Client CPU (this process's finished children: sysbench, or the engine's workers),
    server CPU and machine load over a ``with`` block."""

    def __init__(self, server: str) -> None:
        self.server = server

    def __enter__(self) -> Meter:  # noqa: PYI034 - a plain class, never subclassed
        self.server0 = server_cpu(self.server)
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
        self.server_cpu = server_cpu(self.server) - self.server0


def run_sysbench(binary: str, server: str, conn_args: list[str], mode: str, seconds: int, threads: int) -> Measured:
    args = [binary, mode, *conn_args, f"--tables={TABLES}", f"--table-size={TABLE_SIZE}",
            f"--threads={threads}", f"--time={seconds}", "run"]
    with Meter(server) as meter:
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    tps = float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out).group(1))  # type: ignore[union-attr]
    return Measured(tps, meter.client_cpu, meter.server_cpu, meter.wall, meter.busy)


def run_tpsbench(url: str, server: str, mode: str, seconds: int, users: int) -> Measured:
    """The same script through the engine; the CPU counted is the workers' (spawned children)
    plus this coordinator's own."""
    wl = SysbenchWorkload()
    options = {"mode": mode, "think": "off"}
    wl.configure(options)
    meta = wl.verify_schema(open_target(url))
    ctx = RunContext("sysbench", url, int(meta["scale"]), 1,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
    with Meter(server) as meter:
        outcome = run_steps(ctx, wl, [Step(users=users, duration_s=float(seconds), rampup_s=2.0, interval_s=10.0)],
                            live=None)
    result = outcome.steps[0]
    summary = result.summary
    if result.problems or summary is None:
        raise SystemExit(f"tpsbench run failed: {result.problems}")
    # the meter also spans start-up and ramp-up: scale the CPU to the measured window
    scale = seconds / meter.wall
    return Measured(summary.tps, meter.client_cpu * scale, meter.server_cpu * scale, float(seconds), meter.busy)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "vs_sysbench.txt")
    args = parser.parse_args(argv)
    binary = ensure_sysbench()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    lines = [
        (f"# sysbench vs tpsbench, {TABLES} x {TABLE_SIZE:,} rows, {args.threads} threads/users, "
         f"{args.seconds} s each; {version}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}"),
        "# CPU columns are per transaction (us) as sysbench | tpsbench; 'other' = cores busy with",
        "# neither client nor server (other work on the machine) during the run",
        (f"{'server':10} {'mode':18} {'sysbench':>9} {'tpsbench':>9} {'ratio':>5}  {'client us/txn':>15}  "
         f"{'server us/txn':>15}  {'other cores':>11}"),
    ]
    print("\n".join(lines), flush=True)
    for server in args.servers.split(","):
        url, conn_args = SERVERS[server]
        recreate_database(server)
        subprocess.run([binary, "oltp_read_write", *conn_args, f"--tables={TABLES}", f"--table-size={TABLE_SIZE}",
                        "--threads=2", "prepare"], check=True, capture_output=True)
        for mode in args.modes.split(","):
            sb = run_sysbench(binary, server, conn_args, mode, args.seconds, args.threads)
            ours = run_tpsbench(url, server, mode, args.seconds, args.threads)
            line = (f"{server:10} {mode:18} {sb.tps:9,.0f} {ours.tps:9,.0f} {ours.tps / sb.tps:5.2f}  "
                    f"{sb.us_per_txn(sb.client_cpu_s):>6,.0f} | {ours.us_per_txn(ours.client_cpu_s):<6,.0f}  "
                    f"{sb.us_per_txn(sb.server_cpu_s):>6,.0f} | {ours.us_per_txn(ours.server_cpu_s):<6,.0f}  "
                    f"{sb.other_cores:>4.2f} | {ours.other_cores:<4.2f}")
            lines.append(line)
            print(line, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    notes = args.out.read_text().split("\n## Notes", 1)[1] if args.out.exists() and "\n## Notes" in args.out.read_text() else ""
    args.out.write_text("\n".join(lines) + "\n" + ("\n## Notes" + notes if notes else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
