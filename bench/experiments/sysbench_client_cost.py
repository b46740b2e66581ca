"""Client CPU per sysbench transaction through the engine, variants side by side.

Why: on a 2-core machine every microsecond the driver spends per transaction is taken
from the database (bench/results/vs_sysbench.txt), so each change to the hot path is
measured here against the alternatives in one run, the variants interleaved round by
round so that a change in machine load hits them all alike.

A variant is ``NAME=REV:WORKERS[:CLIENT[:NICE]]``: the code of git revision REV (``work`` =
the working tree; any other is exported with ``git archive`` into a temporary folder and
put first on PYTHONPATH), WORKERS worker processes (``users`` = one per user), the sysbench
``--client`` path (fast, the default, or dbapi) and the client's nice value (default 0).
Each run is a separate coordinator process; what is measured is the steady state only:
TPS from the step summary, and CPU from /proc between the end of the ramp-up and the end
of the last steady interval, for the client (coordinator and workers, user and system
time apart) and for the server (PostgreSQL: the backends of the benchmark database;
MariaDB: all of mariadbd).

    python bench/experiments/sysbench_client_cost.py --server postgresql --mode oltp_point_select \\
        --variant base=HEAD:2 --variant new=work:2 --rounds 3 --seconds 15

Needs the tables of bench/vs_sysbench.py (tpsb_sb_bench, 10 x 100,000, prepared by
sysbench), on $TPSBENCH_BENCH_PG's and $TPSBENCH_BENCH_MYSQL's servers by default (else
127.0.0.1's) or at --pg-url / --mysql-url. REV is a revision of the layered layout (db3e1fb
or later): the measuring child imports tpsbench.engine.coordinator. Results:
bench/experiments/results/sysbench_client_cost.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the modules shared with it
from revisions import source_tree  # type: ignore[import-not-found]  # noqa: E402
from servers import OPTIONS, add_url_options, urls  # type: ignore[import-not-found]  # noqa: E402

DB = "tpsb_sb_bench"
TICK = os.sysconf("SC_CLK_TCK")

#: the measuring child: run one step, sample /proc at the steady window's edges, print JSON
CHILD = r"""
import json, multiprocessing as mp, os, sys
from pathlib import Path
from tpsbench.core.session import RunContext
from tpsbench.engine.coordinator import run_steps
from tpsbench.engine.steps import LoadStep
from tpsbench.targets import open_target
from tpsbench.workloads.sysbench import SysbenchWorkload

url, server, mode, seconds, users, workers, client = sys.argv[1:8]
seconds, users = float(seconds), int(users)
workers = users if workers == "users" else int(workers)
DB = url.rsplit("/", 1)[1]

def stat(pid):
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    return text[text.index("(") + 1:text.rindex(")")], int(rest[11]), int(rest[12])

def server_ticks():
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        found = stat(pid)
        if found is None:
            continue
        if server == "mariadb" and found[0] in ("mariadbd", "mysqld"):
            total += found[1] + found[2]
        elif server == "postgresql" and found[0] == "postgres":
            try:
                if f" {DB} ".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    total += found[1] + found[2]
            except OSError:
                pass
    return total

def sample():
    user = system = 0
    for pid in [os.getpid(), *(p.pid for p in mp.active_children())]:
        found = stat(pid)
        if found:
            user, system = user + found[1], system + found[2]
    return user, system, server_ticks()

marks = []
def on_interval(report):
    if report.interval == 0 or report.steady:  # end of the ramp-up, then every steady interval
        marks.append((report.steady, report.total("commits"), sample()))

wl = SysbenchWorkload()
options = {"mode": mode, "think": "off", "client": client}
wl.configure(options)
meta = wl.verify_schema(open_target(url))
ctx = RunContext("sysbench", url, int(meta["scale"]), 1,
                 {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
step = LoadStep(users=users, duration_s=seconds, rampup_s=2.0, interval_s=2.0 if seconds < 10 else 5.0)
outcome = run_steps(ctx, wl, [step], on_interval, workers=workers, live=None)
step = outcome.steps[0]
(_, _, start), *steady = marks
commits = sum(m[1] for m in steady)
end = steady[-1][2]
print(json.dumps({"tps": step.summary.tps, "commits": commits, "problems": step.problems,
                  "user": (end[0] - start[0]) / commits, "sys": (end[1] - start[1]) / commits,
                  "server": (end[2] - start[2]) / commits}))
"""


def run_variant(src: Path, server: str, url: str, mode: str, seconds: float, users: int, workers: str,
                client: str, nice: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    command = [sys.executable, "-c", CHILD, url, server, mode, str(seconds), str(users), workers, client]
    out = subprocess.run(["nice", "-n", str(nice), *command], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=sorted(OPTIONS), default="postgresql")
    parser.add_argument("--mode", default="oltp_point_select")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", action="append", required=True, help="NAME=REV:WORKERS[:CLIENT[:NICE]]")
    add_url_options(parser, DB)
    args = parser.parse_args(argv)
    variants = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.variant:
            name, _, rest = spec.partition("=")
            rev, workers, *more = rest.split(":")
            client, nice = (more + ["fast", "0"][len(more):])[:2]
            variants.append((name, source_tree(rev, Path(tmp)), workers, client or "fast", int(nice)))
        results: dict[str, list[dict]] = {name: [] for name, *_ in variants}
        print(f"# {args.server} {args.mode}, {args.users} users, {args.seconds:g} s steady, {args.rounds} rounds, "
              f"variants interleaved; CPU in us per transaction (steady state, from /proc)")
        for round_no in range(args.rounds):
            order = variants if round_no % 2 == 0 else variants[::-1]
            for name, src, workers, client, nice in order:
                r = run_variant(src, args.server, urls(args)[args.server], args.mode, args.seconds, args.users,
                                workers, client, nice)
                results[name].append(r)
                client_us = 1e6 * (r["user"] + r["sys"]) / TICK
                print(f"round {round_no + 1} {name:12} tps {r['tps']:9,.0f}  client {client_us:6.1f}"
                      f" (user {1e6 * r['user'] / TICK:5.1f} sys {1e6 * r['sys'] / TICK:5.1f})"
                      f"  server {1e6 * r['server'] / TICK:6.1f}{'  ' + str(r['problems']) if r['problems'] else ''}",
                      flush=True)
    first = variants[0][0]
    base_tps = sum(r["tps"] for r in results[first]) / args.rounds
    print(f"{'variant':12} {'spec':>14} {'tps':>9} {'vs ' + first:>9} {'client':>7} {'user':>6} {'sys':>6} "
          f"{'server':>7}")
    for (name, *_), spec in zip(variants, args.variant):
        rows = results[name]

        def mean(key: str, rows: list[dict] = rows) -> float:
            return sum(r[key] for r in rows) / len(rows)

        us = {k: 1e6 * mean(k) / TICK for k in ("user", "sys", "server")}
        print(f"{name:12} {spec.partition('=')[2]:>14} {mean('tps'):9,.0f} {mean('tps') / base_tps:9.2f} "
              f"{us['user'] + us['sys']:7.1f} {us['user']:6.1f} {us['sys']:6.1f} {us['server']:7.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
