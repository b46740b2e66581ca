"""Record real steps' steady readings as fixtures for the bottleneck verdict's tests.

Each scenario is a short real run (3 s steps) whose limit is known by construction; its
steps' steady readings (observer -> figure -> value, as the results store keeps them),
users, TPS, the share of the users' time in transactions and pacing are written to tests/fixtures/readings/<name>.json, so that
tpsbench.measure.bottleneck can be tested on what the observers really read, not on
figures made up to fit it:

- ``locks_pg``: sysbench update_non_index on PostgreSQL while another session holds
  LOCK TABLE sbtest1 IN ACCESS EXCLUSIVE MODE for most of the steady window;
- ``locks_mariadb``: the same on MariaDB, the other session holding every row of
  sbtest1 (SELECT ... FOR UPDATE in an open transaction);
- ``paced_pg``: sysbench point selects paced at 50 per second, far below capacity;
- ``cpu_shared_core_pg``: sysbench point selects from one driver process, driver and a
  PostgreSQL cluster of this script's own (port 5471) both pinned to CPU 0 with taskset
  (the shared servers are never pinned: others measure on them); where no cluster can be
  made here, the shared server is used with only the driver pinned, and the file says so;
- ``storage_throttled_pg``: sysbench update_non_index at 1 and 8 users on a PostgreSQL
  cluster of its own (port 5483) on an ext4 loop device throttled to 50 read and 50 write
  IOPS by a blkio cgroup (bench/pools.py);
- ``idle_think_sqlite``: TPC-C on SQLite with fixed keying and think times: the users
  spend their time waiting, not the database.

Run as root on the test machine (the servers of tests/conftest.py):
``PYTHONPATH=src python bench/record_readings.py [NAME ...]``. Databases it makes are
named tpsb_rec_* and dropped after; the private cluster is removed also on failure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pymysql

import tpsbench
from tpsbench.commands.run import RunConfig, run
from tpsbench.report.limits import working_share
from tpsbench.results.store import ResultsStore
from tpsbench.targets import open_target

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "readings"
PG = "postgresql://postgres@127.0.0.1:{port}/{db}"
MARIADB = "mysql://root@127.0.0.1:3306/{db}"
#: the private, pinned cluster of cpu_shared_core_pg
PRIVATE_PORT, PRIVATE_CLUSTER = 5482, "tpsb_rec"
#: the throttled pool's cluster of storage_throttled_pg
THROTTLED_PORT = 5483
STEP = {"rampup_s": 1.0, "duration_s": 3.0, "interval_s": 1.0}


@contextlib.contextmanager
def pg_database(name: str, port: int = 5432) -> Iterator[str]:
    with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG.format(port=port, db=name)
    finally:
        with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def mariadb_database(name: str) -> Iterator[str]:
    admin = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    try:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.cursor().execute(f"CREATE DATABASE `{name}`")
        yield MARIADB.format(db=name)
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


@contextlib.contextmanager
def pinned_cluster() -> Iterator[int | None]:
    """A PostgreSQL cluster of this script's own, started pinned to CPU 0; None where it
    cannot be made (not root, no pg_createcluster, the port taken)."""
    with socket.socket() as probe:
        taken = probe.connect_ex(("127.0.0.1", PRIVATE_PORT)) == 0
    if os.geteuid() != 0 or not shutil.which("pg_createcluster") or not shutil.which("taskset") or taken:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="tpsb-rec-")
    shutil.chown(folder, "postgres")
    try:
        subprocess.run(["pg_createcluster", "15", PRIVATE_CLUSTER, "-p", str(PRIVATE_PORT), "-d", f"{folder}/data",
                        "--", "--auth=trust"], check=True, capture_output=True)
        subprocess.run(["taskset", "-c", "0", "pg_ctlcluster", "--skip-systemctl-redirect", "15", PRIVATE_CLUSTER,
                        "start"], check=True, capture_output=True)
        yield PRIVATE_PORT
    finally:
        subprocess.run(["pg_dropcluster", "--stop", "15", PRIVATE_CLUSTER], check=False, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


class Holder:
    """Holds a lock on a connection of its own while a step runs: taken 0.3 s after the
    step's ramp-up ended (its first live line, "[ 1s ] ..."), released 0.3 s before the
    steady window ends. ``live`` is the run's live callback, ``body`` the thread's."""

    def __init__(self, url: str, take: Callable[[Any], None]) -> None:
        self.target, self.take = open_target(url), take
        self.ramped = threading.Event()

    def live(self, line: str) -> None:
        if line.startswith("[ "):
            self.ramped.set()

    def body(self) -> None:
        conn = self.target.connect()
        try:
            if self.ramped.wait(300):
                time.sleep(0.3)
                self.take(conn.cursor())
                time.sleep(STEP["duration_s"] - 0.6)
            conn.commit()
        finally:
            conn.close()


def run_holding(config: RunConfig, holder: Holder | None = None, live: Callable[[str], None] | None = None) -> Any:
    """Run ``config`` with ``holder`` on a thread of its own (each live line to ``live`` too)."""
    thread = threading.Thread(target=holder.body) if holder else None

    def said(line: str) -> None:
        if holder:
            holder.live(line)
        if live:
            live(line)

    if thread:
        thread.start()
    try:
        return run(config, live=said if holder or live else None)
    finally:
        if holder:
            holder.ramped.set()
        if thread:
            thread.join()


@dataclass(frozen=True)
class PinnedRun:
    """A run of the CLI pinned to one CPU: its store, its id, its status and its output lines (stdout, then stderr)."""

    store: ResultsStore
    run_id: int
    status: str
    lines: list[str]


def run_pinned(config: RunConfig, cpu: int = 0) -> PinnedRun:
    """Run ``config`` (sysbench, its mode, users, workers, step times, seed and results) through
    the CLI under ``taskset -c cpu``: every driver process, the multiprocessing helpers
    included, is pinned from its start (pinning this process's thread later would not
    reach the helpers it already started, and the affinity masks read would say so)."""
    command = ["taskset", "-c", str(cpu), sys.executable, "-m", "tpsbench", "run", config.workload, "--db",
               config.url or "", "--users", ",".join(map(str, config.users)), "--processes", str(config.processes or 1),
               "--rampup", f"{config.rampup_s}s", "--duration", f"{config.duration_s}s", "--interval",
               f"{config.interval_s}s", "--seed", str(config.seed), "--results", config.results_url or "",
               "--mode", config.options["mode"]]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    store = ResultsStore(config.results_url, create=False)
    last = max(store.list_runs(), key=lambda r: r.id)
    return PinnedRun(store, last.id, last.status, (done.stdout + done.stderr).splitlines())


def record(name: str, what: str, config: RunConfig, notes: dict[str, Any] | None = None,
           holder: Holder | None = None, pinned: bool = False) -> None:
    """Run ``config`` (with ``holder`` on a thread of its own, or ``pinned`` to CPU 0 by
    :func:`run_pinned`) and write its steps' steady readings."""
    outcome = run_pinned(config) if pinned else run_holding(config, holder)
    data = outcome.store.load_run(outcome.run_id)
    steps = [{"step": s.step, "users": s.users, "tps": round(s.summary.tps, 3) if s.summary else None,
              "working": working_share(s.summary),
              "paced": bool(config.rates), "rate": config.rates[min(i, len(config.rates) - 1)] if config.rates else None,
              "readings": data.readings(s.step)} for i, s in enumerate(data.steps)]
    server = open_target(config.url)
    document = {"name": name, "what": what, "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
                "workload": config.workload, "options": config.options, "server": server.dialect,
                "server_local": server.is_local, "cpus": os.cpu_count(), "status": outcome.status,
                "storage": data.run.config.get("storage"),
                **(notes or {}), "steps": steps}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(document, indent=1) + "\n")
    print(f"{name}: " + "; ".join(f"{s['users']} users {s['tps']} TPS" for s in steps))


def sysbench(url: str, mode: str, users: int, **extra: Any) -> RunConfig:
    tpsbench.build("sysbench", 1, url, show_progress=False, options={"table_size": "1000"})
    return RunConfig("sysbench", url, users=[users], options={"mode": mode}, seed=1,
                     results_url=f"sqlite:///{tempfile.mkdtemp(prefix='tpsb-rec-')}/results.db", **STEP, **extra)


def locks_pg() -> None:
    with pg_database("tpsb_rec_locks") as url:
        config = sysbench(url, "oltp_update_non_index", 4)
        holder = Holder(url, lambda cur: cur.execute("LOCK TABLE sbtest1 IN ACCESS EXCLUSIVE MODE"))
        record("locks_pg", "sysbench update_non_index, 4 users; another session holds LOCK TABLE sbtest1 IN ACCESS "
               "EXCLUSIVE MODE from 0.3 s into the steady window to 0.3 s before its end", config, holder=holder)


def locks_mariadb() -> None:
    with mariadb_database("tpsb_rec_locks") as url:
        config = sysbench(url, "oltp_update_non_index", 4)

        def take(cur: Any) -> None:
            cur.execute("SELECT id FROM sbtest1 FOR UPDATE")
            cur.fetchall()

        holder = Holder(url, take)
        record("locks_mariadb", "sysbench update_non_index, 4 users; another session holds every row of sbtest1 "
               "(SELECT ... FOR UPDATE, transaction left open) from 0.3 s into the steady window to 0.3 s before "
               "its end", config, holder=holder)


def paced_pg() -> None:
    with pg_database("tpsb_rec_paced") as url:
        record("paced_pg", "sysbench point selects, 4 users paced at 50 per second (Poisson arrivals): far below "
               "what the server answers", sysbench(url, "oltp_point_select", 4, rates=[50.0]))


def cpu_shared_core_pg() -> None:
    with pinned_cluster() as port:
        pinned = port is not None
        with pg_database("tpsb_rec_cpu", port or 5432) as url:
            what = ("sysbench point selects, 8 users on one driver process; driver and server pinned to CPU 0 "
                    "(taskset), the host's other CPU free for others" if pinned else
                    "sysbench point selects, 8 users on one driver process pinned to CPU 0; the shared server "
                    "NOT pinned (no private cluster could be made here)")
            record("cpu_shared_core_pg", what, sysbench(url, "oltp_point_select", 8, processes=1),
                   notes={"pinned": {"driver": [0], "server": [0] if pinned else None}}, pinned=True)


def storage_throttled_pg() -> None:
    import pools  # bench/pools.py, beside this script

    with pools.throttled_sysbench("rec_throttled", THROTTLED_PORT, 50, 2, 10_000) as made:
        config = RunConfig("sysbench", made.url, users=[1, 8], options={"mode": "oltp_update_non_index"}, seed=1,
                           results_url=f"sqlite:///{tempfile.mkdtemp(prefix='tpsb-rec-')}/results.db", **STEP)
        record("storage_throttled_pg", f"sysbench update_non_index, 1 and 8 users, on a PostgreSQL cluster of its own "
               f"on ext4 over {made.device} throttled to 50 read and 50 write IOPS (blkio cgroup)", config,
               notes={"device": made.device, "iops": made.iops})


def idle_think_sqlite() -> None:
    with tempfile.TemporaryDirectory(prefix="tpsb-rec-") as folder:
        url = f"sqlite:///{folder}/tpcc.db"
        tpsbench.build("tpcc", 1, url, show_progress=False)
        config = RunConfig("tpcc", url, users=[4], options={"keying": "fixed:1s", "think": "fixed:1s"}, seed=1,
                           results_url=f"sqlite:///{folder}/results.db", **STEP)
        record("idle_think_sqlite", "TPC-C on SQLite, 4 users with 1 s keying and 1 s think time per transaction: "
               "the users wait, the database does not", config)


SCENARIOS = {f.__name__: f for f in (locks_pg, locks_mariadb, paced_pg, cpu_shared_core_pg, storage_throttled_pg,
                                      idle_think_sqlite)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"scenarios to record (default: all): {', '.join(SCENARIOS)}")
    names = parser.parse_args().names or list(SCENARIOS)
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; there are {', '.join(SCENARIOS)}")
    for name in names:
        SCENARIOS[name]()


if __name__ == "__main__":
    main()
