"""Client instructions per sysbench transaction, counted by callgrind, revisions side by side.

Why callgrind: on a shared 2-core machine timings move by 10-20 % from run to run, which
hides the few-percent changes the hot path is made of. Instructions counted by valgrind
do not depend on what else runs. One user, one thread, runs N transactions through the
engine's own user loop (``VirtualUser.loop``: session draws, statement sending, timing and
recording), once with N1 and once with N2 transactions; the difference divided by N2 - N1
is the cost of one transaction without start-up, per function. Only user-space
instructions of the client count: not the kernel's, not the server's.

    python bench/sysbench_callgrind.py --rev base=b5949e3 --rev new=work \\
        --target postgresql:oltp_point_select:2000:7000 --target mariadb:oltp_point_select:2000:7000

``work`` is the working tree; other revisions are exported with ``git archive``. Needs
valgrind and the tables of bench/vs_sysbench.py (tpsb_sb_bench).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from sysbench_client_cost import URLS, source_tree  # type: ignore[import-not-found]

#: N transactions of one mode through VirtualUser.loop in this thread, after 200 to warm up
LOOP = r"""
import sys
from tpsbench.api.metrics import IntervalRecorder
from tpsbench.api.session import RunContext
from tpsbench.api.worker import VirtualUser
from tpsbench.targets import open_target
from tpsbench.workloads.sysbench import SysbenchWorkload

url, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
wl = SysbenchWorkload()
options = {"mode": mode, "think": "off"}
wl.configure(options)
target = open_target(url)
meta = wl.verify_schema(target)
ctx = RunContext("sysbench", url, int(meta["scale"]), 1,
                 {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
user = VirtualUser(0, target, IntervalRecorder(wl.transaction_names))
user.conn = target.connect()
session = wl.open_session(ctx, 0, 1, user.conn, target)

class Countdown:
    '''Stands in for the step's stop event: set after n transactions.'''
    def __init__(self, n):
        self.left = n
    def is_set(self):
        self.left -= 1
        return self.left < 0
    def wait(self, seconds):
        return False

user.hot_loop(session, Countdown(200), False)
user.hot_loop(session, Countdown(n), False)
"""


def functions(path: Path) -> dict[str, int]:
    """Self instructions per function of a callgrind output file."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", str(path)], capture_output=True, text=True,
                         check=True).stdout
    found: dict[str, int] = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r"/tmp/python-build[^/]*/Python-[\d.]+/", "", m.group(2))
            found[name] = found.get(name, 0) + int(m.group(1).replace(",", ""))
    return found


def per_transaction(src: Path, url: str, mode: str, n1: int, n2: int, tmp: Path) -> dict[str, float]:
    """Self instructions per transaction, per function (the difference of an N1 and an N2 run)."""
    runs = []
    python = os.path.realpath(sys.executable)  # not a shim script: valgrind must see Python itself
    for n in (n1, n2):
        out = tmp / f"cg.{os.getpid()}.{n}"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, "-c", LOOP, url, mode,
                        str(n)], check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=str(src)))
        runs.append(functions(out))
        out.unlink()
    first, second = runs
    return {k: (second.get(k, 0) - first.get(k, 0)) / (n2 - n1) for k in set(first) | set(second)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", action="append", required=True, help="NAME=REV (REV 'work': the working tree)")
    parser.add_argument("--target", action="append", required=True, help="SERVER:MODE:N1:N2")
    parser.add_argument("--top", type=int, default=0, help="also list the N most costly functions of each run")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        revs = [(name, source_tree(rev, tmp)) for name, _, rev in (r.partition("=") for r in args.rev)]
        print("# client user-space instructions per transaction (callgrind; one user, VirtualUser.loop)")
        for spec in args.target:
            server, mode, n1, n2 = spec.split(":")
            totals = {}
            for name, src in revs:
                costs = per_transaction(src, URLS[server], mode, int(n1), int(n2), tmp)
                # OpenBLAS's idle threads spin while valgrind serialises threads: not the client's work
                totals[name] = sum(v for k, v in costs.items() if "blas_thread_server" not in k)
                for cost, function in sorted(((v, k) for k, v in costs.items()), reverse=True)[: args.top]:
                    print(f"    {name:8} {cost:9,.0f}  {function[:110]}")
            first = revs[0][0]
            print(f"{server:10} {mode:18} " + "  ".join(
                f"{name} {total:9,.0f} ({total / totals[first]:.2f})" for name, total in totals.items()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
