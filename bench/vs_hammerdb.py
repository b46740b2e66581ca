"""HammerDB 4.12 and tpsbench side by side on TPC-C: New-Orders per minute, read from the
database in the same window for both.

For each server (PostgreSQL, MariaDB), each size (``--sizes 2x8,4x32``: warehouses x
users) and each run (``--runs 2``), each tool gets a database of its own, freshly built
(``tpsb_vs_hdb_h`` by HammerDB, ``tpsb_vs_hdb_t`` by ``tpsbench build``), and then runs
with no keying or think time, the order of the two tools alternating run by run. Both
are measured alike, from outside: SUM(D_NEXT_O_ID) is polled until it first moves (the
tool's first New-Order), read again ``--warmup`` seconds later and once more ``--window``
seconds after that; New-Orders per minute is the change over the window. The same reads
bound the CPU the server spent (PostgreSQL: the backends on that database; MariaDB: all
of mariadbd) and the tool's own processes spent, per New-Order, and each tool's own
figure (HammerDB's NOPM, tpsbench's tpmC) is printed beside. tpsbench's run must end
with its honesty check matching and ``tpsbench check tpcc`` passing (conditions 1-10, 12).

Before each run the server writes out everything the build left dirty (PostgreSQL's
CHECKPOINT; InnoDB: dirty pages flushed to nothing first), so that neither tool's
window carries the other's or its own build's writes. The mixes differ slightly:
HammerDB draws New-Order 10 times in 23 (43.5 %), tpsbench 45 %; at equal
transactions per second tpsbench shows 3.5 % more New-Orders, and the line gives each
tool's server CPU per New-Order so that the work per transaction can be compared too.

    python bench/vs_hammerdb.py [--hammerdb DIR] [--servers postgresql,mariadb] [--sizes 2x8,4x32]
        [--runs 2] [--warmup 20] [--window 80] [--out bench/results/vs_hammerdb.txt]

HammerDB comes from ``--hammerdb DIR`` or ``$HAMMERDB_HOME``; when neither is set up the
script says how (``bench/hammerdb_setup.sh``) and exits with 2. The notes below the table
in the output file are kept.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pymysql
from cpu_meter import cpu_times, server_ticks  # type: ignore[import-not-found]
from hammerdb import HammerDB, error_lines, located, own_result, stop  # type: ignore[import-not-found]
from settle import settle  # type: ignore[import-not-found]
from servers import add_url_options, database, mysql_args, pg_conninfo, urls, with_database  # type: ignore[import-not-found]

TOOLS = ("hammerdb", "tpsbench")
DBS = {"hammerdb": "tpsb_vs_hdb_h", "tpsbench": "tpsb_vs_hdb_t"}
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Window:
    """One tool's measured window."""

    nopm: float  # New-Orders per minute, from SUM(D_NEXT_O_ID)
    own: str  # the tool's own figure, as it printed it
    server_us: float  # server CPU per New-Order
    client_us: float  # the tool's processes' CPU per New-Order
    busy: float  # share of all cores busy in the window
    errors: int  # HammerDB's error lines; tpsbench's errors (its honesty check must match)


class Database:
    """The tool's database on one server: dropped, counted, checkpointed."""

    def __init__(self, server: str, url: str) -> None:
        self.server, self.url, self.name = server, url, database(url)

    def _connect(self, db: str | None = None) -> Any:
        if self.server == "postgresql":
            return psycopg.connect(pg_conninfo(self.url, db if db is not None else self.name), autocommit=True)
        return pymysql.connect(**mysql_args(self.url, db=db if db is not None else self.name), autocommit=True)

    def drop(self) -> None:
        conn = self._connect("postgres" if self.server == "postgresql" else "")
        with contextlib.closing(conn):
            if self.server == "postgresql":
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            else:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS `{self.name}`")

    def new_orders(self, conn: Any) -> int:
        cur = conn.cursor()
        cur.execute("SELECT SUM(d_next_o_id) FROM district")
        return int(cur.fetchone()[0])

    def settle(self) -> None:
        """Write out what the build left dirty (bench/settle.py), so the run starts at rest."""
        conn = self._connect()
        with contextlib.closing(conn):
            settle(self.server, conn)


def session_ticks(sid: int) -> int:
    """CPU ticks so far of every process in session ``sid`` (a tool started in a session of its own)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        rest = text[text.rindex(")") + 2:].split()
        if int(rest[3]) == sid:
            total += int(rest[11]) + int(rest[12])
    return total


def delta_ticks(before: dict[int, int], after: dict[int, int]) -> int:
    return sum(ticks - before.get(pid, 0) for pid, ticks in after.items())


#: called with a connection to the tool's database as its window opens and as it closes
Hook = Callable[[Any], None]


def measure(db: Database, process: subprocess.Popen[bytes], warmup: float, window: float,
            hooks: tuple[Hook, Hook] | None = None) -> tuple[float, ...]:
    """(New-Orders per minute, server us and client us per New-Order, machine busy) over the
    window that starts ``warmup`` s after the first New-Order of the tool running as ``process``;
    ``hooks`` read more at its two ends (tpcc_server_cost.py: the server's statistics)."""
    conn = db._connect()
    with contextlib.closing(conn):
        start, deadline = db.new_orders(conn), time.monotonic() + 300
        while db.new_orders(conn) == start:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{db.name}: no New-Order committed (the tool exited with {process.returncode})")
            time.sleep(0.05)
        first = time.monotonic()
        time.sleep(max(0.0, first + warmup - time.monotonic()))
        if hooks:
            hooks[0](conn)
        marks = [(time.monotonic(), db.new_orders(conn), server_ticks(db.server, db.name),
                  session_ticks(process.pid), cpu_times())]
        time.sleep(max(0.0, first + warmup + window - time.monotonic()))
        marks.append((time.monotonic(), db.new_orders(conn), server_ticks(db.server, db.name),
                      session_ticks(process.pid), cpu_times()))
        if hooks:
            hooks[1](conn)
    (t0, n0, s0, c0, m0), (t1, n1, s1, c1, m1) = marks
    if process.poll() is not None:
        raise SystemExit(f"{db.name}: the tool ended before the window did ({process.returncode}): lengthen its run")
    orders = max(n1 - n0, 1)
    server_us = 1e6 * delta_ticks(s0, s1) / TICK / orders
    client_us = 1e6 * (c1 - c0) / TICK / orders
    return 60.0 * (n1 - n0) / (t1 - t0), server_us, client_us, (m1[0] - m0[0]) / max(m1[1] - m0[1], 1)


def run_hammerdb(home: Path, server: str, url: str, warehouses: int, users: int, args: argparse.Namespace,
                 log_dir: Path, hooks: tuple[Hook, Hook] | None = None) -> Window:
    db = Database(server, url)
    db.drop()
    hammerdb = HammerDB(home, server, url, db.name)
    hammerdb.build(warehouses)
    db.settle()
    log = log_dir / f"hammerdb-{server}-{warehouses}x{users}-{time.strftime('%H%M%S')}.log"
    minutes = int((args.warmup + args.window + 15) // 60) + 1
    process = hammerdb.start(users, minutes, log)
    try:
        nopm, server_us, client_us, busy = measure(db, process, args.warmup, args.window, hooks)
    finally:
        stop(process, timeout=minutes * 60 + 60)
    own = own_result(log)
    return Window(nopm, f"{own[0]:,} NOPM" if own else "none printed", server_us, client_us, busy, error_lines(log))


def run_tpsbench(server: str, url: str, warehouses: int, users: int, args: argparse.Namespace,
                 log_dir: Path, hooks: tuple[Hook, Hook] | None = None) -> Window:
    db = Database(server, url)
    db.drop()
    tpsbench = [sys.executable, "-m", "tpsbench"]
    built = subprocess.run([*tpsbench, "build", "tpcc", "--scale", str(warehouses), "--db", url],
                           capture_output=True, text=True)
    if built.returncode:
        raise SystemExit(f"tpsbench build failed: {built.stderr.strip()[-1000:]}")
    db.settle()
    log = log_dir / f"tpsbench-{server}-{warehouses}x{users}-{time.strftime('%H%M%S')}.log"
    results = f"sqlite:///{log_dir / 'tpsbench-results.db'}"
    seconds = int(args.warmup + args.window + 10)
    argv = [*tpsbench, "run", "tpcc", "--db", url, "--users", str(users), "--rampup", "2s",
            "--duration", f"{seconds}s", "--interval", "10s", "--results", results]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   env=dict(os.environ, COLUMNS="200"))
    try:
        nopm, server_us, client_us, busy = measure(db, process, args.warmup, args.window, hooks)
    finally:
        stop(process, timeout=seconds + 120)
    text = log.read_text(errors="replace")
    tpmc = re.search(r"tpmC\s*│\s*([\d.]+)", text)
    if process.returncode or "honesty check matches" not in text:
        raise SystemExit(f"tpsbench run failed or its honesty check did not match; see {log}")
    checked = subprocess.run([*tpsbench, "check", "tpcc", "--db", url], capture_output=True, text=True)
    if checked.returncode:
        raise SystemExit(f"tpsbench check tpcc failed after the run:\n{checked.stdout[-3000:]}")
    errors = re.search(r"Errors\s*│\s*(\d+)", text)
    return Window(nopm, f"{float(tpmc.group(1)):,.0f} tpmC" if tpmc else "none printed", server_us, client_us,
                  busy, int(errors.group(1)) if errors else -1)


HEADER = (f"{'server':10} {'W x users':9} {'run':>3} {'first':8} {'HammerDB':>9} {'tpsbench':>9} {'ratio':>5}  "
          f"{'server us/NO':>15}  {'client us/NO':>15}  {'busy':>11}  {'errors':>7}  own figures (HammerDB | tpsbench)")


def line(server: str, size: str, run: int, first: str, h: Window, t: Window) -> str:
    return (f"{server:10} {size:9} {run:>3} {first:8} {h.nopm:9,.0f} {t.nopm:9,.0f} {t.nopm / h.nopm:5.2f}  "
            f"{h.server_us:>6,.0f} | {t.server_us:<6,.0f}  {h.client_us:>6,.0f} | {t.client_us:<6,.0f}  "
            f"{h.busy:4.2f} | {t.busy:4.2f}  {h.errors:>3} | {t.errors:<3}  {h.own} | {t.own}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hammerdb", default=None, metavar="DIR", help="HammerDB's folder (default $HAMMERDB_HOME)")
    parser.add_argument("--servers", default="postgresql,mariadb")
    parser.add_argument("--sizes", default="2x8,4x32", help="warehouses x users, comma-separated")
    parser.add_argument("--runs", type=int, default=2, help="runs per size, the tools' order alternating")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds from a tool's first New-Order to the window")
    parser.add_argument("--window", type=float, default=80.0,
                        help="seconds measured (40 s windows here swung by 15 %% with a passing dip)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "vs_hammerdb.txt")
    add_url_options(parser, "", note="; each tool's database is put into it")
    args = parser.parse_args(argv)
    home = located(args.hammerdb, "vs_hammerdb")
    if home is None:
        return 2
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
    log_dir = Path(tempfile.mkdtemp(prefix="tpsb-vs-hammerdb-"))
    lines = [f"# HammerDB 4.12 vs tpsbench, TPC-C, no keying/think time; window {args.warmup:.0f} s after each "
             f"tool's first New-Order, {args.window:.0f} s long; {os.cpu_count()} cores; "
             f"{time.strftime('%Y-%m-%d %H:%M')}; load average {os.getloadavg()[0]:.2f} at the start",
             "# New-Orders per minute from SUM(D_NEXT_O_ID); ratio = tpsbench / HammerDB; CPU per New-Order as "
             "HammerDB | tpsbench; busy = share of all cores busy", f"# each run's output: {log_dir}", HEADER]
    print("\n".join(lines), flush=True)
    for server in args.servers.split(","):
        base = urls(args)[server]
        for warehouses, users in sizes:
            for run in range(1, args.runs + 1):
                order = TOOLS if run % 2 else TOOLS[::-1]
                found: dict[str, Window] = {}
                for tool in order:
                    url = with_database(base, DBS[tool])
                    found[tool] = (run_hammerdb(home, server, url, warehouses, users, args, log_dir)
                                   if tool == "hammerdb" else run_tpsbench(server, url, warehouses, users, args, log_dir))
                text = line(server, f"{warehouses}x{users}", run, order[0], found["hammerdb"], found["tpsbench"])
                lines.append(text)
                print(text, flush=True)
    notes = args.out.read_text().split("\n## Notes", 1)[1] if args.out.exists() and "\n## Notes" in args.out.read_text() else ""
    args.out.write_text("\n".join(lines) + "\n" + ("\n## Notes" + notes if notes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
