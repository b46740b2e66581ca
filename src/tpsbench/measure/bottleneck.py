"""What limited a step: a verdict from the step observers' readings over its steady window.

Why: a storage review's figure is a storage result only if the storage limited it. :func:`verdict`
reads what the observers read (host CPU by whose it was, the database's devices, its
sessions' waits, pacing) and names the limit with the figures behind it, or says
"undetermined" and why: a pure function of one step's readings and a :class:`StepContext`,
which the run's callers build, so that the live line and every report say the same.

The rules, in the order they are tried:

1. ``rate``: a paced step whose users kept up with the offered arrivals (:func:`kept_up`):
   the schedule, not a resource, set the TPS; ``think``: users with waits between
   transactions that spent less than THINK_WORKING_MOST of their time in transactions.
2. The saturated resources, each a candidate: ``driver_cpu`` (a worker at DRIVER_PEAK_MOST
   of one core, or the CPUs the driver and the server may use busy at CPU_BUSY_MOST with the
   driver the largest share), ``server_cpu`` / ``host_cpu`` (those CPUs busy, the server's or
   other processes' share the largest), ``storage`` (a database device at DEVICE_UTIL_MOST
   with its await AWAIT_RISE_LEAST times its unloaded value or QUEUE_LEAST requests queued;
   or the database's sessions waiting on I/O IO_WAIT_LEAST of their active time, which a
   throttle above the device shows where util and await do not; or I/O pressure at
   IO_PRESSURE_LEAST with the CPUs not saturated), ``locks`` (the sessions waiting on row or
   table locks, or on internal locks, LOCK_WAIT_LEAST of their active time).
   Of several, the one the database's sessions spent most of their active time on wins
   (driver: waiting on the client; CPU: on CPU; storage: I/O; locks: lock waits); on a tie
   (no session waits read) the order above: driver, server CPU, host CPU, storage, locks,
   as a saturated CPU slows everything it serves, I/O completions included.
3. ``think``: users with waits (their working share unknown) and nothing saturated.
4. ``undetermined``, with the reason: nothing was saturated (with its figures), no
   readings, or a remote server, whose CPU and devices are not read here (only the
   driver's CPU and the sessions' waits can name a limit then).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tpsbench.measure.step_context import AWAITS, DISK_IO, KIND_LABELS, Readings, StepContext, Verdict, kept_up

#: a driver process this busy (percent of ONE core) is the limit: a Python worker cannot use
#: more than about one core, and the last tenth is lost to scheduling
DRIVER_PEAK_MOST = 90.0
#: CPUs this busy leave no headroom: run queues form, and every request waits for a core
CPU_BUSY_MOST = 90.0
#: a device this busy (percent of the time with I/O in flight) is near its limit, if its
#: requests also wait (below): a fast device can show 100 % util with little queueing
DEVICE_UTIL_MOST = 90.0
#: an await this many times the device's unloaded one means requests queue at the device
AWAIT_RISE_LEAST = 2.0
#: a mean queue of one request or more at a busy device means it is the queue, not the latency
QUEUE_LEAST = 1.0
#: the database's sessions waiting on I/O half their active time: I/O bounds the work,
#: whatever the device's counters show (a blkio throttle delays I/O before they count it)
IO_WAIT_LEAST = 50.0
#: tasks stalled on I/O half the time (PSI "some") while CPUs have room: I/O is the limit
IO_PRESSURE_LEAST = 50.0
#: the sessions waiting on locks half their active time: they serialise on each other
LOCK_WAIT_LEAST = 50.0
#: users with waits between transactions (keying, think times) that spent less than this share
#: of their time in transactions were held back by those waits, not by a resource: a busy
#: host or a loaded neighbour slows each transaction, but the TPS stays users / (wait + time)
THINK_WORKING_MOST = 0.5
#: internal locks whose holder waits on the storage: PostgreSQL's sessions queue on the WAL
#: write lock while one of them flushes the WAL (a throttled device at 8 users: 86 % of active
#: time on LWLock:WALWrite, 13 % on IO:WALSync), so that time is the storage's, not a lock's
IO_BEHIND_LOCKS = ("LWLock:WALWrite",)

#: observer names: the verdict reads stored readings and needs none of the observers' code
HOST_CPU, DB_WAITS, DATABASE = "host_cpu", "db_waits", "database"


def _pct(value: float) -> str:
    return f"{value:.0f} %"


def _ms(value: float) -> str:
    return f"{value:.2g} ms" if value < 10 else f"{value:.0f} ms"


@dataclass
class _Step:
    """One step's readings, read once: the figures each rule looks at."""

    readings: Readings
    context: StepContext

    def __post_init__(self) -> None:
        self.cpu = dict(self.readings.get(HOST_CPU, {}))
        self.disk = dict(self.readings.get(DISK_IO, {}))
        self.waits = dict(self.readings.get(DB_WAITS, {}))
        self.used: dict[str, float] = {}

    def get(self, observer: str, figure: str) -> float | None:
        """A figure, remembered as one the verdict rests on."""
        value = self.readings.get(observer, {}).get(figure)
        if value is not None:
            self.used[f"{observer}.{figure}"] = value
        return value

    def io_share(self) -> float | None:
        """Percent of the sessions' active time waiting on I/O, their own or a lock holder's
        (:data:`IO_BEHIND_LOCKS`); None where the database does not tell I/O waits apart."""
        io = self.get(DB_WAITS, "io_pct")
        return None if io is None else min(100.0, io + self.behind_locks())

    def behind_locks(self) -> float:
        """Percent of the active time on internal locks held for the storage (:data:`IO_BEHIND_LOCKS`)."""
        return sum(self.waits.get(f"event.{e}", 0.0) for e in IO_BEHIND_LOCKS)

    def lwlock_share(self) -> float:
        """Percent of the active time on internal locks not held for the storage."""
        return max(0.0, self.waits.get("lwlock_pct", 0.0) - self.behind_locks())

    def host_busy(self) -> float:
        """Percent of all cores' time busy: not idle, iowait or steal (as host_cpu counts it)."""
        return max(0.0, 100.0 - sum(self.cpu.get(k, 0.0) for k in ("idle", "iowait", "steal")))

    def busy(self) -> float | None:
        """Percent busy of the CPUs the driver and server may use (else of the host's)."""
        allowed = self.get(HOST_CPU, "busy_allowed")
        if allowed is not None:
            return allowed
        return None if self.get(HOST_CPU, "idle") is None else self.host_busy()

    def shares(self) -> dict[str, float]:
        """The driver's, the server's and other processes' CPU (percent of all cores);
        without the server's own figure the rest of the busy time is counted as the server's."""
        driver = self.get(HOST_CPU, "driver") or 0.0
        server = self.get(HOST_CPU, "server")
        others = self.get(HOST_CPU, "others")
        if self.context.embedded:  # the driver's processes run the database: theirs is its CPU
            busy = self.host_busy()
            return {"driver": 0.0, "server": driver, "others": max(0.0, busy - driver) if others is None else others}
        if server is None:
            server, others = (max(0.0, self.host_busy() - driver), 0.0) if self.context.local else (0.0, others or 0.0)
        allowed, busy_allowed = self.cpu.get("allowed_pct"), self.cpu.get("busy_allowed")
        if allowed and busy_allowed is not None and allowed < 100.0:
            # driver and server pinned to some CPUs: weigh them against the busy time of those
            # CPUs (in percent of them); others' work on CPUs they may not use limits neither
            scale = 100.0 / allowed
            driver, server = driver * scale, server * scale
            others = max(0.0, busy_allowed - driver - server)
        return {"driver": driver, "server": server, "others": others or 0.0}

    def devices(self) -> list[str]:
        """The database's devices read, its own first (then those beneath it); without the
        run's detected devices, every device read, the busiest first."""
        names = [d for d in self.context.devices if f"{d}.util_pct" in self.disk]
        found = list(dict.fromkeys(n.rpartition(".")[0] for n in self.disk if not n.startswith("total.")))
        return names or sorted(found, key=lambda d: -self.disk.get(f"{d}.util_pct", 0.0))

    def device(self) -> str | None:
        """The database's own device: the one its waits on I/O are for (a disk beneath a
        loop device also serves other processes, whose I/O says nothing of the database's)."""
        return next(iter(self.devices()), None)

    def session_share(self, kind: str) -> float:
        """Percent of the sessions' active time spent as a saturated ``kind`` would keep them."""
        if kind == "storage":
            return self.io_share() or 0.0
        if kind == "locks":
            return max(self.waits.get("lock_pct", 0.0), self.lwlock_share())
        figure = {"driver_cpu": "client_pct", "server_cpu": "cpu_pct", "host_cpu": "cpu_pct"}[kind]
        return self.waits.get(figure, 0.0)

    def top(self, prefix: str, but: Iterable[str] = ()) -> tuple[str, float] | None:
        """The biggest ``<prefix><name>`` figure of the sessions' waits (not those ``but``)."""
        skip = {f"event.{e}" for e in but}
        found = [(k[len(prefix):], v) for k, v in self.waits.items() if k.startswith(prefix) and k not in skip]
        return max(found, key=lambda kv: kv[1]) if found else None


def _rate(s: _Step) -> Verdict | None:
    context = s.context
    offered, achieved = context.offered_per_s, context.achieved_per_s
    if offered is None or achieved is None:
        return None
    if not kept_up(offered, achieved, context.queue_end, context.users, context.seconds):
        return None
    return Verdict("rate", f"the paced rate: the database kept up, offered {offered:,.1f}/s achieved "
                   f"{achieved:,.1f}/s", {"pacing.offered_per_s": offered, "pacing.achieved_per_s": achieved})


def _think(s: _Step) -> Verdict | None:
    """think, where the users spent most of their time in their waits between transactions."""
    working = s.context.working
    if not s.context.waits or working is None or working >= THINK_WORKING_MOST:
        return None
    return Verdict("think", f"think times: the users spent {working:.0%} of their time in transactions and the "
                   "rest in their waits between them", {"users.working": working})


def _cpu(s: _Step) -> Verdict | None:
    """driver_cpu, server_cpu or host_cpu, where a CPU limit shows."""
    peak = s.get(HOST_CPU, "driver_peak")
    if peak is not None and peak >= DRIVER_PEAK_MOST and s.context.embedded:
        return Verdict("server_cpu", f"database CPU: the embedded database runs in the driver's processes, the "
                       f"busiest at {_pct(peak)} of a core", {})
    if peak is not None and peak >= DRIVER_PEAK_MOST:
        return Verdict("driver_cpu", "driver CPU: the load generator, not the database, was the limit (busiest "
                       f"worker {_pct(peak)} of a core)", {})
    busy = s.busy()
    if busy is None or busy < CPU_BUSY_MOST:
        return None
    shares = s.shares()
    names = {"driver": "the driver", "server": "the database" if s.context.embedded else "the server",
             "others": "others"}
    said = ", ".join(f"{names[who]} {_pct(v)}" for who, v in sorted(shares.items(), key=lambda kv: -kv[1])
                     if not (s.context.embedded and who == "driver"))  # embedded: the driver's is the database's
    largest = max(shares, key=shares.__getitem__)
    if largest == "driver":
        return Verdict("driver_cpu", f"driver CPU: the load generator, not the database, was the limit (CPUs "
                       f"{_pct(busy)} busy: {said})", {})
    if not s.context.local:
        return None
    if largest == "server":
        what = "database CPU (embedded in the driver)" if s.context.embedded else "server CPU"
        return Verdict("server_cpu", f"{what}: CPUs {_pct(busy)} busy ({said})", {})
    return Verdict("host_cpu", f"other processes' CPU: CPUs {_pct(busy)} busy ({said})", {})


def _storage(s: _Step, cpu_saturated: bool) -> Verdict | None:
    """storage, from the database's own device, the sessions' I/O waits, or I/O pressure."""
    device = s.device() if s.context.local else None
    io = s.io_share()
    if device is not None:
        util = s.get(DISK_IO, f"{device}.util_pct") or 0.0
        queue = s.get(DISK_IO, f"{device}.aqu_sz") or 0.0
        rises = []
        for figure in AWAITS:
            now, unloaded = s.disk.get(f"{device}.{figure}", 0.0), s.context.unloaded.get(f"{device}.{figure}")
            if unloaded and now >= AWAIT_RISE_LEAST * unloaded:
                rises.append((now / unloaded, figure, now, unloaded))
        if util >= DEVICE_UTIL_MOST and (rises or queue >= QUEUE_LEAST):
            if rises:
                _, figure, now, unloaded = max(rises)
                s.used[f"{DISK_IO}.{device}.{figure}"] = now
                how = f"{figure.partition('_ms')[0]} {_ms(now)} (unloaded {_ms(unloaded)})"
            else:
                how = f"aqu-sz {queue:.1f}"
            return Verdict("storage", f"storage: {device} at {_pct(util)} util, {how}", {}, device)
    pressure = s.get(HOST_CPU, "io_pressure") if s.context.local else None
    by_waits = io is not None and io >= IO_WAIT_LEAST
    by_pressure = pressure is not None and pressure >= IO_PRESSURE_LEAST and not cpu_saturated
    if not (by_waits or by_pressure):
        return None
    where = [device] if device is not None else []
    if device is not None:
        iops = s.disk.get(f"{device}.r_s", 0.0) + s.disk.get(f"{device}.w_s", 0.0)
        s.used[f"{DISK_IO}.{device}.iops"] = iops
        where.append(f"{iops:,.0f} IOPS")
    if by_waits:
        events = [f"IO:{e[0]}" for e in [s.top("event.IO:")] if e]
        events += [e for e in IO_BEHIND_LOCKS if s.waits.get(f"event.{e}")]
        where.append(f"{_pct(io or 0.0)} of the database's active time waiting on I/O"
                     + (f" ({', '.join(events)})" if events else ""))
    if by_pressure:
        where.append(f"tasks stalled on I/O {_pct(pressure or 0.0)} of the time")
    tail = ""
    if device is not None and (util := s.disk.get(f"{device}.util_pct", 0.0)) < DEVICE_UTIL_MOST:
        tail = (f"; the device shows {_pct(util)} util: the waits are not in its queue (a throttle or a controller "
                "above it, or each flush's latency)")
    elif not s.context.local:
        tail = f"; the server is remote ({s.context.host or 'another host'}): its devices are not read here"
    return Verdict("storage", f"storage: {', '.join(where)}{tail}", {}, device or "")


def _locks(s: _Step) -> Verdict | None:
    lock = s.get(DB_WAITS, "lock_pct") or 0.0
    s.get(DB_WAITS, "lwlock_pct")
    lwlock = s.lwlock_share()
    if max(lock, lwlock) < LOCK_WAIT_LEAST:
        return None
    if lock >= lwlock:
        table, event = s.top("lock_on."), s.top("event.Lock:")
        on = f" on {table[0]}" if table else (f" ({'Lock:' + event[0]})" if event else "")
        return Verdict("locks", f"lock waits{on}: {_pct(lock)} of active time", {}, table[0] if table else "")
    event = s.top("event.LWLock:", but=IO_BEHIND_LOCKS)
    name = f"LWLock:{event[0]}" if event else "LWLock"
    return Verdict("locks", f"internal lock waits ({name}): {_pct(lwlock)} of active time", {}, name)


#: on a tie of the sessions' shares, the order the saturated resources are named in
ORDER = ("driver_cpu", "server_cpu", "host_cpu", "storage", "locks")


def _unsaturated(s: _Step) -> str:
    """The figures that were not saturated, as the undetermined and think verdicts say them."""
    said = []
    if (busy := s.busy()) is not None:
        said.append(f"CPU {_pct(busy)}")
    device = s.device() if s.context.local else None
    if device is not None and (util := s.get(DISK_IO, f"{device}.util_pct")) is not None:
        said.append(f"{device} {_pct(util)} util")
    if (lock := s.get(DB_WAITS, "lock_pct")) is not None:
        said.append(f"lock waits {_pct(lock)}")
    return ", ".join(said)


def verdict(readings: Readings, context: StepContext) -> Verdict:
    """What limited a step, from its steady readings (observer -> figure -> value) and its
    context: the rules of the module docstring."""
    s = _Step(readings, context)
    found = _rate(s) or _think(s)
    if found is None:
        cpu = _cpu(s)
        cpu_saturated = cpu is not None or (s.busy() or 0.0) >= CPU_BUSY_MOST
        candidates = [v for v in (cpu, _storage(s, cpu_saturated), _locks(s)) if v is not None]
        if candidates:
            found = max(candidates, key=lambda v: (s.session_share(v.kind), -ORDER.index(v.kind)))
            if len(candidates) > 1:  # the others said too, also where no session waits were read to choose
                share = s.session_share(found.kind)
                why = f"; the sessions spent {_pct(share)} of their active time on this" if share else ""
                found = Verdict(found.kind, f"{found.text} (also saturated: "
                                f"{', '.join(KIND_LABELS[v.kind] for v in candidates if v is not found)}{why})", {},
                                found.subject)
    found = found or _quiet(s)
    return Verdict(found.kind, found.text, {**s.used, **found.figures}, found.subject)


def _quiet(s: _Step) -> Verdict:
    """think or undetermined: nothing named a limit."""
    context = s.context
    if not context.local:
        return Verdict("undetermined", f"undetermined: the server is remote ({context.host or 'another host'}): "
                       "its CPU and devices are not read here, and neither the driver nor the sessions' waits "
                       "named a limit")
    if not (s.cpu or s.disk or s.waits):
        return Verdict("undetermined", "undetermined: no readings of CPU, devices or the database's waits for "
                       "this step")
    figures = _unsaturated(s)
    if context.waits:
        return Verdict("think", f"think times: the users waited between transactions and nothing was saturated "
                       f"({figures})")
    users = f"{context.users} user" if context.users == 1 else f"{context.users} users"
    return Verdict("undetermined", f"nothing saturated: {figures}: with {users} in a closed loop the round "
                   "trip bounds TPS")
