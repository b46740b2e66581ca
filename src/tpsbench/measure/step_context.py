"""What a step's verdict is, and what it reads beyond the step's readings.

Why a module of its own: reports, the live line and the exports hold verdicts and build
contexts without the rules of :mod:`tpsbench.measure.bottleneck`, and the rules stay one
reading's length.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: the kinds of verdict (the shared contract's names)
KINDS = ("storage", "server_cpu", "driver_cpu", "host_cpu", "locks", "rate", "think", "undetermined")
#: how each kind reads in a table cell
KIND_LABELS = {"storage": "storage", "server_cpu": "server CPU", "driver_cpu": "driver CPU",
               "host_cpu": "other processes' CPU", "locks": "locks", "rate": "paced rate",
               "think": "think times", "undetermined": "undetermined"}

#: a paced step that achieved this share of its offered arrivals kept up
KEPT_LEAST = 0.99
#: the observer whose per-device figures give the unloaded await
DISK_IO = "disk_io"
#: the per-device figures whose lowest value over a run is the device's unloaded await
AWAITS = ("r_await_ms", "w_await_ms")
#: the per-device rate that tells whether the device did that kind of I/O at all
_AWAIT_RATE = {"r_await_ms": "r_s", "w_await_ms": "w_s"}

Readings = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Verdict:
    """What limited a step: ``kind`` (one of KINDS), a sentence with the figures behind it,
    the figures themselves ("observer.figure" -> value), and what it names ("loop1", "stock")."""

    kind: str
    text: str
    figures: dict[str, float] = field(default_factory=dict)
    subject: str = ""

    @property
    def short(self) -> str:
        """The verdict in a table cell: "storage (loop1)", "server CPU"."""
        return f"{KIND_LABELS[self.kind]} ({self.subject})" if self.subject else KIND_LABELS[self.kind]


@dataclass(frozen=True)
class StepContext:
    """What the verdict needs beyond the readings: the step's users, its pacing (offered and
    achieved arrivals per second; None for a closed loop), whether users waited between
    transactions, whether the server runs on this host, the database's devices (its own
    first), each device's unloaded await (``<dev>.r_await_ms`` -> ms, :func:`unloaded_awaits`)
    and whether the database is embedded in the driver."""

    users: int
    offered_per_s: float | None = None
    achieved_per_s: float | None = None
    #: arrivals waiting for a free user at the window's end, and the window's seconds
    queue_end: float | None = None
    seconds: float = 0.0
    waits: bool = False
    local: bool = True
    host: str = ""
    devices: tuple[str, ...] = ()
    unloaded: Mapping[str, float] = field(default_factory=dict)
    #: the database runs inside the driver's processes (SQLite): their CPU is the database's
    embedded: bool = False
    #: the share of the users' time spent in transactions (TPS x mean response time / users,
    #: Little's law); None where not known
    working: float | None = None


def unloaded_awaits(steps: Iterable[Readings]) -> dict[str, float]:
    """Each device's lowest read and write await over a run's steps that did that I/O
    (``<dev>.r_await_ms`` -> ms): the device's latency with the least load the run put on it."""
    out: dict[str, float] = {}
    for readings in steps:
        disk = readings.get(DISK_IO, {})
        for name, value in disk.items():
            device, _, figure = name.rpartition(".")
            if figure in AWAITS and device != "total" and value > 0 and disk.get(f"{device}.{_AWAIT_RATE[figure]}"):
                out[name] = min(value, out.get(name, value))
    return out


def kept_up(offered: float, achieved: float, queue_end: float | None, users: int, seconds: float) -> bool:
    """Whether a paced step's users kept up with its offered arrivals (per second, as
    engine.pacing.step_figures gives them, with the arrivals still queued at the window's end).

    Why the second rule: the window counts arrivals when they are due and completions when
    they end, so a step that kept up can end its window with one arrival per user still in
    flight. A shortfall no larger than that, with no arrival left waiting for a user, is the
    window's edge, not a backlog (60 arrivals at 20/s, 2 users: 58 completed is 97 %)."""
    if offered <= 0 or achieved >= offered * KEPT_LEAST:
        return offered > 0
    return queue_end == 0 and round((offered - achieved) * seconds) <= users  # whole transactions
