"""bench/engine_tpcc.py for two or more revisions of tpsbench, alternating, in one run.

Why: the driver's share of the CPU moves by a few tenths of a point from run to run on a
shared 2-core machine, about what one change to the hot path is worth. Runs of the
revisions taken in turn, round after round, see the same machine at the same moments,
so the per-round difference shows what the change did and the spread shows the noise.

Each revision's package (``git archive`` of its src, and of the schemas and
scale_factors folders that revisions before the layered layout read from the top of
their tree: bench/revisions.py; ``work`` is the working tree) runs under this checkout's
bench/engine_tpcc.py and bench/cpu_meter, so only the code measured differs.
Printed per round and revision: the driver's CPU per 1,000 transactions and its share
against our backends; then each revision's range and its driver CPU as a ratio of the
first revision's, round by round and over all rounds (their sums' ratio). The server's URL (--pg-url / --mysql-url, default
tpsb_eng_tpcc on the environment's server, bench/servers.py) is handed to engine_tpcc.

    python bench/engine_tpcc_revs.py --rev base=d2030a4 --rev new=work [--rounds 3]
        [--duration 40] [--server postgresql] [--variant procedures=on] [--pg-url URL] [--mysql-url URL]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from revisions import source_tree  # type: ignore[import-not-found]
from servers import OPTIONS, add_url_options, urls  # type: ignore[import-not-found]

HERE = Path(__file__).parent
OUT = HERE / "results" / "engine_tpcc_revs.txt"
#: what bench/engine_tpcc.py prints for a run: driver CPU per 1,000 transactions, share against our backends
LINE = re.compile(r"driver CPU\s+([\d.]+) s/1,000 txn .*\(vs ours only\s+([\d.]+)%\)")


def measure(src: Path, server: str, url: str, variant: str, duration: float, tmp: Path) -> tuple[float, float]:
    """One engine_tpcc run of the package at ``src``: (driver s per 1,000 txn, share % vs ours)."""
    done = subprocess.run([sys.executable, str(HERE / "engine_tpcc.py"), "--servers", server, "--variants", variant,
                           "--duration", str(duration), "--out", str(tmp / "engine_tpcc.txt"), OPTIONS[server], url],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(src)))
    found = LINE.search(done.stdout)
    if done.returncode or found is None:
        sys.exit(f"engine_tpcc on {src} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return float(found.group(1)), float(found.group(2))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", action="append", required=True, help="NAME=REV (REV 'work': the working tree)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--server", default="postgresql")
    parser.add_argument("--variant", default="procedures=on")
    parser.add_argument("--out", type=Path, default=OUT)
    add_url_options(parser, "tpsb_eng_tpcc")
    args = parser.parse_args(argv)
    revs = [tuple(spec.split("=", 1)) for spec in args.rev]
    lines = [f"# python bench/engine_tpcc_revs.py {' '.join(sys.argv[1:] if argv is None else argv)}  "
             f"({time.strftime('%Y-%m-%d %H:%M')}; {args.server}, {args.variant}, {args.duration:.0f} s steady)",
             "round  " + "  ".join(f"{name:>22}" for name, _ in revs) + "   (driver s/1,000 txn, share vs ours)"]
    print("\n".join(lines), flush=True)
    got: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in revs}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {name: source_tree(rev, Path(tmp)) for name, rev in revs}
        for number in range(1, args.rounds + 1):
            for name, _ in revs:
                got[name].append(measure(trees[name], args.server, urls(args)[args.server], args.variant, args.duration,
                                         Path(tmp)))
            lines.append(f"{number:<5}  " + "  ".join(f"{got[n][-1][0]:>13.4f} {got[n][-1][1]:>6.1f} %" for n, _ in revs))
            print(lines[-1], flush=True)
    first = revs[0][0]
    for name, _ in revs:
        shares = [share for _, share in got[name]]
        ratios = [cpu / base for (cpu, _), (base, _) in zip(got[name], got[first], strict=True)]
        # over all rounds: each round's noise weighs by its size, not by its ratio
        overall = sum(cpu for cpu, _ in got[name]) / sum(cpu for cpu, _ in got[first])
        lines.append(f"{name}: share {min(shares):.1f}-{max(shares):.1f} %; driver CPU / {first}'s per round "
                     + ", ".join(f"{r:.2f}" for r in ratios) + f"; over all rounds {overall:.3f}")
        print(lines[-1])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
