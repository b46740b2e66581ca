"""Does ``replay --as-mix`` keep a captured client's mix? sysbench oltp_read_write on
MariaDB, captured and run as a mix at stepped loads.

sysbench's tables are prepared twice (``--tables`` x ``--table-size``, default 4 x 10,000
rows): a source and a copy. sysbench oltp_read_write runs on the source at 4 threads
with text statements (``--db-ps-mode=disable``: the general log keeps only those values)
while ``tpsbench capture --allow-settings`` records ``--window`` seconds of it; then
``tpsbench replay TRACE --as-mix`` runs the trace's mix on the copy at ``--users`` with
``--duration`` steps. Printed per step, from the results store (each transaction's
commits, expected rollbacks and errors in the step's ``detail``): the statements run and
each normalised statement's captured share beside its realised one (BEGIN and COMMIT left
out, the shares over the statements the mix runs, as tpsbench's mix computes them), the
worst deviation in points and PASS or NOT MET against the 1-point limit. Also the
machine's cores and load average before and after, the date, the revision and the command.

    nice -n 19 python bench/replay_sysbench_mix.py [--window 60] [--users 1,8,32] [--duration 2m]

A capture turns the general log on server-wide and takes a server-wide lock, so by default
the script starts a mariadbd of its own (own datadir in /var/tmp, a free port, own socket,
the server's shipped settings), removed at the end, also on a failure, Ctrl-C or SIGTERM;
``--mysql-url`` points it at a server you own instead (it creates and drops its two
databases there). Needs sysbench and, for the private server, mariadb-install-db and
mariadbd (run as root, it runs the server as root). Runs this checkout's tpsbench.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))

import pymysql  # noqa: E402
from pools import signals_raise  # noqa: E402  (bench/, beside this script)
from servers import mysql_args, with_database  # noqa: E402

from tpsbench.core.errors import EXIT_CODES, SAID, signal_of  # noqa: E402
from tpsbench.workloads.replay.trace import read_trace  # noqa: E402
from tpsbench.workloads.tracemix.mix import mix_of  # noqa: E402

SOURCE, COPY = "tpsb_mix_src", "tpsb_mix_copy"
LIMIT = 1.0  # points: the acceptance item's
MARIADBD = "/usr/sbin/mariadbd"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Teardown in peace: a second Ctrl-C or SIGTERM must not leave a server behind."""
    before = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def private_mariadb() -> Iterator[str]:
    """A mariadbd of the script's own (datadir, port, socket in a temporary folder, shipped
    settings), its server URL yielded; stopped and removed on exit, whatever the exit."""
    for tool in ("mariadb-install-db", MARIADBD):
        if shutil.which(tool) is None:
            raise SystemExit(f"no {tool}: needed for a private MariaDB (or give --mysql-url of a server you own)")
    folder = Path(tempfile.mkdtemp(prefix="tpsb-mixbench-", dir="/var/tmp"))
    port, process = free_port(), None
    try:
        subprocess.run(["mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={folder / 'data'}",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       check=True, capture_output=True, timeout=120)
        process = subprocess.Popen(
            [MARIADBD, "--no-defaults", "--user=root", f"--datadir={folder / 'data'}", f"--port={port}",
             "--bind-address=127.0.0.1", f"--socket={folder / 'mysqld.sock'}", f"--pid-file={folder / 'mysqld.pid'}",
             f"--log-error={folder / 'error.log'}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                pymysql.connect(host="127.0.0.1", port=port, user="root", password="", connect_timeout=2).close()
                break
            except pymysql.Error:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (folder / "error.log").read_text(errors="replace").strip().splitlines()
                    raise SystemExit(f"the private mariadbd did not start: {log[-1] if log else 'no log'}") from None
                time.sleep(0.2)
        yield f"mysql://root@127.0.0.1:{port}"
    finally:
        with shielded():
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            shutil.rmtree(folder, ignore_errors=True)


def sql(server: str, *statements: str) -> list[tuple]:
    """Run ``statements`` on ``server`` (no database); the last one's rows."""
    conn = pymysql.connect(**mysql_args(server, ""), autocommit=True)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
            return list(cur.fetchall())
    finally:
        conn.close()


def sysbench(url: str, args: argparse.Namespace, *more: str) -> list[str]:
    a = mysql_args(url)
    where = [f"--mysql-socket={a['unix_socket']}"] if "unix_socket" in a else \
        [f"--mysql-host={a['host']}", f"--mysql-port={a.get('port', 3306)}"]
    return ["sysbench", "oltp_read_write", *where, f"--mysql-user={a['user']}", f"--mysql-password={a['password']}",
            f"--mysql-db={a['database']}", f"--tables={args.tables}", f"--table-size={args.table_size}", *more]


def tpsbench(*args: str) -> subprocess.CompletedProcess[str]:
    """A tpsbench command of this checkout; when the script is interrupted, it gets SIGTERM
    and time to finish (a capture puts the server's logging back), not SIGKILL."""
    child = subprocess.Popen([sys.executable, "-m", "tpsbench", *args], env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate()
    except BaseException:
        with shielded():
            child.terminate()
            try:
                child.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
        raise
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def capture(source: str, args: argparse.Namespace, trace: Path) -> str:
    """sysbench on ``source`` for the window and 10 s more, captured from its second 2;
    sysbench's own rate line."""
    bench = subprocess.Popen(sysbench(source, args, "--threads=4", f"--time={args.window + 10}",
                                      "--db-ps-mode=disable", "run"), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(2)
        cap = tpsbench("capture", "--db", source, "--duration", f"{args.window}s", "-o", str(trace),
                       "--allow-settings")
        out, _ = bench.communicate(timeout=args.window + 120)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    if cap.returncode != 0:
        raise SystemExit(f"capture failed: {cap.stderr.strip()[-500:]}")
    if bench.returncode != 0:
        raise SystemExit(f"sysbench run failed: {out.strip()[-500:]}")
    rate = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
    return f"{rate.group(2)} transactions/s ({rate.group(1)} in {args.window + 10} s)" if rate else "rate not found"


def steps(results: Path) -> list[tuple[int, int, float, dict[str, dict[str, int]]]]:
    """The run's steps: number, users, TPS, and per transaction name its commits,
    rollbacks (expected) and errors."""
    with sqlite3.connect(results) as conn:
        rows = conn.execute("SELECT step, users, tps, detail FROM steps WHERE run_id = (SELECT max(run_id) FROM "
                            "steps) ORDER BY step").fetchall()
    return [(step, users, tps or 0.0, {name: {k: int(t.get(k) or 0) for k in ("commits", "rollbacks", "errors")}
                                       for name, t in json.loads(detail)["txns"].items()})
            for step, users, tps, detail in rows]


def report_step(step: int, users: int, tps: float, done: dict[str, dict[str, int]], captured: dict[str, float],
                texts: dict[str, str]) -> float:
    """Print one step's shares beside the captured ones; its worst deviation in points."""
    run = {name: sum(t.values()) for name, t in done.items()}
    total = sum(run.values())
    errors = sum(t["errors"] for t in done.values())
    rollbacks = sum(t["rollbacks"] for t in done.values())
    print(f"step {step}: {users} user(s), {total:,} statements executed ({tps:,.1f}/s; {rollbacks:,} expected "
          f"rollbacks, {errors:,} errors)")
    print("    captured  realised   points  transaction            statement")
    worst, at = 0.0, ""
    for name in sorted(set(captured) | set(run)):
        share = 100.0 * run.get(name, 0) / total if total else 0.0
        gap = share - captured.get(name, 0.0)
        if abs(gap) >= worst:
            worst, at = abs(gap), name
        print(f"    {captured.get(name, 0.0):7.3f} %  {share:7.3f} %  {gap:+7.3f}  {name:<22} "
              f"{texts.get(name, '(not in the trace)')[:70]}")
    verdict = "PASS" if total and worst < LIMIT else "NOT MET"
    print(f"  step {step} ({users} user(s)): worst deviation {worst:.3f} point ({at}) over {total:,} statements: "
          f"{verdict} (limit {LIMIT:g} point)", flush=True)
    return worst if total else float("inf")


def measure(server: str, args: argparse.Namespace, tmp: Path) -> list[float]:
    sql(server, *(f"DROP DATABASE IF EXISTS {db}" for db in (SOURCE, COPY)),
        *(f"CREATE DATABASE {db}" for db in (SOURCE, COPY)))
    try:
        source, copy = with_database(server, SOURCE), with_database(server, COPY)
        for url in (source, copy):
            subprocess.run(sysbench(url, args, "--threads=4", "prepare"), check=True, capture_output=True)
        trace = tmp / "sysbench.trace"
        before = load()
        rate = capture(source, args, trace)
        print(f"capture: sysbench oltp_read_write, 4 threads, text statements: {rate}; load average {before} -> "
              f"{load()}", flush=True)
        read = read_trace(trace)
        mix = mix_of(str(trace), read)
        kept = sum(r["count"] for r in read.summary["statements"] if r["statement"] in mix.statements.values())
        print(f"  trace: {read.statements:,} statements in {len(read.sessions)} sessions over {read.window_s:g} s; "
              f"the mix runs {len(mix.statements)} normalised statements ({kept:,} executions captured), leaves "
              f"out {mix.left_out} ({mix.left_out_count:,} executions: BEGIN, COMMIT ...); {mix.unmatched} "
              f"without matching values", flush=True)
        results = tmp / "results.db"
        before = load()
        command = ["replay", str(trace), "--as-mix", "--db", copy, "--users", args.users, "--duration",
                   args.duration, "--results", f"sqlite:///{results}", *(["--rampup", args.rampup] if args.rampup
                                                                         else [])]
        print(f"replay: tpsbench {shlex.join(command)}", flush=True)
        rep = tpsbench(*command)
        if rep.returncode != 0:
            raise SystemExit(f"replay --as-mix failed: {rep.stderr.strip()[-800:]}")
        said = [line for line in rep.stderr.splitlines() if "tracemix:" in line]
        print(f"  {said[0].strip() if said else '(no tracemix line on stderr)'}")
        print(f"  load average {before} -> {load()}", flush=True)
        return [report_step(step, users, tps, done, mix.captured, mix.statements)
                for step, users, tps, done in steps(results)]
    finally:
        with shielded():
            sql(server, *(f"DROP DATABASE IF EXISTS {db}" for db in (SOURCE, COPY)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mysql-url", metavar="URL", default="",
                        help="a MariaDB server you own (its databases tpsb_mix_src and tpsb_mix_copy are dropped and "
                             "made; its general log is turned on for the window); default: a private mariadbd")
    parser.add_argument("--window", type=int, default=60, help="seconds captured (default %(default)s)")
    parser.add_argument("--users", default="1,8,32", help="the mix's steps (default %(default)s)")
    parser.add_argument("--duration", default="2m", help="each step's measured window (default %(default)s)")
    parser.add_argument("--rampup", default="", help="each step's ramp-up (default: tpsbench run's)")
    parser.add_argument("--tables", type=int, default=4, help="sysbench tables (default %(default)s)")
    parser.add_argument("--table-size", type=int, default=10000, help="rows a table (default %(default)s)")
    args = parser.parse_args()
    try:
        run(args)
    except KeyboardInterrupt as exc:
        signum = signal_of(exc)
        print(f"{SAID[signum]}: the databases and any private server are removed", file=sys.stderr)
        raise SystemExit(EXIT_CODES[signum]) from None


def run(args: argparse.Namespace) -> None:
    if shutil.which("sysbench") is None:
        raise SystemExit("sysbench is not installed")
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", "bench"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, revision {revision}"
          f"{' (with uncommitted changes)' if dirty else ''}, {os.cpu_count()} cores, load average {load()}")
    print(f"#   python {shlex.join(sys.argv)}", flush=True)
    with signals_raise(), tempfile.TemporaryDirectory() as folder, \
            (contextlib.nullcontext(args.mysql_url) if args.mysql_url else private_mariadb()) as server:
        version = sql(server, "SELECT VERSION()")[0][0]
        whose = "given by --mysql-url" if args.mysql_url else "private, shipped settings"
        print(f"server: MariaDB {version}, {whose}; "
              f"sysbench {args.tables} tables x {args.table_size:,} rows; {args.window} s captured; mix at "
              f"{args.users} users, {args.duration} steps", flush=True)
        worst = measure(server, args, Path(folder))
    print(f"worst deviation per step: {', '.join(f'{w:.3f}' for w in worst)} point; "
          f"{'PASS' if worst and max(worst) < LIMIT else 'NOT MET'} (limit {LIMIT:g} point); load average {load()}")


if __name__ == "__main__":
    main()
