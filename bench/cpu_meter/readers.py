"""The CPU meter's /proc readers (bench/cpu_meter): the server's processes and threads,
their CPU, and how busy the cores are, through tpsbench.measure.procfs of this checkout.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any


def _load_procfs() -> Any:
    """src/tpsbench/measure/procfs.py of this checkout, by file path under a name of its
    own: ``import tpsbench.measure.procfs`` would take the package on PYTHONPATH, which
    is the revision being measured (bench/engine_tpcc_revs.py), so each revision would be
    measured by its own readers, or not at all (revisions before db3e1fb have none)."""
    name = "_bench_procfs"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[2] / "src" / "tpsbench" / "measure" / "procfs.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it, as an import would
    spec.loader.exec_module(module)
    return module


procfs = _load_procfs()
TICK = procfs.TICK
SERVER_PROCESSES = {"postgresql": ("postgres",), "mariadb": ("mariadbd", "mysqld")}


def find_server(server: str) -> int:
    """The postmaster's or mariadbd's pid."""
    for pid in procfs.all_pids():
        st = procfs.read_stat(f"/proc/{pid}/stat")
        if st is None:
            continue
        if server == "postgresql" and st.comm == "postgres" and "/bin/postgres" in procfs.cmdline(pid).split(" ")[0]:
            return pid
        if server == "mariadb" and st.comm in SERVER_PROCESSES["mariadb"]:
            return pid
    raise RuntimeError(f"no {server} server process found")


def cpu_times(cpus: frozenset[int] | None = None) -> tuple[int, int]:
    """(busy, total) ticks of all cores, or of the cores ``cpus`` only; idle and iowait
    are not busy (nor, on a core of ``cpus``, steal)."""
    if cpus is None:
        times = procfs.cpu_times()
        total = sum(times.values())
        return total - times["idle"] - times["iowait"], total
    per_cpu = procfs.cpu_lines()[1]
    return sum(per_cpu[cpu][0] for cpu in cpus), sum(per_cpu[cpu][1] for cpu in cpus)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Busy share of the cores between two :func:`cpu_times` readings."""
    return (after[0] - before[0]) / max(after[1] - before[1], 1)


def _server_stats(server: str) -> dict[int, Any]:
    """The server's processes (their /proc stat), by process id."""
    return {pid: st for pid, st in procfs.processes().items() if st.comm in SERVER_PROCESSES[server]}


def server_ticks(server: str, db: str) -> dict[int, int]:
    """CPU ticks so far (its own and its waited-for children's) of the server's processes
    serving ``db`` (PostgreSQL's backends whose process title names it; MariaDB: mariadbd
    as a whole), by process id."""
    marker = f" {db} "
    return {pid: st.cpu + st.children_cpu for pid, st in _server_stats(server).items()
            if server != "postgresql" or marker in procfs.cmdline(pid)}


def server_threads(server: str) -> dict[int, int]:
    """Every thread of the server's processes (thread id -> its process id): PostgreSQL's
    postmaster, background processes and backends, mariadbd's connection threads."""
    threads = {}
    for pid in _server_stats(server):
        try:
            threads.update({int(tid): pid for tid in os.listdir(f"/proc/{pid}/task")})
        except OSError:
            pass  # ended meanwhile
    return threads


