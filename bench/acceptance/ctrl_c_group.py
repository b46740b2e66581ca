"""Ctrl-C as a terminal sends it, while both cores are busy: ``timeout --preserve-status
-s INT T tpsbench run tpcc ...`` (timeout signals the command's whole process group, as
a terminal does) TRIES times, T spread evenly over 0.3-6 s, a small SQLite TPC-C each
time, with one spinning process per core beside it.

Counted: exit codes (all must be 130, the signal's, or 0 where the run had ended
before it), tracebacks in any process's output (none), seconds from the signal to the
end (at most 5), and the runs the results store holds (interrupted or completed, never
running).

    python bench/acceptance/ctrl_c_group.py                 # 50 tries of SIGINT
    python bench/acceptance/ctrl_c_group.py --signal TERM --tries 20
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {"INT": 130, "TERM": 143, "HUP": 129}
#: the run: two steps, short, so that the signal times cover start, steps and end
RUN = ["--users", "1,2", "--rampup", "0.5s", "--duration", "1s", "--interval", "0.5s"]


def tpsbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "tpsbench", *args]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tries", type=int, default=50)
    parser.add_argument("--signal", choices=sorted(EXPECTED), default="INT")
    parser.add_argument("--first", type=float, default=0.3, help="the earliest T (s)")
    parser.add_argument("--last", type=float, default=6.0, help="the latest T (s)")
    args = parser.parse_args()
    env = environment()
    work = Path(tempfile.mkdtemp(prefix="ctrl_c_group_"))
    built = work / "built.db"
    subprocess.run(tpsbench("build", "tpcc", "--scale", "1", "--db", f"sqlite:///{built}"), env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    spinners = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(os.cpu_count() or 2)]
    exits: collections.Counter[int] = collections.Counter()
    tracebacks, late, bad = 0, 0, []
    statuses: collections.Counter[str] = collections.Counter()
    print(f"{args.tries} tries of SIG{args.signal} to the process group at T = {args.first}-{args.last} s, "
          f"{len(spinners)} spinning processes beside; tpsbench run tpcc {' '.join(RUN)} on SQLite scale 1")
    print(f"{'try':>3} {'T s':>5} {'exit':>4} {'after s':>7} {'tb':>2}  last line")
    try:
        for number in range(args.tries):
            t = args.first + (args.last - args.first) * number / max(1, args.tries - 1)
            folder = work / f"try{number}"
            folder.mkdir()
            shutil.copy(built, folder / "tpcc.db")
            started = time.monotonic()
            done = subprocess.run(["timeout", "--preserve-status", "-s", args.signal, f"{t:.2f}",
                                   *tpsbench("run", "tpcc", "--db", f"sqlite:///{folder / 'tpcc.db'}", "--results",
                                             f"sqlite:///{folder / 'results.db'}", *RUN)],
                                  cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)
            took = time.monotonic() - started
            after = max(0.0, took - t)
            count = (done.stdout + done.stderr).count("Traceback")
            exits[done.returncode] += 1
            tracebacks += count
            late += after > 5.0 and done.returncode != 0
            if done.returncode not in (0, EXPECTED[args.signal]) or count:
                bad.append((number, done.stderr))
            stored = status_of(folder / "results.db")
            statuses.update(stored)
            last = (done.stderr.strip().splitlines() or [""])[-1][:70]
            print(f"{number:>3} {t:>5.2f} {done.returncode:>4} {after:>7.2f} {count:>2}  {last} {stored}", flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(f"exits: {dict(sorted(exits.items()))}; tracebacks: {tracebacks}; ended more than 5 s after the signal: "
          f"{late}; stored runs by status: {dict(statuses)}")
    for number, err in bad:
        print(f"--- try {number}:\n{err}")
    ok = not bad and not late and "running" not in statuses
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def status_of(results: Path) -> list[str]:
    """The statuses of the runs the try's results store holds (none if it was never made)."""
    if not results.exists():
        return []
    with contextlib.closing(sqlite3.connect(results)) as db:
        try:
            return [row[0] for row in db.execute("SELECT status FROM runs")]
        except sqlite3.OperationalError:  # made, but the signal came before its tables were
            return []


if __name__ == "__main__":
    sys.exit(main())
