"""Where PostgreSQL's time goes per TPC-C transaction type, HammerDB 4.12 against tpsbench.

Each tool runs on a freshly built database of its own (vs_hammerdb.py's method), at each
``--users`` load; over the window (``--warmup`` s after its first New-Order, ``--window`` s
long) the server's statistics are reset and then read:

- pg_stat_statements, top level: each transaction type's call (a function call's time
  includes every statement inside it; Order-Status and Stock-Level are tpsbench's single
  statements where they are not functions): calls, mean server time per call (wall
  clock inside the server: at 1 user that is CPU and page-cache reads, at more users lock
  and CPU waits too), shared buffers touched, WAL records and bytes per call;
- with ``--nested`` one more run per tool at the first load with
  ``pg_stat_statements.track = all``: the statements inside the functions, heaviest first;
- the server's CPU per transaction from /proc (the backends on the tool's database).

pg_stat_statements must be in shared_preload_libraries: the script adds it and restarts
PostgreSQL if it is not (``--restore`` puts the setting back and restarts again at the end).
Per-database settings (track, track_functions) are set on the tools' databases only.

    python bench/tpcc_server_cost.py [--hammerdb DIR] [--warehouses 2] [--users 1,8] [--nested]
        [--warmup 10] [--window 40] [--out bench/results/tpcc_server_cost.txt]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg
from hammerdb import located  # type: ignore[import-not-found]
from servers import add_url_options, pg_conninfo, with_database  # type: ignore[import-not-found]
from vs_hammerdb import DBS, TOOLS, run_hammerdb, run_tpsbench  # type: ignore[import-not-found]

#: transaction type -> a pattern of its top-level statement, HammerDB's or tpsbench's
TYPES = {
    "New-Order": r"\bneword\s*\(|tpcc_new_order",
    "Payment": r"\bpayment\s*\(|tpcc_payment",
    "Delivery": r"\bdelivery\s*\(|tpcc_delivery",
    "Order-Status": r"\bostat\s*\(|tpcc_order_status|o_carrier_id",
    "Stock-Level": r"\bslev\s*\(|tpcc_stock_level|count\s*\(\s*distinct",
}
STATS = """SELECT s.toplevel, s.query, s.calls, s.total_exec_time, s.shared_blks_hit + s.shared_blks_read,
                  s.shared_blks_read, s.wal_records, s.wal_bytes, s.wal_fpi, s.plans, s.total_plan_time
           FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()"""


def ensure_preloaded(url: str) -> bool:
    """pg_stat_statements preloaded (restarting PostgreSQL if need be); True if this changed it."""
    with psycopg.connect(pg_conninfo(url, "postgres"), autocommit=True) as conn:
        preload = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
        if "pg_stat_statements" in preload:
            return False
        libraries = ",".join(filter(None, [preload, "pg_stat_statements"]))
        conn.execute(f"ALTER SYSTEM SET shared_preload_libraries = '{libraries}'")
    restart_postgresql()
    return True


def restart_postgresql() -> None:
    version = subprocess.run(["ls", "/etc/postgresql"], capture_output=True, text=True, check=True).stdout.split()[0]
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True)
    for _ in range(60):
        if subprocess.run(["pg_isready", "-h", "127.0.0.1", "-q"]).returncode == 0:
            return
        time.sleep(0.5)


class Statistics:
    """The window's hooks: reset the database's statistics as it opens, read them as it closes."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def begin(self, conn: Any) -> None:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("SELECT pg_stat_statements_reset()")

    def end(self, conn: Any) -> None:
        self.rows = conn.execute(STATS).fetchall()

    def by_type(self) -> dict[str, list[float]]:
        """Type -> [calls, total ms, buffers, reads, WAL records, WAL bytes, WAL full pages]."""
        found: dict[str, list[float]] = defaultdict(lambda: [0.0] * 7)
        for toplevel, query, calls, total, buffers, reads, records, wal, fpi, _plans, _plan_ms in self.rows:
            kind = next((k for k, pattern in TYPES.items() if re.search(pattern, query, re.I)), None)
            if toplevel and kind:
                for i, value in enumerate((calls, total, buffers, reads, records, wal, fpi)):
                    found[kind][i] += float(value)
        return found

    def nested(self, top: int) -> list[str]:
        """The heaviest statements run inside functions, a line each."""
        inner = sorted((r for r in self.rows if not r[0]), key=lambda r: -r[3])[:top]
        return [f"  {total:9,.0f} ms {calls:>8,} calls {1000 * total / max(calls, 1):8,.1f} us/call "
                f"{(hit) / max(calls, 1):6.1f} buf {records / max(calls, 1):5.1f} WAL rec {fpi / max(calls, 1):5.2f} FPI "
                f"{plans:>7,} plans {1000 * plan_ms / max(plans, 1):6.1f} us/plan  {' '.join(query.split())[:130]}"
                for _t, query, calls, total, hit, _r, records, _w, fpi, plans, plan_ms in inner]


def set_server(url: str, settings: dict[str, str]) -> None:
    """ALTER SYSTEM and reload: sessions take the settings at their next statement."""
    with psycopg.connect(pg_conninfo(url, "postgres"), autocommit=True) as conn:
        for name, value in settings.items():
            conn.execute(f"ALTER SYSTEM RESET {name}" if value == "" else f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")


def one(tool: str, home: Path, url: str, users: int, args: argparse.Namespace, nested: bool) -> tuple[Statistics, Any]:
    """A fresh build and run of ``tool`` at ``users``: its statistics and its window."""
    stats = Statistics()
    set_server(url, {"pg_stat_statements.track": "all" if nested else "top",
                     "pg_stat_statements.track_planning": "on" if nested else "off"})
    tool_url, logs = with_database(url, DBS[tool]), args.logs
    hooks = (stats.begin, stats.end)
    if tool == "hammerdb":
        window = run_hammerdb(home, "postgresql", tool_url, args.warehouses, users, args, logs, hooks)
    else:
        window = run_tpsbench("postgresql", tool_url, args.warehouses, users, args, logs, hooks)
    return stats, window


HEAD = (f"{'type':13} {'users':>5}  {'us/call H | t':>17}  {'t/H':>5}  {'calls H | t':>17}  {'buffers/call':>13}  "
        f"{'WAL rec/call':>13}  {'WAL bytes/call':>15}  {'FPI/call':>11}")


def type_lines(users: int, found: dict[str, tuple[Statistics, Any]]) -> list[str]:
    h, t = found["hammerdb"][0].by_type(), found["tpsbench"][0].by_type()
    lines = []
    for kind in TYPES:
        a, b = h.get(kind, [0.0] * 7), t.get(kind, [0.0] * 7)
        per = [(x[i] / x[0] if x[0] else 0.0) for x in (a, b) for i in (1, 2, 4, 5, 6)]
        ha, hb, wa, wb, ra, rb, ya, yb, fa, fb = per[0], per[5], per[1], per[6], per[2], per[7], per[3], per[8], per[4], per[9]
        lines.append(f"{kind:13} {users:>5}  {1000 * ha:>7,.0f} | {1000 * hb:<7,.0f}  {hb / ha if ha else 0:5.2f}  "
                     f"{a[0]:>7,.0f} | {b[0]:<7,.0f}  {wa:>5.0f} | {wb:<5.0f}  {ra:>5.1f} | {rb:<5.1f}  "
                     f"{ya:>6,.0f} | {yb:<6,.0f}  {fa:>4.2f} | {fb:<4.2f}")
    cpu = []
    for tool in TOOLS:
        stats, window = found[tool]
        calls = sum(v[0] for v in stats.by_type().values())
        new_orders = stats.by_type().get("New-Order", [1.0])[0]
        cpu.append(window.server_us * new_orders / max(calls, 1))
    lines.append(f"{'all (CPU)':13} {users:>5}  {cpu[0]:>7,.0f} | {cpu[1]:<7,.0f}  {cpu[1] / cpu[0]:5.2f}  "
                 "server CPU per transaction from /proc (backends on the database)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hammerdb", default=None, metavar="DIR", help="HammerDB's folder (default $HAMMERDB_HOME)")
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--users", default="1,8", help="user loads, comma-separated")
    parser.add_argument("--nested", action="store_true",
                        help="one more run per tool at the first load: the statements inside the functions")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=40.0)
    parser.add_argument("--restore", action="store_true",
                        help="take pg_stat_statements out of shared_preload_libraries again at the end (a restart)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "tpcc_server_cost.txt")
    add_url_options(parser, "", servers=("postgresql",), note="; each tool's database is put into it")
    args = parser.parse_args(argv)
    home = located(args.hammerdb, "tpcc_server_cost")
    if home is None:
        return 2
    url = args.postgresql_url
    changed = ensure_preloaded(url)
    args.logs = Path(tempfile.mkdtemp(prefix="tpsb-server-cost-"))
    lines = [f"# TPC-C on PostgreSQL, server time per transaction type: HammerDB 4.12 (H, PL/pgSQL functions) vs "
             f"tpsbench (t, --procedures auto); {args.warehouses} warehouses, window {args.window:.0f} s from "
             f"{args.warmup:.0f} s after each tool's first New-Order; {time.strftime('%Y-%m-%d %H:%M')}",
             "# us/call: pg_stat_statements' mean time of the top-level call; buffers, WAL records, WAL bytes and "
             "full-page images (FPI) per call", HEAD]
    print("\n".join(lines), flush=True)
    try:
        for index, users in enumerate(int(u) for u in args.users.split(",")):
            found = {tool: one(tool, home, url, users, args, False) for tool in TOOLS}
            for text in type_lines(users, found):
                lines.append(text)
                print(text, flush=True)
            if args.nested and index == 0:
                for tool in TOOLS:
                    stats, _window = one(tool, home, url, users, args, True)
                    lines += [f"# {tool}: the heaviest statements inside its functions at {users} user(s) (track = all)",
                              *stats.nested(14)]
                    print("\n".join(lines[-15:]), flush=True)
    finally:
        set_server(url, {"pg_stat_statements.track": "", "pg_stat_statements.track_planning": ""})
        if changed and args.restore:
            set_server(url, {"shared_preload_libraries": ""})
            restart_postgresql()
    notes = args.out.read_text().split("\n## Notes", 1)[1] if args.out.exists() and "\n## Notes" in args.out.read_text() else ""
    args.out.write_text("\n".join(lines) + "\n" + ("\n## Notes" + notes if notes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
