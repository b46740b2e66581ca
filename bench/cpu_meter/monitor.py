"""The CPU meter's sampling process around a run (:class:`Monitor`), split into the
driver's and the server's parts over a window (:class:`Window`) (bench/cpu_meter).
"""

from __future__ import annotations

import bisect
import multiprocessing as mp
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from servers import default_url, mysql_args  # type: ignore[import-not-found]  # bench/ is on sys.path, not a package

from cpu_meter.readers import TICK, cpu_times, find_server, procfs

SAMPLE_S = 0.25
_PG_CLIENT = re.compile(r"^postgres: [^:]+: (\S+) (\S+) (\S+\(\d+\)|\[local\])")
_PG_AUTOVACUUM = re.compile(r"^postgres: [^:]+: autovacuum worker ?(\S*)")
_PG_PARALLEL = re.compile(r"^postgres: [^:]+: parallel worker for PID (\d+)")


@dataclass
class Sample:
    t: float
    #: key -> ticks; keys: ("driver", pid, role), ("server", id, class)
    cpu: dict[tuple, int]
    #: key -> start time (wall clock seconds)
    started: dict[tuple, float]
    machine: tuple[int, int]
    backends: int  # connections of our database seen by the server
    #: driver pid -> (RSS, PSS) bytes, in every ``memory_every``-th sample
    memory: dict[int, tuple[int, int]] = field(default_factory=dict)


def pg_role(pid: int, db: str) -> str | None:
    """A PostgreSQL process's part: "client" (a backend of ``db``), "ours" (a parallel
    worker of one), "background", or None (another database's work: left out)."""
    text = procfs.cmdline(pid)
    m = _PG_CLIENT.match(text)
    if m and m.group(2) != db:
        return None  # another database's client: someone else's work
    vacuumed = _PG_AUTOVACUUM.match(text)
    if vacuumed and vacuumed.group(1) not in (db, ""):
        return None  # autovacuum of another database
    helper = _PG_PARALLEL.match(text)
    if helper:  # a parallel query's worker belongs to its leader's database
        leader = _PG_CLIENT.match(procfs.cmdline(int(helper.group(1))))
        if not leader or leader.group(2) != db:
            return None
    return "client" if m else "ours" if helper else "background"


def monitor_main(coordinator: int, server: str, db: str, out: Any, stop: Any, every: float,
                 memory_every: int = 0, url: str | None = None) -> None:
    """Sample driver and server CPU every ``every`` seconds until ``stop`` is set; send the samples.

    With ``memory_every`` > 0 every such sample also reads the driver processes' memory.
    ``url``: MariaDB's, for PROCESSLIST (default: the environment's server).
    """
    me = os.getpid()
    btime = procfs.boot_time()
    server_pid = find_server(server)
    roles: dict[int, str] = {}  # mariadb tid -> "ours" / "other" (connection threads seen)
    mconn = None
    if server == "mariadb":
        import MySQLdb

        mconn = MySQLdb.connect(**mysql_args(url or default_url(server, db), db=""), autocommit=True)
    samples: list[Sample] = []
    while True:
        t = time.time()
        cpu: dict[tuple, int] = {}
        started: dict[tuple, float] = {}
        mem: dict[int, tuple[int, int]] = {}
        backends = 0
        for pid in procfs.all_pids():
            if pid == me:
                continue
            st = procfs.read_stat(f"/proc/{pid}/stat")
            if st is None:
                continue
            if pid == coordinator or st.ppid == coordinator:
                if pid != coordinator and "spawn_main" not in procfs.cmdline(pid):
                    continue  # multiprocessing's resource tracker (for the monitor's Event), not the driver
                key: tuple = ("driver", pid, "coordinator" if pid == coordinator else "worker")
                if memory_every and len(samples) % memory_every == 0:
                    mem[pid] = procfs.memory([pid])
            elif server == "postgresql" and (pid == server_pid or st.ppid == server_pid):
                role = pg_role(pid, db)
                if role is None:
                    continue
                backends += role == "client"
                key = ("server", pid, "background" if role == "background" else "ours")
            else:
                continue
            cpu[key] = st.cpu
            started[key] = btime + st.start / TICK
        if mconn is not None:
            cur = mconn.cursor()
            cur.execute("SELECT TID, DB FROM information_schema.PROCESSLIST")
            for tid, name in cur.fetchall():
                name = name.decode() if isinstance(name, bytes) else name
                roles[int(tid)] = "ours" if name == db else "other"
            cur.close()
            try:
                tids = [int(x) for x in os.listdir(f"/proc/{server_pid}/task")]
            except OSError:
                tids = []
            for tid in tids:
                st = procfs.read_stat(f"/proc/{server_pid}/task/{tid}/stat")
                if st is None:
                    continue
                role = roles.get(tid, "background")
                if role == "other":
                    continue
                backends += role == "ours"
                key = ("server", tid, role)
                cpu[key] = st.cpu
                started[key] = btime + st.start / TICK
        samples.append(Sample(t, cpu, started, cpu_times(), backends, mem))
        if stop.wait(max(0.0, every - (time.time() - t))):
            break
    if mconn is not None:
        mconn.close()
    out.send(samples)
    out.close()


class Monitor:
    """The monitor process around a run: ``with Monitor(...) as m: run(...)``; then m.samples.

    ``url``: the server's (MariaDB's monitor reads PROCESSLIST through it).
    """

    def __init__(self, server: str, db: str, every: float = SAMPLE_S, memory_every: int = 0,
                 url: str | None = None) -> None:
        self.server, self.db, self.every, self.memory_every, self.url = server, db, every, memory_every, url
        self.samples: list[Sample] = []

    def __enter__(self) -> Monitor:
        ctx = mp.get_context("spawn")
        self.stop = ctx.Event()
        self.ours, theirs = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=monitor_main, args=(os.getpid(), self.server, self.db, theirs, self.stop,
                                                              self.every, self.memory_every, self.url), daemon=True)
        self.process.start()
        theirs.close()
        time.sleep(1.0)  # its first samples are taken before the run starts
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.samples = self.ours.recv()
        self.process.join(5)

    def cpu_at(self, t: float) -> dict[tuple, float]:
        """Ticks of every process/thread at wall-clock ``t``, interpolated between samples.

        A process seen only after ``t`` counts 0 at ``t`` if it started after ``t`` (else
        its first value); one gone before ``t`` keeps its last value.
        """
        times = [s.t for s in self.samples]
        i = bisect.bisect_right(times, t)
        before = self.samples[max(i - 1, 0)]
        after = self.samples[min(i, len(self.samples) - 1)]
        span = after.t - before.t
        w = (t - before.t) / span if span > 0 else 0.0
        keys = set(before.cpu) | set(after.cpu)
        out: dict[tuple, float] = {}
        for key in keys:
            a, b = before.cpu.get(key), after.cpu.get(key)
            if a is None:
                a = 0.0 if self._started(key) >= before.t else b
            if b is None:
                b = self._last(key, i)
            out[key] = a + (b - a) * w
        for key, value in self._history(i).items():  # gone before t: keep their last value
            out.setdefault(key, value)
        return out

    def _started(self, key: tuple) -> float:
        return self._first(key, "started")

    def _first(self, key: tuple, field: str = "cpu") -> float:
        """``key``'s value in the first sample that saw it (its ticks, or its start time)."""
        for s in self.samples:
            values = getattr(s, field)
            if key in values:
                return values[key]
        return 0.0

    def _last(self, key: tuple, i: int) -> float:
        for s in reversed(self.samples[:i]):
            if key in s.cpu:
                return s.cpu[key]
        return 0.0

    def _history(self, i: int) -> dict[tuple, float]:
        last: dict[tuple, float] = {}
        for s in self.samples[:i]:
            last.update(s.cpu)
        return last

    def window(self, t0: float, t1: float) -> Window:
        a, b = self.cpu_at(t0), self.cpu_at(t1)
        keys = set(a) | set(b)
        parts: dict[str, float] = {}
        impossible: list[str] = []
        for key in keys:
            # a process that started inside the window counts from 0; one older than the
            # window that no sample near its start saw (its title read mid-rewrite in one
            # sample only, say) from the first value seen, not from 0 (its whole life)
            start = 0.0 if self._started(key) >= t0 else a[key] if key in a else self._first(key)
            delta = (b.get(key, a.get(key, 0.0)) - start) / TICK
            name = f"{key[0]}:{key[2]}"
            parts[name] = parts.get(name, 0.0) + max(delta, 0.0)
            if delta > t1 - t0 + 1.0:  # more than one core can give: counted from the wrong baseline
                impossible.append(f"{name} pid {key[1]} {delta:.1f} s")
        inside = [s for s in self.samples if t0 <= s.t <= t1]
        m0, m1 = inside[0].machine, inside[-1].machine
        busy = (m1[0] - m0[0]) / max(m1[1] - m0[1], 1)
        return Window(t1 - t0, parts, busy * (os.cpu_count() or 1), [s.backends for s in inside], impossible)


@dataclass
class Window:
    seconds: float
    #: CPU seconds by "driver:coordinator", "driver:worker", "server:ours", "server:background"
    parts: dict[str, float]
    #: cores busy with anything (every process on the machine)
    machine_cores: float
    backends: list[int] = field(default_factory=list)
    #: processes whose CPU in the window exceeds the window itself (one core's worth): a
    #: sampling artefact seen in some runs (2026-11-30, a slower AMD EPYC machine), which inflates their part
    impossible: list[str] = field(default_factory=list)

    @property
    def driver(self) -> float:
        return sum(v for k, v in self.parts.items() if k.startswith("driver:"))

    @property
    def server(self) -> float:
        return sum(v for k, v in self.parts.items() if k.startswith("server:"))

    @property
    def server_ours(self) -> float:
        return self.parts.get("server:ours", 0.0)

    @property
    def share(self) -> float:
        return self.driver / (self.driver + self.server) if self.driver + self.server else 0.0

    @property
    def share_vs_ours(self) -> float:
        return self.driver / (self.driver + self.server_ours) if self.driver + self.server_ours else 0.0
