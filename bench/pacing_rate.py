"""Paced steps on PostgreSQL: is the offered rate achieved, and does an excess show?

The goal: at a rate the users sustain, the achieved rate is within 1% of
the offered one over a 60 s step; at one they cannot, the report says so and the queue
grows. sysbench point selects on one 10,000-row table, 8 users, a sustainable rate and
then one far beyond what 8 users can serve here, each step 60 s measured.

Needs the PostgreSQL server of the tests. Run:
``python bench/pacing_rate.py [--rates 500,100000] [--duration 60] | tee bench/results/pacing_rate.txt``.
"""

from __future__ import annotations

import argparse
import tempfile

import psycopg

from tpsbench.commands.build import build
from tpsbench.commands.run import RunConfig, run
from tpsbench.engine.pacing import PACING
from tpsbench.report.warnings import warnings

ADMIN = "host=127.0.0.1 user=postgres dbname=postgres"
DB = "tpsb_bench_pacing"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="500,100000", help="offered transactions a second, one step each")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds measured per step")
    parser.add_argument("--users", type=int, default=8)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DB}")
    url = f"postgresql+psycopg://postgres@127.0.0.1/{DB}"
    try:
        build("sysbench", 1, url, options={"table_size": "10000"})
        with tempfile.TemporaryDirectory() as folder:
            config = RunConfig(workload="sysbench", url=url, users=[args.users] * len(rates), rampup_s=2.0,
                               duration_s=args.duration, interval_s=5.0, rates=rates, seed=1,
                               options={"mode": "oltp_point_select"}, results_url=f"sqlite:///{folder}/r.db")
            record = run(config, live=None, observers=[])
            data = record.store.load_run(record.run_id)
        print(f"sysbench oltp_point_select on PostgreSQL, {args.users} users, {args.duration:.0f} s per step, "
              "Poisson arrivals")
        print(f"{'offered rate':>14} {'achieved':>10} {'ratio':>7} {'queue at end':>13} {'p99 ms':>9} "
              f"{'service p99 ms':>15}")
        for step in data.steps:
            pacing, summary = data.readings(step.step)[PACING], step.summary
            assert summary is not None
            ratio = pacing["achieved_per_s"] / pacing["offered_per_s"]
            print(f"{pacing['offered_per_s']:>14.1f} {pacing['achieved_per_s']:>10.1f} {ratio:>7.4f} "
                  f"{pacing['queue_end']:>13.0f} {summary.latency.p99:>9.2f} "
                  f"{summary.timings['service_time'].p99:>15.2f}")
        for line in warnings([data]):
            print(f"WARNING: {line}")
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


if __name__ == "__main__":
    main()
