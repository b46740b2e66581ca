"""The same TPC-C step locally and through a Dask cluster on this machine: what Dask costs the driver.

One step of ``--users`` users (default 8, think off, 2 warehouses built anew before every
run as bench/engine_tpcc.py builds them), 10 s ramp-up and ``--duration`` s steady state,
``--processes`` driver processes (default 2), through :func:`tpsbench.run`: locally
(worker processes of this one) and with ``--cluster`` on a cluster of ``dask scheduler``
and ``dask worker --nworkers 2 --nthreads 1`` started here as subprocesses, alternately,
``--rounds`` times. The cluster is started once, before the first run; its start is not
measured, its idle CPU is (10 s, before the first run).

``--dask quiet`` (the default) starts the Dask processes as docs/distributed.md advises for
benchmark clients: ``--memory-limit 0`` (no nanny polling the worker's memory 10 times a
second), the event loop's tick and the system monitor at 1 s and 5 s, the profiler off
(:data:`QUIET`); ``--dask default`` as Dask comes. Idle, the quiet cluster measured 5 ms/s
of CPU for the two workers and their nanny (3.5 ms/s the scheduler), the default one
60-65 ms/s (13.5-14 ms/s): half of what the 8 users' whole driver took.

CPU is read from /proc every 0.25 s by a monitor process that is not counted, and
interpolated at the first and last second of the steady window (the run's own steady
intervals), per part of the driver:

- ``coordinator``: this process (the run's coordinator: merging, live line, store, observers);
- ``workers``: the tpsbench worker processes that host the users (this process's children
  locally; on Dask the processes the Dask workers' tasks start, tpsbench.engine.dask.worker);
- ``dask``: the Dask worker processes and their nanny (event loops, heartbeats, the
  long-running tasks waiting), and ``scheduler``, the ``dask scheduler`` process; both
  left out of a local run (the cluster idles beside it).

The driver's CPU per 1,000 committed transactions is all four together (everything
tpsbench and Dask spend on the machine for the load), and the figure without the
scheduler beside it (on a real cluster the scheduler runs elsewhere, or idles). The
acceptance: through Dask within 1.1x of local, and TPS within run-to-run spread: the
mean TPS through Dask differs from the local mean by no more than the local runs differ
among themselves (their largest less their smallest).

    python bench/distributed_overhead.py [--rounds 2] [--duration 60] [--users 8] [--url URL]

The URL defaults to $TPSBENCH_BENCH_PG's server (else 127.0.0.1's), database tpsb_dask_overhead.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engine_tpcc import rebuild, steady_window  # type: ignore[import-not-found]
from servers import add_url_options  # type: ignore[import-not-found]

from tpsbench import RunConfig, run
from tpsbench.measure.procfs import TICK, all_pids, cmdline, cpu_times, read_stat

DB = "tpsb_dask_overhead"
OUT = Path(__file__).parent / "results" / "distributed_overhead.txt"
PARTS = ("coordinator", "workers", "dask", "scheduler")
SAMPLE_S = 0.25
#: the Dask settings of ``--dask quiet`` (environment, and dask worker's options)
QUIET = ({"DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s", "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "5s",
          "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}, ["--memory-limit", "0"])


def parts_now(coordinator: int, roots: dict[str, int], me: int) -> dict[str, int]:
    """CPU ticks of each part of the driver (see the module docstring) as of now."""
    stats = {pid: st for pid in all_pids() if (st := read_stat(f"/proc/{pid}/stat")) is not None}
    times = cpu_times()
    out = dict.fromkeys(PARTS, 0) | {"machine": sum(times.values()) - times["idle"] - times["iowait"]}
    for pid, st in stats.items():
        part = part_of(pid, stats, coordinator, roots, me)
        if part is not None:
            out[part] += st.cpu
    return out


def part_of(pid: int, stats: dict[int, Any], coordinator: int, roots: dict[str, int], me: int) -> str | None:
    """The driver's part ``pid`` belongs to; None when it is not the driver's (the monitor,
    multiprocessing's resource tracker, anything that does not descend from the coordinator)."""
    if pid == coordinator:
        return "coordinator"
    chain: list[int] = []
    up = pid
    while up in stats and up not in (coordinator, 0, 1) and len(chain) < 64:
        chain.append(up)
        up = stats[up].ppid
    if up != coordinator or me in chain:
        return None
    top = chain[-1]  # the coordinator's child it descends from
    if top == roots["scheduler"]:
        return "scheduler"
    line = cmdline(pid)
    if "tpsbench.engine.dask.worker" in line:
        return "workers"
    if top == roots["dask"]:
        return "dask"
    return "workers" if "spawn_main" in line else None


def monitor(conn: Any, coordinator: int, dask_roots: dict[str, int]) -> None:
    """The monitor process: sample every SAMPLE_S until told to stop, then send the samples."""
    me, samples = os.getpid(), []
    while True:
        samples.append((time.time(), parts_now(coordinator, dask_roots, me)))
        if conn.poll(SAMPLE_S):
            break
    samples.append((time.time(), parts_now(coordinator, dask_roots, me)))
    conn.send(samples)


def at(samples: list[tuple[float, dict[str, int]]], t: float) -> dict[str, float]:
    """The parts' ticks at ``t``, interpolated between the samples around it."""
    for (t0, a), (t1, b) in itertools.pairwise(samples):
        if t0 <= t <= t1:
            w = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
            return {k: a[k] + w * (b[k] - a[k]) for k in a}
    raise SystemExit(f"no samples around {t}")


def start_cluster(folder: Path, settings: str) -> tuple[str, dict[str, subprocess.Popen[bytes]]]:
    """``dask scheduler`` and ``dask worker --nworkers 2`` on this machine; the scheduler's address."""
    info = folder / "scheduler.json"
    env, options = QUIET if settings == "quiet" else ({}, [])
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": os.environ | env}
    scheduler = subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(info)], **quiet)  # type: ignore[call-overload]
    deadline = time.monotonic() + 60
    while not info.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    address = json.loads(info.read_text())["address"]
    workers = subprocess.Popen([sys.executable, "-m", "dask", "worker", address, "--nworkers", "2", "--nthreads",
                                "1", "--no-dashboard", *options], **quiet)  # type: ignore[call-overload]
    from distributed import Client

    with Client(address) as client:
        client.wait_for_workers(2, timeout=60)
    return address, {"scheduler": scheduler, "dask": workers}


def one(mode: str, args: argparse.Namespace, address: str, roots: dict[str, int], tmp: str) -> dict[str, Any]:
    rebuild("postgresql", args.url, args.warehouses)
    ours, theirs = mp.get_context("spawn").Pipe()
    watcher = mp.get_context("spawn").Process(target=monitor, args=(theirs, os.getpid(), roots), daemon=True)
    watcher.start()
    config = RunConfig(workload="tpcc", url=args.url, users=[args.users], rampup_s=10.0, duration_s=args.duration,
                       interval_s=10.0, options={"think": "off"}, results_url=f"sqlite:///{tmp}/{mode}.db", seed=12345,
                       processes=args.processes, cluster=address if mode == "dask" else None)
    try:
        record = run(config, live=None)
    finally:
        ours.send("stop")
        samples = ours.recv()
        watcher.join(10)
    step = record.outcome.steps[0]
    if record.status != "completed" or step.summary is None or step.problems or not record.honesty["match"]:
        raise SystemExit(f"{mode}: the run failed: {step.problems} {record.honesty}")
    t0, t1 = steady_window(record)
    a, b = at(samples, t0), at(samples, t1)
    cpu = {k: (b[k] - a[k]) / TICK if mode == "dask" or k in ("coordinator", "workers") else 0.0 for k in PARTS}
    record.store.engine.dispose()
    return {"mode": mode, "tps": step.summary.tps, "commits": step.summary.commits, "cpu": cpu, "seconds": t1 - t0,
            "busy": (b["machine"] - a["machine"]) / TICK / (t1 - t0)}


def describe(r: dict[str, Any]) -> str:
    cpu, per = r["cpu"], 1000.0 / r["commits"]
    total = sum(cpu.values())
    return (f"{r['mode']:5}  TPS {r['tps']:7.1f}  driver CPU {total * per:.4f} s/1,000 txn (without the scheduler "
            f"{(total - cpu['scheduler']) * per:.4f}); CPU s in {r['seconds']:.1f} s steady: "
            + ", ".join(f"{k} {cpu[k]:.2f}" for k in PARTS) + f"; {r['commits']:,} commits; machine busy "
            f"{r['busy']:.2f} of {os.cpu_count()} cores (the database's and others' work included)")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--dask", choices=("quiet", "default"), default="quiet",
                        help="the Dask processes' settings: as docs/distributed.md advises for benchmark clients, or Dask's own")
    parser.add_argument("--label", default="", help="a note for the output header (the machine's state)")
    parser.add_argument("--out", type=Path, default=OUT)
    add_url_options(parser, DB, ("postgresql",), single=True)
    args = parser.parse_args(argv)
    head = (f"# bench/distributed_overhead.py {time.strftime('%Y-%m-%d %H:%M')}: TPC-C {args.warehouses} warehouses, "
            f"{args.users} users on {args.processes} processes, think off, 10 s ramp-up, {args.duration:.0f} s steady;"
            f" local against a dask scheduler + dask worker --nworkers 2 on this machine ({args.dask} Dask settings);"
            f" {os.cpu_count()} cores, "
            f"load average at start {os.getloadavg()[0]:.1f}" + (f"; {args.label}" if args.label else ""))
    print(head, flush=True)
    lines, results = [head], []
    with tempfile.TemporaryDirectory(prefix="tpsb_dask_") as tmp:
        address, procs = start_cluster(Path(tmp), args.dask)
        try:
            roots = {part: proc.pid for part, proc in procs.items()}
            before, t0 = parts_now(os.getpid(), roots, os.getpid()), time.time()
            time.sleep(10)
            after, seconds = parts_now(os.getpid(), roots, os.getpid()), time.time() - t0
            lines.append(f"idle cluster: dask workers and nanny {1000 * (after['dask'] - before['dask']) / TICK / seconds:.1f}"
                         f" ms/s, scheduler {1000 * (after['scheduler'] - before['scheduler']) / TICK / seconds:.1f} ms/s")
            print(lines[-1], flush=True)
            for _ in range(args.rounds):
                for mode in ("local", "dask"):
                    results.append(one(mode, args, address, roots, tmp))
                    lines.append(describe(results[-1]))
                    print(lines[-1], flush=True)
        finally:
            for proc in procs.values():
                proc.terminate()
                proc.wait(30)

    def per_1000(r: dict[str, Any], scheduler: bool = True) -> float:
        return 1000.0 * (sum(r["cpu"].values()) - (0 if scheduler else r["cpu"]["scheduler"])) / r["commits"]

    local = [r for r in results if r["mode"] == "local"]
    dask = [r for r in results if r["mode"] == "dask"]
    ratio = statistics.mean(map(per_1000, dask)) / statistics.mean(map(per_1000, local))
    apart = statistics.mean(per_1000(r, False) for r in dask) / statistics.mean(map(per_1000, local))
    spread = (min(r["tps"] for r in local), max(r["tps"] for r in local))
    apart_tps = statistics.mean(r["tps"] for r in dask) - statistics.mean(r["tps"] for r in local)
    inside = abs(apart_tps) <= spread[1] - spread[0]
    lines.append(f"# driver CPU per 1,000 txn through Dask / local: {ratio:.3f} (target <= 1.1: "
                 f"{'met' if ratio <= 1.1 else 'NOT met'}; {apart:.3f} without the scheduler); TPS through Dask "
                 f"{', '.join(format(r['tps'], '.1f') for r in dask)} against local "
                 f"{', '.join(format(r['tps'], '.1f') for r in local)}: the means {apart_tps:+.1f} apart, "
                 f"{'within' if inside else 'OUTSIDE'} the local runs' spread ({spread[1] - spread[0]:.1f})")
    print(lines[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])
