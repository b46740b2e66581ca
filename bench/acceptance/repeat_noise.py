"""Does ``compare`` tell a real difference from the noise? An A/A and an A/B comparison
with repeats, on PostgreSQL, TPC-C.

- A/A: a sequential campaign of two targets that are the same pool (two copies of one
  TPC-C database on the same cluster) with ``repeat = 3``: the rounds interleave, A A' A
  A' A A', so drift meets both alike. ``compare --campaign`` must say "within the noise"
  at every user load.
- A/B: the same database run twice with ``--repeat 3``, once with no keying time and once
  with a fixed 2 ms keying time before each transaction (a known, real difference in what
  a closed loop can complete). ``compare`` must give every load a TPS ratio whose 95%
  interval excludes 1.0.

Prints the two compares' review lines and a verdict per item; writes nothing but
scratch databases (dropped at the end) and a results store in a temporary folder.

    python bench/acceptance/repeat_noise.py                      # users 1,4; 12 s steps
    python bench/acceptance/repeat_noise.py --users 1,4,8 --duration 20s
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER = "postgresql://postgres@127.0.0.1"


def tpsbench(*args: str, results: str | None = None) -> str:
    """Run this checkout's tpsbench; its output, or exit with it on a failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    stored = ["--results", results] if results else []
    done = subprocess.run([sys.executable, "-m", "tpsbench", *args, *stored],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        sys.exit(f"tpsbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def psql(sql: str) -> None:
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-qAtc", sql], check=True)


def intervals(text: str) -> dict[str, tuple[float, float]]:
    """The compare's ratio table: each user load's (and the overall) TPS 95% interval."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|")]
    header = next(r for r in rows if r[:2] == ["Configuration", "ratio"])
    cells = next(r for r in rows if r[1] == "TPS 95% CI")
    out = {}
    for load, cell in zip(header[2:], cells[2:]):
        match = re.fullmatch(r"(\d+\.\d+)-(\d+\.\d+)x", cell)
        if match:
            out[load] = (float(match[1]), float(match[2]))
    return out


def said(text: str) -> list[str]:
    """The compare's review sentences."""
    return [line for line in text.splitlines() if " vs " in line and "TPS" in line and "(95% CI" in line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", default="1,4")
    parser.add_argument("--duration", default="12s")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the scratch databases")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="repeat_noise_"))
    results = f"sqlite:///{work / 'results.db'}"
    names = ("repeat_noise_a", "repeat_noise_a2")
    timing = ["--users", args.users, "--rampup", "2s", "--duration", args.duration, "--interval", "2s"]
    for name in names:
        psql(f"DROP DATABASE IF EXISTS {name}")
    try:
        tpsbench("build", "tpcc", "--scale", "1", "--db", f"{SERVER}/{names[0]}")
        psql(f"CREATE DATABASE {names[1]} TEMPLATE {names[0]}")
        campaign = work / "aa.toml"
        users = ", ".join(args.users.split(","))
        campaign.write_text(
            f'workload = "tpcc"\nscale = 1\nusers = [{users}]\nrampup = "2s"\n'
            f'duration = "{args.duration}"\ninterval = "2s"\nrepeat = {args.repeat}\n'
            '[options]\nthink = "off"\nkeying = "off"\n'
            f'[[target]]\ndb = "{SERVER}/{names[0]}"\nstorage = "pool A"\n'
            f'[[target]]\ndb = "{SERVER}/{names[1]}"\nstorage = "pool A again"\n')
        tpsbench("campaign", str(campaign), results=results)
        aa = tpsbench("compare", "--campaign", "1", results=results)
        db = f"{SERVER}/{names[0]}"
        tpsbench("run", "tpcc", *timing, "--repeat", str(args.repeat), "--storage", "keying 0 ms",
                 "--db", db, results=results)
        tpsbench("run", "tpcc", *timing, "--repeat", str(args.repeat), "--storage", "keying 2 ms",
                 "--keying", "fixed:2ms", "--db", db, results=results)
        ab = tpsbench("compare", "keying 0 ms", "keying 2 ms", results=results)
    finally:
        if not args.keep:
            for name in names:
                psql(f"DROP DATABASE IF EXISTS {name}")
    aa_ci, ab_ci = intervals(aa), intervals(ab)
    for name, text, ci in (("A/A (campaign, repeat = %d, A A' rounds)" % args.repeat, aa, aa_ci),
                           ("A/B (--repeat %d, keying 0 ms against fixed:2ms)" % args.repeat, ab, ab_ci)):
        print(f"{name}, users {args.users}, {args.duration} steps:")
        for load, (low, high) in ci.items():
            print(f"  {load}: TPS ratio 95% CI {low:.2f}-{high:.2f}x")
        print("\n".join(f"  {line}" for line in said(text)))
    loads = [load for load in aa_ci if load != "overall"]
    aa_ok = bool(loads) and all(aa_ci[load][0] <= 1.0 <= aa_ci[load][1] for load in loads)
    loads = [load for load in ab_ci if load != "overall"]
    ab_ok = bool(loads) and all(not ab_ci[load][0] <= 1.0 <= ab_ci[load][1] for load in loads)
    print(f"A/A within the noise at every load: {'yes' if aa_ok else 'NO'}")
    print(f"A/B a difference whose interval excludes 1.0 at every load: {'yes' if ab_ok else 'NO'}")
    return 0 if aa_ok and ab_ok else 1


if __name__ == "__main__":
    sys.exit(main())
