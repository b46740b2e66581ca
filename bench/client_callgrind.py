"""Client instructions per transaction, counted by callgrind, revisions side by side.

Why callgrind: on a shared 2-core machine timings move by 10-20 % from run to run, which
hides the few-percent changes the hot path is made of. Instructions counted by valgrind
do not depend on what else runs. One user runs N transactions through the engine's own
code, once with N1 and once with N2 transactions; the difference divided by N2 - N1 is
the cost of one transaction without start-up, per function. Only user-space instructions
of the client count: not the kernel's, not the server's. Fewer instructions are not the
whole story (a worker woken after the database's backends ran also pays for cache
misses, bench/results/engine_tpcc.txt), but they are where a change shows first.

A target is ``SERVER:WORKLOAD:OPTIONS:N1:N2``; OPTIONS are run options joined by ``+``
(``mode=oltp_point_select``, ``procedures=on``), ``-`` for none. ``--path mux`` runs the
user on a worker's shared thread (tpsbench.engine.multiplex, the default path of both
workloads' fast sessions); ``--path thread`` on a thread of its own (VirtualUser.hot_loop).

    python bench/client_callgrind.py --rev base=HEAD --rev new=work \\
        --target postgresql:tpcc:procedures=on:300:1300 \\
        --target postgresql:sysbench:mode=oltp_point_select:2000:7000

``work`` is the working tree; other revisions are exported with ``git archive``
(bench/revisions.py), revisions before the layered layout (tpsbench.api.*) too. Needs
valgrind, and the databases of bench/vs_sysbench.py (tpsb_sb_bench, for sysbench) and
bench/engine_tpcc.py (tpsb_eng_tpcc, for tpcc) on the servers of ``--pg-url`` and
``--mysql-url`` (default: $TPSBENCH_BENCH_PG's and $TPSBENCH_BENCH_MYSQL's, else
127.0.0.1's; bench/servers.py), into which each workload puts its database. For tpce,
a database of the smallest scale, tpsb_cg_tpce by default (``--database tpce=NAME``)::

    tpsbench build tpce --customers 1000 --trade-days 1 --market-days 30 \
        --db postgresql://postgres@127.0.0.1/tpsb_cg_tpce

A TPC-E user runs with its worker's market exchange emulator but no executors: the
Trade-Results and Market-Feeds its orders cause fall overdue and the user runs them
itself (tpce/mee.py), so its transactions are the whole mix, the market's included;
how many of them fall into a run depends on the clock, so two runs of one revision
differ by a few per cent. The option ``help=off`` (this script's, not the workload's)
leaves the exchange's work alone: the customers' eight transactions only, the same
seeded sequence in every revision. TPC-E's sessions run on their own thread whatever
``--path`` says (the shared thread hosts only sessions that send statement by statement).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from revisions import source_tree  # type: ignore[import-not-found]
from servers import add_url_options, urls, with_database  # type: ignore[import-not-found]

#: the database of each workload, made by the benchmarks the docstring names
DATABASES = {"sysbench": "tpsb_sb_bench", "tpcc": "tpsb_eng_tpcc", "tpce": "tpsb_cg_tpce"}

#: N transactions of one user in this process, after 200 to warm up; the session and
#: its connection are kept from the warm-up to the measured run, as the engine keeps them
LOOP = r"""
import sys, threading
try:  # the engine's parts since the layered layout (db3e1fb) ...
    from tpsbench.core.session import RunContext
    from tpsbench.engine.multiplex import Multiplexer
    from tpsbench.engine.users import VirtualUser
    from tpsbench.measure.recorder import IntervalRecorder
except ImportError:  # ... and before it, so that older revisions can be counted too
    from tpsbench.api.metrics import IntervalRecorder
    from tpsbench.api.multiplex import Multiplexer
    from tpsbench.api.session import RunContext
    from tpsbench.api.worker import VirtualUser
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload

url, workload, spec, path, n = sys.argv[1:6]
wl = get_workload(workload)
options = {o.name: o.default for o in wl.run_options}
options.update(kv.split("=", 1) for kv in spec.split("+") if kv != "-")
options["think"] = "off"
if options.pop("help", "on") == "off":  # TPC-E's users never take the exchange's overdue work
    from tpsbench.workloads.tpce import mee
    mee.LATE_S = float("inf")
wl.configure(options)
target = open_target(url)
meta = wl.verify_schema(target)
wl.prepare_run(target, options, users=1)
ctx = RunContext(workload, url, int(meta["scale"]), 1,
                 {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)


class Countdown(IntervalRecorder):
    # stands in for the step's end: sets ``stop`` after ``left`` transactions
    def record(self, name, latency_us, committed):
        super().record(name, latency_us, committed)
        self.left -= 1
        if self.left == 0:
            self.stop.set()


user = VirtualUser(0, target, IntervalRecorder(wl.transaction_names))
user.conn = target.connect()
background = getattr(wl, "background", None)
if background is not None:  # TPC-E's users need their worker's market exchange (no executors run)
    background(ctx, 0, 1)
session = wl.open_session(ctx, 0, 1, user.conn, target)
hostable = getattr(Multiplexer, "can_host", lambda s: True)(session)
for count in (200, int(n)):
    rec = Countdown(wl.transaction_names)
    rec.left, rec.stop = count, threading.Event()
    if path == "mux" and hostable:
        mux = Multiplexer(target, rec, rec.stop, False)
        mux.start()
        mux.host(session)
        mux.join(600)
    else:
        user.recorder = rec
        user.hot_loop(session, rec.stop, False)
"""


def functions(path: Path) -> dict[str, int]:
    """Self instructions per function of a callgrind output file."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", str(path)], capture_output=True, text=True,
                         check=True).stdout
    found: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r"/tmp/python-build[^/]*/Python-[\d.]+/", "", m.group(2))
            found[name] = found.get(name, 0) + int(m.group(1).replace(",", ""))
    return found


def per_transaction(src: Path, target: str, path: str, tmp: Path, servers: dict[str, str],
                    databases: dict[str, str]) -> dict[str, float]:
    """Self instructions per transaction, per function (the difference of an N1 and an N2 run)."""
    server, workload, spec, n1, n2 = target.split(":")
    runs = []
    python = os.path.realpath(sys.executable)  # not a shim script: valgrind must see Python itself
    for n in (n1, n2):
        out = tmp / f"cg.{os.getpid()}.{n}"
        # one BLAS thread (idle ones spin under valgrind) and one hash seed (dict probes
        # vary with it): the same revision then counts the same to 0.1 %
        env = dict(os.environ, PYTHONPATH=str(src), OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, "-c", LOOP,
                               with_database(servers[server], databases[workload]), workload, spec, path, n],
                              capture_output=True, text=True, env=env)
        if done.returncode:
            sys.exit(f"{target} on {src}: the loop failed:\n{done.stderr[-3000:]}")
        runs.append(functions(out))
        out.unlink()
    first, second = runs
    return {k: (second.get(k, 0) - first.get(k, 0)) / (int(n2) - int(n1)) for k in set(first) | set(second)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", action="append", required=True, help="NAME=REV (REV 'work': the working tree)")
    parser.add_argument("--target", action="append", required=True, help="SERVER:WORKLOAD:OPTIONS:N1:N2")
    parser.add_argument("--path", choices=("mux", "thread"), default="mux",
                        help="the user on a worker's shared thread (mux) or on a thread of its own")
    parser.add_argument("--top", type=int, default=0, help="also list the N most costly functions of each run")
    parser.add_argument("--database", action="append", default=[], metavar="WORKLOAD=NAME",
                        help="the database of a workload, instead of the one DATABASES names")
    add_url_options(parser, "", note=f"; the workload's database is put in: {', '.join(DATABASES.values())}")
    args = parser.parse_args(argv)
    databases = dict(DATABASES)
    for given in args.database:
        workload, sep, name = given.partition("=")
        if not sep or workload not in DATABASES or not name:
            parser.error(f"--database {given!r}: use WORKLOAD=NAME, WORKLOAD one of {', '.join(DATABASES)}")
        databases[workload] = name
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        revs = [(name, source_tree(rev, tmp)) for name, _, rev in (r.partition("=") for r in args.rev)]
        print(f"# client user-space instructions per transaction (callgrind; one user, path {args.path})")
        for target in args.target:
            totals = {}
            for name, src in revs:
                costs = per_transaction(src, target, args.path, tmp, urls(args), databases)
                totals[name] = sum(costs.values())
                for cost, function in sorted(((v, k) for k, v in costs.items()), reverse=True)[: args.top]:
                    print(f"    {name:8} {cost:9,.0f}  {function[:110]}")
            first = revs[0][0]
            print(f"{target.rsplit(':', 2)[0]:40} " + "  ".join(
                f"{name} {total:9,.0f} ({total / totals[first]:.2f})" for name, total in totals.items()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
