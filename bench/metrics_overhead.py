"""Does serving --metrics-addr, scraped every second, cost the driver CPU?

TPC-C on PostgreSQL through bench/engine_tpcc.py's run_one (8 users, no think time, a
fresh 2-warehouse build per run, bench/cpu_meter counting the driver's processes),
run alternately without and with ``--metrics-addr``, the latter scraped every second by
a real Prometheus (Debian's package, its own process: not counted as the driver). The
endpoint renders each interval once (``--interval``, default 10 s as runs have it; 1 s
is the endpoint's worst case) and serves it to every scrape. Printed
per round: the driver's CPU seconds per 1,000 transactions of each, and their ratio;
then the ratio of the sums over all rounds. The target: within 3 %.

    python bench/metrics_overhead.py [--rounds 3] [--duration 40] | tee bench/results/metrics_overhead.txt
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from engine_tpcc import describe, run_one  # noqa: E402  (bench/, beside this script)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def prometheus(folder: Path, target: int) -> subprocess.Popen[bytes]:
    """Debian's Prometheus scraping 127.0.0.1:target every second, ready."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise SystemExit("metrics_overhead.py: needs Debian's prometheus package (apt-get install prometheus)")
    (folder / "p.yml").write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
                                  f"  - job_name: t\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n")
    port = free_port()
    proc = subprocess.Popen([binary, f"--config.file={folder / 'p.yml'}", f"--storage.tsdb.path={folder / 'db'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("metrics_overhead.py: Prometheus did not become ready")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--rampup", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument("--interval", type=float, default=10.0)
    args = parser.parse_args()
    print(f"# bench/metrics_overhead.py {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} cores,"
          f" load average {os.getloadavg()[0]:.1f}: TPC-C on PostgreSQL, {args.users} users, "
          f"{args.rampup:.0f} s + {args.duration:.0f} s, {args.interval:g} s intervals, {args.rounds} rounds off/on")
    sums = {"off": [0.0, 0], "on": [0.0, 0]}
    for round_ in range(1, args.rounds + 1):
        per = {}
        for variant in ("off", "on"):
            with tempfile.TemporaryDirectory(prefix="tpsb-metrics-") as tmp:
                port = free_port()
                scraper = prometheus(Path(tmp), port) if variant == "on" else None
                try:
                    result, _, _ = run_one("postgresql", args.users, args.rampup, args.duration, interval=args.interval,
                                           metrics_addr=f"127.0.0.1:{port}" if scraper else None)
                finally:
                    if scraper is not None:
                        scraper.terminate()
                        scraper.wait(10)
            result.variant = f"metrics {variant}"
            for line in describe(result):
                print(line)
            per[variant] = result.cpu_per_1000
            sums[variant][0] += result.window.driver
            sums[variant][1] += result.commits
        print(f"round {round_}: driver CPU with/without the endpoint {per['on'] / per['off']:.3f}", flush=True)
    overall = (sums["on"][0] / sums["on"][1]) / (sums["off"][0] / sums["off"][1])
    print(f"over all rounds: driver CPU per 1,000 transactions with/without the endpoint {overall:.3f} "
          f"({'within' if abs(overall - 1) <= 0.03 else 'NOT within'} 3 %)")


if __name__ == "__main__":
    main()
