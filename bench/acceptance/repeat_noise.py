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
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER = "postgresql://postgres@127.0.0.1"


def tpsbench(*args: str, results: str) -> str:
    """Run this checkout's tpsbench; its output, or exit with it on a failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "tpsbench", *args, "--results", results],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        sys.exit(f"tpsbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def psql(sql: str) -> None:
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-qAtc", sql], check=True)


def review_lines(text: str) -> list[str]:
    """The compare's sentences: one per user load, "... at N users: +x% TPS (95% CI ...)"."""
    return [line.strip() for line in text.splitlines() if " users: " in line and "TPS" in line]


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
        tpsbench("build", "tpcc", "--scale", "1", "--db", f"{SERVER}/{names[0]}", results=results)
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
    aa_lines, ab_lines = review_lines(aa), review_lines(ab)
    print(f"A/A (campaign, repeat = {args.repeat}, users {args.users}, {args.duration} steps):")
    print("\n".join(f"  {line}" for line in aa_lines))
    print(f"A/B (--repeat {args.repeat}, keying 0 ms against fixed:2ms):")
    print("\n".join(f"  {line}" for line in ab_lines))
    aa_ok = bool(aa_lines) and all("within the noise" in line for line in aa_lines)
    ab_ok = bool(ab_lines) and not any("within the noise" in line or "no 95% CI" in line for line in ab_lines)
    print(f"A/A within the noise at every load: {'yes' if aa_ok else 'NO'}")
    print(f"A/B a difference whose interval excludes 1.0 at every load: {'yes' if ab_ok else 'NO'}")
    return 0 if aa_ok and ab_ok else 1


if __name__ == "__main__":
    sys.exit(main())
