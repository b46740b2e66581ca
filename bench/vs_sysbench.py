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

``--split-cores`` measures what a storage review's setup measures, where the driver has a
machine of its own: every thread of the database server is pinned to ``--server-cpus``
(default CPU 0) and this script, with the clients it starts (sysbench, the engine's
coordinator and workers), to the other cores, and every server thread's affinity is put
back afterwards, also after an error, Ctrl-C or SIGTERM. TPS then follows the work the
server does per transaction: the line adds the ratio of the server's CPU per
transaction (tpsbench/sysbench) and how busy the server's cores were. Its output goes
to ``vs_sysbench_split.txt``.

    python bench/vs_sysbench.py [--seconds 30] [--threads 8] [--repeat 2] [--out bench/results/vs_sysbench.txt]
        [--split-cores [--server-cpus 0]] [--pg-url URL] [--mysql-url URL]

Installs Debian's sysbench with apt-get when it is missing. Drops and recreates the
tpsb_sb_bench databases (the URLs' databases: by default tpsb_sb_bench on
$TPSBENCH_BENCH_PG's and $TPSBENCH_BENCH_MYSQL's servers, else 127.0.0.1's; bench/servers.py).
The notes below the table in the output file are kept.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote, urlsplit

import psycopg
import pymysql
from servers import add_url_options, database, mysql_args, pg_conninfo, urls  # type: ignore[import-not-found]

from tpsbench.core.session import RunContext
from tpsbench.engine.coordinator import LoadStep, RunStatus, run_steps
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
    server_cores_busy: float | None = None  # with --split-cores: share of the server's cores busy, 0..1

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


def cpu_times(cpus: frozenset[int] | None = None) -> tuple[float, float]:
    """(busy, total) jiffies from /proc/stat: of all cores, or of the cores ``cpus`` only."""
    lines = Path("/proc/stat").read_text().splitlines()
    wanted = [lines[0]] if cpus is None else [line for line in lines if line.startswith("cpu") and
                                              line[3:4].isdigit() and int(line.split()[0][3:]) in cpus]
    busy = total = 0
    for line in wanted:
        fields = [int(v) for v in line.split()[1:]]
        busy, total = busy + sum(fields) - fields[3] - fields[4], total + sum(fields)
    return busy, total


class Meter:
    """Client CPU (this process's finished children: sysbench, or the engine's workers),
    server CPU (on database ``db``) and machine load over a ``with`` block; with
    ``server_cpus`` (--split-cores) also how busy those cores were, in ``server_cores_busy``."""

    def __init__(self, server: str, db: str, server_cpus: frozenset[int] | None = None) -> None:
        self.server, self.db, self.server_cpus = server, db, server_cpus
        self.server_cores_busy: float | None = None

    def __enter__(self) -> Meter:  # noqa: PYI034 - a plain class, never subclassed
        self.server_meter = ServerCpu(self.server, self.db)
        self.server_meter.start()
        self.children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.own = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu = cpu_times()
        self.server_cores = cpu_times(self.server_cpus) if self.server_cpus else None
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.t0
        children, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        self.client_cpu = sum(getattr(children, f) - getattr(self.children, f) for f in ("ru_utime", "ru_stime"))
        self.client_cpu += sum(getattr(own, f) - getattr(self.own, f) for f in ("ru_utime", "ru_stime"))
        busy, total = cpu_times()
        self.busy = (busy - self.cpu[0]) / max(total - self.cpu[1], 1)
        if self.server_cores is not None:
            busy, total = cpu_times(self.server_cpus)
            self.server_cores_busy = (busy - self.server_cores[0]) / max(total - self.server_cores[1], 1)
        self.server_cpu = self.server_meter.seconds()


def server_threads(server: str) -> dict[int, int]:
    """Every thread of the server's processes (thread id -> its process id): PostgreSQL's
    postmaster, background processes and backends, mariadbd's connection threads."""
    threads = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        found = _proc_cpu(pid)
        if found and found[0] in SERVER_PROCESSES[server]:
            with contextlib.suppress(OSError):
                threads.update({int(tid): int(pid) for tid in os.listdir(f"/proc/{pid}/task")})
    return threads


class SplitCores:
    """The server's threads on ``server_cpus``, this process (and so every client it
    starts from now on: affinity is inherited) on ``client_cpus``, for a ``with`` block.

    Threads and processes the server starts meanwhile (a PostgreSQL backend per
    connection, a MariaDB connection thread) inherit the pinned set; :meth:`pin` catches
    any that started before it took effect. On the way out, by error, Ctrl-C or SIGTERM
    (turned into KeyboardInterrupt while inside) alike, every thread that was there at
    the start gets back the set it had, and one started meanwhile the set its server's
    oldest thread had (the postmaster's, mariadbd's main thread's), never the pinned set
    it inherited: the servers are left as they were found.
    """

    def __init__(self, servers: list[str], server_cpus: frozenset[int], client_cpus: frozenset[int]) -> None:
        self.servers, self.server_cpus, self.client_cpus = servers, server_cpus, client_cpus
        #: (thread id, its start time: ids are reused) -> the set it had before
        self.saved: dict[tuple[int, int | None], set[int]] = {}
        self.first: dict[str, set[int]] = {}  # server -> the set of its oldest thread

    def __enter__(self) -> SplitCores:  # noqa: PYI034 - a plain class, never subclassed
        self.own = {int(tid): os.sched_getaffinity(int(tid)) for tid in os.listdir("/proc/self/task")}
        self.previous_term = signal.signal(signal.SIGTERM, _interrupt)
        try:
            self.pin(first=True)
            for tid in self.own:
                os.sched_setaffinity(tid, self.client_cpus)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def pin(self, first: bool = False) -> None:
        """Pin every server thread; the ``first`` time, keep the set each one had (later,
        a thread not seen before holds the pinned set it inherited, not one to restore)."""
        for server in self.servers:
            threads = server_threads(server)
            if not threads:
                raise SystemExit(f"--split-cores: no {'/'.join(SERVER_PROCESSES[server])} process on this host")
            for tid in sorted(threads):
                with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                    if first:
                        cpus = self.saved[(tid, _started(tid))] = os.sched_getaffinity(tid)
                        self.first.setdefault(server, cpus)
                    os.sched_setaffinity(tid, self.server_cpus)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            everything = os.sched_getaffinity(1)
            for server in self.servers:
                for tid in server_threads(server):
                    with contextlib.suppress(ProcessLookupError):
                        os.sched_setaffinity(tid, self.saved.get((tid, _started(tid))) or self.first.get(server)
                                             or everything)
            for tid, cpus in self.own.items():
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(tid, cpus)
        finally:
            signal.signal(signal.SIGTERM, self.previous_term)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def describe(self) -> str:
        return describe_split(self.server_cpus, self.client_cpus)


def describe_split(server_cpus: frozenset[int], client_cpus: frozenset[int]) -> str:
    """The split in words, for the output's header."""
    return f"server on CPU {cpu_text(server_cpus)}, clients on CPU {cpu_text(client_cpus)}"


def _started(tid: int) -> int | None:
    """A thread's start time (clock ticks after boot), None once it is gone."""
    try:
        text = Path(f"/proc/{tid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[19])


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def cpu_text(cpus: frozenset[int]) -> str:
    """A CPU set as a list (``0,1``)."""
    return ",".join(map(str, sorted(cpus)))


def parse_cpus(text: str) -> frozenset[int]:
    """A CPU list as taskset writes one: ``0``, ``0,2``, ``0-3``."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)


def run_sysbench(binary: str, server: str, url: str, mode: str, seconds: int, threads: int,
                 server_cpus: frozenset[int] | None = None) -> Measured:
    args = [binary, mode, *sysbench_args(server, url), f"--tables={TABLES}", f"--table-size={TABLE_SIZE}",
            f"--threads={threads}", f"--time={seconds}", "run"]
    with Meter(server, database(url), server_cpus) as meter:
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    tps = float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out).group(1))  # type: ignore[union-attr]
    return Measured(tps, meter.client_cpu, meter.server_cpu, meter.wall, meter.busy, meter.server_cores_busy)


def run_tpsbench(url: str, server: str, mode: str, seconds: int, users: int, workers: int | None = None,
                 multiplex: bool = True, server_cpus: frozenset[int] | None = None) -> Measured:
    """The same script through the engine; the CPU counted is the workers' (spawned children)
    plus this coordinator's own. ``server_cpus``: the server's cores, whose busy share is
    measured (--split-cores)."""
    wl = SysbenchWorkload()
    options = {"mode": mode, "think": "off"}
    wl.configure(options)
    meta = wl.verify_schema(open_target(url))
    ctx = RunContext("sysbench", url, int(meta["scale"]), 1,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
    with Meter(server, database(url), server_cpus) as meter:
        step = LoadStep(users=users, duration_s=float(seconds), rampup_s=2.0, interval_s=10.0, multiplex=multiplex)
        outcome = run_steps(ctx, wl, [step], workers=workers, live=None)
    if outcome.status is RunStatus.INTERRUPTED:  # the engine took the Ctrl-C (SIGTERM) for itself: stop here too
        raise KeyboardInterrupt(f"signal {outcome.signal}")
    result = outcome.steps[0]
    summary = result.summary
    if result.problems or summary is None:
        raise SystemExit(f"tpsbench run failed: {result.problems}")
    # the meter also spans start-up and ramp-up: scale the CPU to the measured window
    scale = seconds / meter.wall
    return Measured(summary.tps, meter.client_cpu * scale, meter.server_cpu * scale, float(seconds), meter.busy,
                    meter.server_cores_busy)


def pair_line(server: str, mode: str, pairs: list[tuple[Measured, Measured]], split: bool = False) -> str:
    """Means over the pairs: TPS, the ratio of the means and each pair's, CPU per transaction;
    with ``split`` also the server's CPU per transaction as tpsbench/sysbench and the share
    of the server's cores busy."""
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    sb_tps, our_tps = mean([p[0].tps for p in pairs]), mean([p[1].tps for p in pairs])
    each = ",".join(f"{o.tps / b.tps:.2f}" for b, o in pairs)
    cpu = [mean([m.us_per_txn(getattr(m, f)) for m in side]) for f in ("client_cpu_s", "server_cpu_s")
           for side in ([p[0] for p in pairs], [p[1] for p in pairs])]
    other = [mean([p[i].other_cores for p in pairs]) for i in (0, 1)]
    line = (f"{server:10} {mode:18} {sb_tps:9,.0f} {our_tps:9,.0f} {our_tps / sb_tps:5.2f} ({each:<10}) "
            f"{cpu[0]:>6,.0f} | {cpu[1]:<6,.0f}  {cpu[2]:>6,.0f} | {cpu[3]:<6,.0f}  {other[0]:>4.2f} | {other[1]:<4.2f}")
    if not split:
        return line
    busy = [mean([p[i].server_cores_busy or 0.0 for p in pairs]) for i in (0, 1)]
    return f"{line}  {cpu[3] / cpu[2]:>10.3f}  {busy[0]:>4.2f} | {busy[1]:<4.2f}"


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
    parser.add_argument("--split-cores", action="store_true",
                        help="the server's threads on --server-cpus, the clients on the other cores (restored after)")
    parser.add_argument("--server-cpus", type=parse_cpus, default=frozenset({0}), metavar="LIST",
                        help="the server's cores with --split-cores, as taskset lists them (default 0)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default results/vs_sysbench.txt, with --split-cores vs_sysbench_split.txt)")
    add_url_options(parser, DB)
    args = parser.parse_args(argv)
    args.out = args.out or Path(__file__).parent / "results" / (
        "vs_sysbench_split.txt" if args.split_cores else "vs_sysbench.txt")
    allowed = frozenset(os.sched_getaffinity(0))
    if args.split_cores and not args.server_cpus < allowed:
        parser.error(f"--server-cpus {cpu_text(args.server_cpus)} must be some of this process's CPUs "
                     f"{cpu_text(allowed)}, not all")
    compare(args, args.servers.split(","), (args.server_cpus, allowed - args.server_cpus) if args.split_cores else None)


def compare(args: argparse.Namespace, servers: list[str], cores: tuple[frozenset[int], frozenset[int]] | None) -> None:
    """Every server's and mode's pairs, printed line by line and written to ``args.out``.
    ``cores``: the server's and the clients' CPUs (--split-cores), each server pinned only
    while it is measured, so that the other (and what else uses it) keeps every core."""
    binary = ensure_sysbench()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    lines = [
        (f"# sysbench vs tpsbench, {TABLES} x {TABLE_SIZE:,} rows, {args.threads} threads/users, "
         f"{args.seconds} s each; {version}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; "
         f"tpsbench workers {args.workers or 'default'}, {'shared threads' if args.multiplex else 'a thread per user'}"),
        "# CPU columns are per transaction (us) as sysbench | tpsbench; 'other' = cores busy with",
        "# neither client nor server (other work on the machine) during the run",
        (f"{'server':10} {'mode':18} {'sysbench':>9} {'tpsbench':>9} {'ratio':>5} {'(each pair)':<12} "
         f"{'client us/txn':>15}  {'server us/txn':>15}  {'other cores':>11}"
         + (f"  {'server t/s':>10}  {'server busy':>11}" if cores else "")),
    ]
    if cores:
        lines[1:1] = [
            f"# --split-cores: {describe_split(*cores)}; load average {os.getloadavg()[0]:.2f} (1 minute) at the start",
            "# 'server t/s' = server us/txn of tpsbench / of sysbench; 'server busy' = share of the server's cores busy"]
    print("\n".join(lines), flush=True)
    for server in servers:
        url = urls(args)[server]
        prepare_tables(binary, server, url)
        with SplitCores([server], *cores) if cores else contextlib.nullcontext() as split:
            lines.extend(measure_modes(args, binary, server, url, split))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    notes = args.out.read_text().split("\n## Notes", 1)[1] if args.out.exists() and "\n## Notes" in args.out.read_text() else ""
    args.out.write_text("\n".join(lines) + "\n" + ("\n## Notes" + notes if notes else ""))


def measure_modes(args: argparse.Namespace, binary: str, server: str, url: str, split: SplitCores | None) -> list[str]:
    """Each mode's pairs on ``server``, a line each (printed as it is measured)."""
    server_cpus, lines = split.server_cpus if split else None, []
    for mode in args.modes.split(","):
        pairs = []
        for rep in range(args.repeat):
            if split:
                split.pin()
            if rep % 2:
                ours = run_tpsbench(url, server, mode, args.seconds, args.threads, args.workers, args.multiplex,
                                    server_cpus)
                sb = run_sysbench(binary, server, url, mode, args.seconds, args.threads, server_cpus)
            else:
                sb = run_sysbench(binary, server, url, mode, args.seconds, args.threads, server_cpus)
                ours = run_tpsbench(url, server, mode, args.seconds, args.threads, args.workers, args.multiplex,
                                    server_cpus)
            pairs.append((sb, ours))
        line = pair_line(server, mode, pairs, split is not None)
        lines.append(line)
        print(line, flush=True)
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
