"""TPC-C through the public API on PostgreSQL and MariaDB, with the driver's own CPU bill.

For each server: a ``tpsb_eng_tpcc`` database of 2 warehouses, then
one step of 8 users, no think time, 10 s ramp-up and 60 s steady state through
:func:`tpsbench.commands.run.run`; the database is built anew before every run (see
:func:`run_one` for why). Printed per server: tpmC, TPS, the driver's CPU seconds
per 1,000 committed transactions and the driver's share of the CPU that driver and
database together used during the steady state.

How CPU is counted (all from /proc, sampled every 0.25 s by a separate monitor process
that is not counted, then interpolated at the first and last second of the steady
window, which the run's own steady intervals give):

- driver: utime + stime of the coordinator (this process) and every child of it (the
  worker processes), the monitor and multiprocessing's resource tracker excepted;
- PostgreSQL: every child of the postmaster and the postmaster itself, split into the
  backends of this run's database and their parallel-query workers ("ours") and the
  server's background processes (checkpointer, WAL writer, background writer ...);
  client backends of other databases and their helpers (other people's work on the
  shared server) are left out;
- MariaDB: the threads of mariadbd (/proc/<pid>/task), split the same way through
  information_schema.PROCESSLIST's TID column: threads serving this run's database
  ("ours"), threads serving other connections (left out), and the rest (background:
  InnoDB purge, page cleaner, log writer ...). A thread that lives and dies between two
  samples is not seen at all.

share = driver / (driver + server ours + server background); ``share (vs ours only)``
leaves background out, which is the upper bound on the driver's share.

    python bench/engine_tpcc.py [--servers postgresql,mariadb] [--duration 60] [--repeat 1]
        [--variants procedures=on,procedures=off]

``--variants`` lists the run options to compare, run alternately (options of one variant
joined by ``+``, e.g. ``procedures=off+client=dbapi``): the stored-procedure path (one
call per transaction, the default wherever it exists) against the statement path.
Two engine settings can be varied too: ``multiplex=on|off`` (users sharing one thread
per worker, tpsbench.engine.multiplex, or a thread each) and ``workers=K``; and the
transport: ``transport=tcp`` (the default: 127.0.0.1) or ``transport=socket`` (the
servers' Unix sockets, as pgbench and the MySQL clients connect to ``localhost``; the
kernel's loopback TCP path is a third of the driver's CPU, bench/results/engine_tpcc.txt).

Also checks, before the runs, that psycopg really runs the TPC-C statements as
prepared statements (pg_prepared_statements of a session after 300 transactions).
"""

from __future__ import annotations

import argparse
import bisect
import multiprocessing as mp
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpsbench.commands.run import RunConfig, RunRecord, run

DB = "tpsb_eng_tpcc"
URLS = {
    "postgresql": f"postgresql://postgres@127.0.0.1:5432/{DB}",
    "mariadb": f"mysql://root@127.0.0.1:3306/{DB}",
}
#: the same databases through the servers' Unix sockets (variant option transport=socket)
SOCKET_URLS = {
    "postgresql": f"postgresql://postgres@/{DB}?host=/var/run/postgresql",
    "mariadb": f"mysql://root@localhost/{DB}?unix_socket=/run/mysqld/mysqld.sock",
}
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_S = 0.25
OUT = Path(__file__).parent / "results" / "engine_tpcc.txt"
_PG_CLIENT = re.compile(r"^postgres: [^:]+: (\S+) (\S+) (\S+\(\d+\)|\[local\])")
_PG_AUTOVACUUM = re.compile(r"^postgres: [^:]+: autovacuum worker ?(\S*)")
_PG_PARALLEL = re.compile(r"^postgres: [^:]+: parallel worker for PID (\d+)")


# -- /proc ----------------------------------------------------------------------------
def read_stat(path: str) -> tuple[int, int, int, str] | None:
    """(ppid, utime + stime in ticks, start time in ticks, comm) of a /proc stat file."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19]), comm


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise RuntimeError("no btime in /proc/stat")


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def find_server(server: str) -> int:
    """The postmaster's or mariadbd's pid."""
    for pid in all_pids():
        st = read_stat(f"/proc/{pid}/stat")
        if st is None:
            continue
        if server == "postgresql" and st[3] == "postgres" and "/bin/postgres" in cmdline(pid).split(" ")[0]:
            return pid
        if server == "mariadb" and st[3] in ("mariadbd", "mysqld"):
            return pid
    raise RuntimeError(f"no {server} server process found")


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) ticks of all cores."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def memory(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) in bytes summed over ``pids`` from /proc/<pid>/smaps_rollup."""
    rss = pss = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1]) * 1024
            elif line.startswith("Pss:"):
                pss += int(line.split()[1]) * 1024
    return rss, pss


# -- the monitor process ------------------------------------------------------------------
@dataclass
class Sample:
    t: float
    #: key -> ticks; keys: ("driver", pid, role), ("server", id, class)
    cpu: dict[tuple, int]
    #: key -> start time (wall clock seconds)
    started: dict[tuple, float]
    machine: tuple[int, int]
    backends: int  # connections of our database seen by the server
    #: driver pid -> (RSS, PSS) bytes, in every ``memory_every``-th sample
    memory: dict[int, tuple[int, int]] = field(default_factory=dict)


def monitor_main(coordinator: int, server: str, db: str, out: Any, stop: Any, every: float,
                 memory_every: int = 0) -> None:
    """Sample driver and server CPU every ``every`` seconds until ``stop`` is set; send the samples.

    With ``memory_every`` > 0 every such sample also reads the driver processes' memory.
    """
    me = os.getpid()
    btime = boot_time()
    server_pid = find_server(server)
    roles: dict[int, str] = {}  # mariadb tid -> "ours" / "other" (connection threads seen)
    mconn = None
    if server == "mariadb":
        import MySQLdb

        mconn = MySQLdb.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    samples: list[Sample] = []
    while True:
        t = time.time()
        cpu: dict[tuple, int] = {}
        started: dict[tuple, float] = {}
        mem: dict[int, tuple[int, int]] = {}
        backends = 0
        pids = all_pids()
        for pid in pids:
            if pid == me:
                continue
            st = read_stat(f"/proc/{pid}/stat")
            if st is None:
                continue
            ppid, ticks, start, _ = st
            if pid == coordinator or ppid == coordinator:
                if pid != coordinator and "spawn_main" not in cmdline(pid):
                    continue  # multiprocessing's resource tracker (for the monitor's Event), not the driver
                key: tuple = ("driver", pid, "coordinator" if pid == coordinator else "worker")
                if memory_every and len(samples) % memory_every == 0:
                    mem[pid] = memory([pid])
            elif server == "postgresql" and (pid == server_pid or ppid == server_pid):
                text = cmdline(pid)
                m = _PG_CLIENT.match(text)
                if m and m.group(2) != db:
                    continue  # another database's client: someone else's work
                vacuumed = _PG_AUTOVACUUM.match(text)
                if vacuumed and vacuumed.group(1) not in (db, ""):
                    continue  # autovacuum of another database
                helper = _PG_PARALLEL.match(text)
                if helper:  # a parallel query's worker belongs to its leader's database
                    leader = _PG_CLIENT.match(cmdline(int(helper.group(1))))
                    if not leader or leader.group(2) != db:
                        continue
                kind = "ours" if m or helper else "background"
                backends += bool(m)
                key = ("server", pid, kind)
            else:
                continue
            cpu[key] = ticks
            started[key] = btime + start / TICK
        if server == "mariadb":
            cur = mconn.cursor()
            cur.execute("SELECT TID, DB FROM information_schema.PROCESSLIST")
            for tid, name in cur.fetchall():
                name = name.decode() if isinstance(name, bytes) else name
                roles[int(tid)] = "ours" if name == db else "other"
            cur.close()
            try:
                tids = [int(x) for x in os.listdir(f"/proc/{server_pid}/task")]
            except OSError:
                tids = []
            for tid in tids:
                st = read_stat(f"/proc/{server_pid}/task/{tid}/stat")
                if st is None:
                    continue
                role = roles.get(tid, "background")
                if role == "other":
                    continue
                backends += role == "ours"
                key = ("server", tid, role)
                cpu[key] = st[1]
                started[key] = btime + st[2] / TICK
        samples.append(Sample(t, cpu, started, machine_jiffies(), backends, mem))
        if stop.wait(max(0.0, every - (time.time() - t))):
            break
    if mconn is not None:
        mconn.close()
    out.send(samples)
    out.close()


class Monitor:
    """The monitor process around a run: ``with Monitor(...) as m: run(...)``; then m.samples."""

    def __init__(self, server: str, db: str = DB, every: float = SAMPLE_S, memory_every: int = 0) -> None:
        self.server, self.db, self.every, self.memory_every = server, db, every, memory_every
        self.samples: list[Sample] = []

    def __enter__(self) -> Monitor:  # noqa: PYI034 - a plain class, never subclassed
        ctx = mp.get_context("spawn")
        self.stop = ctx.Event()
        self.ours, theirs = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=monitor_main, args=(os.getpid(), self.server, self.db, theirs, self.stop,
                                                              self.every, self.memory_every), daemon=True)
        self.process.start()
        theirs.close()
        time.sleep(1.0)  # its first samples are taken before the run starts
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.samples = self.ours.recv()
        self.process.join(5)

    def cpu_at(self, t: float) -> dict[tuple, float]:
        """Ticks of every process/thread at wall-clock ``t``, interpolated between samples.

        A process seen only after ``t`` counts 0 at ``t`` if it started after ``t`` (else
        its first value); one gone before ``t`` keeps its last value.
        """
        times = [s.t for s in self.samples]
        i = bisect.bisect_right(times, t)
        before = self.samples[max(i - 1, 0)]
        after = self.samples[min(i, len(self.samples) - 1)]
        span = after.t - before.t
        w = (t - before.t) / span if span > 0 else 0.0
        keys = set(before.cpu) | set(after.cpu)
        out: dict[tuple, float] = {}
        for key in keys:
            a, b = before.cpu.get(key), after.cpu.get(key)
            if a is None:
                a = 0.0 if self._started(key) >= before.t else b
            if b is None:
                b = self._last(key, i)
            out[key] = a + (b - a) * w
        for key, value in self._history(i).items():  # gone before t: keep their last value
            out.setdefault(key, value)
        return out

    def _started(self, key: tuple) -> float:
        return self._first(key, "started")

    def _first(self, key: tuple, field: str = "cpu") -> float:
        """``key``'s value in the first sample that saw it (its ticks, or its start time)."""
        for s in self.samples:
            values = getattr(s, field)
            if key in values:
                return values[key]
        return 0.0

    def _last(self, key: tuple, i: int) -> float:
        for s in reversed(self.samples[:i]):
            if key in s.cpu:
                return s.cpu[key]
        return 0.0

    def _history(self, i: int) -> dict[tuple, float]:
        last: dict[tuple, float] = {}
        for s in self.samples[:i]:
            last.update(s.cpu)
        return last

    def window(self, t0: float, t1: float) -> Window:
        a, b = self.cpu_at(t0), self.cpu_at(t1)
        keys = set(a) | set(b)
        parts: dict[str, float] = {}
        impossible: list[str] = []
        for key in keys:
            # a process that started inside the window counts from 0; one older than the
            # window that no sample near its start saw (its title read mid-rewrite in one
            # sample only, say) from the first value seen, not from 0 (its whole life)
            start = 0.0 if self._started(key) >= t0 else a[key] if key in a else self._first(key)
            delta = (b.get(key, a.get(key, 0.0)) - start) / TICK
            name = f"{key[0]}:{key[2]}"
            parts[name] = parts.get(name, 0.0) + max(delta, 0.0)
            if delta > t1 - t0 + 1.0:  # more than one core can give: counted from the wrong baseline
                impossible.append(f"{name} pid {key[1]} {delta:.1f} s")
        inside = [s for s in self.samples if t0 <= s.t <= t1]
        m0, m1 = inside[0].machine, inside[-1].machine
        busy = (m1[0] - m0[0]) / max(m1[1] - m0[1], 1)
        return Window(t1 - t0, parts, busy * (os.cpu_count() or 1), [s.backends for s in inside], impossible)


@dataclass
class Window:
    seconds: float
    #: CPU seconds by "driver:coordinator", "driver:worker", "server:ours", "server:background"
    parts: dict[str, float]
    #: cores busy with anything (every process on the machine)
    machine_cores: float
    backends: list[int] = field(default_factory=list)
    #: processes whose CPU in the window exceeds the window itself (one core's worth): a
    #: sampling artefact seen in some runs (session 8), which inflates their part
    impossible: list[str] = field(default_factory=list)

    @property
    def driver(self) -> float:
        return sum(v for k, v in self.parts.items() if k.startswith("driver:"))

    @property
    def server(self) -> float:
        return sum(v for k, v in self.parts.items() if k.startswith("server:"))

    @property
    def server_ours(self) -> float:
        return self.parts.get("server:ours", 0.0)

    @property
    def share(self) -> float:
        return self.driver / (self.driver + self.server) if self.driver + self.server else 0.0

    @property
    def share_vs_ours(self) -> float:
        return self.driver / (self.driver + self.server_ours) if self.driver + self.server_ours else 0.0


def steady_window(record: RunRecord) -> tuple[float, float]:
    """Wall-clock first and last second of the (one) step's steady state."""
    steady = [r for r in record.outcome.steps[0].intervals if r.steady]
    if not steady:
        raise SystemExit("the run has no steady interval")
    return steady[0].t_start, steady[-1].t_end


# -- pg_prepared_statements ---------------------------------------------------------------
def check_prepared(url: str, transactions: int = 300) -> str:
    """Run TPC-C transactions on one statement-path session and read back its pg_prepared_statements."""
    from tpsbench.core.meta import read_meta
    from tpsbench.core.session import RunContext
    from tpsbench.targets import open_target
    from tpsbench.workloads.tpcc import TpccWorkload

    target = open_target(url)
    meta = read_meta(target, "tpcc")
    ctx = RunContext("tpcc", url, int(meta["scale"]), 7,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")},
                     {"think": "off", "procedures": "off"})
    conn = target.connect()
    try:
        session = TpccWorkload().open_session(ctx, 0, 1, conn, target)
        executions = 0
        for _ in range(transactions):
            name = session.next_transaction()
            session.execute(name, session.inputs(name))
        cur = conn.cursor()
        cur.execute("SELECT count(*), coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements")
        count, executions = cur.fetchone()
        cur.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement ~* '(INSERT|UPDATE|DELETE|SELECT)'"
                    " AND generic_plans + custom_plans > 1")
        reused = cur.fetchone()[0]
        conn.rollback()
    finally:
        conn.close()
    return (f"pg_prepared_statements after {transactions} TPC-C transactions on one session: {count} statements "
            f"prepared, {reused} of them executed more than once, {executions} executions of prepared plans")


# -- one run ------------------------------------------------------------------------------
@dataclass
class Result:
    server: str
    tpmc: float
    tps: float
    commits: int
    window: Window
    honesty: bool
    errors: int
    retries: int
    variant: str = ""

    @property
    def cpu_per_1000(self) -> float:
        return 1000.0 * self.window.driver / self.commits if self.commits else float("nan")


def run_one(server: str, users: int, rampup: float, duration: float, options: dict[str, str] | None = None,
            db: str = DB, scale: int = 2, every: float = SAMPLE_S, memory_every: int = 0,
            workers: int | None = None, fresh: bool = True, multiplex: bool = True, socket: bool = False,
            ) -> tuple[Result, RunRecord, Monitor]:
    """One step through :func:`tpsbench.commands.run.run`, watched by a :class:`Monitor`; the
    result of its steady window.

    ``fresh``: build ``db`` anew first (seed 0, ANALYZE after the load), so that every run
    starts from the same data and statistics. This server runs with autovacuum off (its
    CI configuration), so a run leaves the small hot tables bloated (DISTRICT grows from 1
    to thousands of pages) and their statistics stale, which turns the planner's
    Stock-Level plan from 1 ms to 0.1-1 s: a database worn by earlier runs measures
    itself, not the driver. Without ``fresh`` the database is built only when missing.
    ``socket``: the driver connects through the server's Unix socket, not TCP.
    """
    from tpsbench.commands.build import build
    from tpsbench.targets import open_target

    url = (SOCKET_URLS if socket else URLS)[server].replace(DB, db)
    if fresh:
        build("tpcc", scale, url, seed=0, drop_existing=True, show_progress=False)
        if server == "postgresql":  # the load's dirty pages are the build's to write, not the run's
            import psycopg

            with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
                conn.execute("CHECKPOINT")
    else:
        open_target(url).ensure_database()  # run() builds into an existing database only
    with tempfile.TemporaryDirectory(prefix="tpsb_eng_") as tmp:
        config = RunConfig(workload="tpcc", url=url, users=[users], rampup_s=rampup, duration_s=duration,
                           interval_s=10.0, options={"think": "off", **(options or {})}, build_scale=scale,
                           results_url=f"sqlite:///{tmp}/results.db", seed=12345, workers=workers,
                           multiplex=multiplex)
        with Monitor(server, db, every, memory_every) as monitor:
            record = run(config, live=None)
        summary = record.outcome.steps[0].summary
        if summary is None or record.outcome.steps[0].problems:
            raise SystemExit(f"{server}: the run failed: {record.outcome.steps[0].problems}")
        t0, t1 = steady_window(record)
        window = monitor.window(t0, t1)
        result = Result(server, summary.txns["new_order"].tpm, summary.tps, summary.commits, window,
                        bool(record.honesty["match"]), summary.total("errors"), summary.total("retries"))
        record.store.engine.dispose()
    return result, record, monitor


def describe(r: Result) -> list[str]:
    w = r.window
    p = w.parts
    return [
        (f"{r.server:10} {r.variant:16} tpmC {r.tpmc:9,.0f}  TPS {r.tps:7,.1f}  driver CPU {r.cpu_per_1000:6.3f} s/1,000 txn"
         f"  driver share {100 * w.share:5.1f}% (vs ours only {100 * w.share_vs_ours:5.1f}%)"),
        (f"{'':27} steady {w.seconds:.1f} s, {r.commits:,} commits, {r.errors} errors, {r.retries} retries, "
        f"honesty {'ok' if r.honesty else 'FAILED'}; CPU s: coordinator {p.get('driver:coordinator', 0):.2f} "
        f"workers {p.get('driver:worker', 0):.2f} | server ours {p.get('server:ours', 0):.2f} "
        f"background {p.get('server:background', 0):.2f} | machine busy {w.machine_cores:.2f} of "
        f"{os.cpu_count()} cores (others' work included)"
        + (f"; UNRELIABLE, more than one core's CPU in the window: {', '.join(w.impossible)}" if w.impossible else "")),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--rampup", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--label", default="", help="a note for the output header (what code was measured)")
    parser.add_argument("--variants", default="procedures=on,procedures=off",
                        help="TPC-C run options to compare, comma-separated, options of one variant joined by +")
    args = parser.parse_args(argv)
    import psycopg

    head = [f"# bench/engine_tpcc.py {time.strftime('%Y-%m-%d %H:%M')}: TPC-C 2 warehouses, {args.users} users, "
            f"think off, {args.rampup:.0f} s ramp-up, {args.duration:.0f} s steady; Python {sys.version.split()[0]}, "
            f"psycopg {psycopg.__version__} ({psycopg.pq.__impl__}), {os.cpu_count()} cores, "
            f"load average at start {os.getloadavg()[0]:.1f}" + (f"; {args.label}" if args.label else "")]
    print(head[0], flush=True)
    lines = list(head)
    results: list[Result] = []
    for server in args.servers.split(","):
        if server == "postgresql":
            from tpsbench.commands.build import build

            build("tpcc", 2, URLS[server], seed=0, drop_existing=True, show_progress=False)
            line = check_prepared(URLS[server])
            print(line, flush=True)
            lines.append(f"# {line}")
        for _ in range(args.repeat):
            for variant in args.variants.split(","):
                options = dict(item.split("=", 1) for item in variant.split("+"))
                transport = options.pop("transport", "tcp")
                if transport not in ("tcp", "socket"):
                    raise SystemExit(f"engine_tpcc: transport={transport!r}: use tcp or socket")
                engine: dict[str, Any] = {"multiplex": options.pop("multiplex", "on") == "on",
                                          "socket": transport == "socket"}
                if "workers" in options:
                    engine["workers"] = int(options.pop("workers"))
                result, _, _ = run_one(server, args.users, args.rampup, args.duration, options, **engine)
                result.variant = variant
                results.append(result)
                for line in describe(result):
                    print(line, flush=True)
                    lines.append(line)
    first = args.variants.split(",")[0]
    worst = max(r.window.share_vs_ours for r in results if r.variant == first)
    lines.append(f"# target driver share <= 10% ({first}, against our backends alone): "
                 f"{'met' if worst <= 0.10 else 'NOT met'} (worst {100 * worst:.1f}%)")
    print(lines[-1])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])
