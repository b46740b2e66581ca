"""The messages between the coordinator and its workers, whatever carries them.

Coordinator -> worker: :class:`WorkerStep` (one worker's share of a step) or :class:`Stop`.
Worker -> coordinator: :class:`WorkerReady` once, then for every step one
:class:`~tpsbench.measure.reports.IntervalReport` per interval and :class:`WorkerStepDone`;
:class:`WorkerFailed` when it cannot go on. The transport adds :class:`WorkerLost` when a
worker is gone. Nothing is shared but these picklable values, so a worker can sit in
another process here (tpsbench.engine.local) or on another host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: how long the users of a stopping step may take to finish their transaction in flight
STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class WorkerStep:
    """One step as one worker runs it.

    ``users`` are the global ids (0-based) of the users this worker hosts; ``users_in_step``
    counts all users of the step on all workers, and ``workers`` the workers that host
    some. ``start_at`` is wall-clock (time.time()) so that workers on other hosts with
    synchronised clocks start together.
    """

    step: int
    users: list[int]
    users_in_step: int
    rampup_s: float
    duration_s: float
    interval_s: float
    start_at: float
    think: bool = True
    #: users whose sessions allow it share one thread (tpsbench.engine.multiplex)
    multiplex: bool = True
    workers: int = 1
    #: paced steps (tpsbench.engine.pacing): this worker's arrivals per second (0: a closed
    #: loop), how they are spaced, the fraction of a gap its schedule is offset by, its seed
    rate: float = 0.0
    arrivals: str = "poisson"
    phase: float = 0.0
    seed: int = 0
    #: a folder where a paced step writes every transaction's timestamps ("": none)
    trace_dir: str = ""
    #: close the connections kept from the last step first (the server was restarted)
    fresh: bool = False


@dataclass(frozen=True)
class Stop:
    """Coordinator -> worker: end the current step now and exit."""


@dataclass(frozen=True)
class EndStep:
    """Coordinator -> worker: end step ``step`` now, its interval under way not steady, and
    wait for the next (it reached steady state: ``run --until-steady``). One that comes once
    the step is over is ignored: it must not end the next step."""

    step: int


@dataclass(frozen=True)
class WorkerReady:
    worker: int
    pid: int


@dataclass(frozen=True)
class WorkerStepDone:
    """Worker -> coordinator, after the step's last report. ``problems`` are one-liners;
    ``hosts``: what a worker on another host read of it over the steady window (as
    IntervalReport.hosts)."""

    worker: int
    step: int
    interrupted: bool = False
    problems: list[str] = field(default_factory=list)
    hosts: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkerFailed:
    """Worker -> coordinator: the worker cannot go on (it exits after sending this)."""

    worker: int
    message: str


@dataclass(frozen=True)
class WorkerLost:
    """Transport -> coordinator: the worker is gone, after everything it sent was handed on.

    ``why`` says how, in one line ("worker 1 (pid 4242) was killed by signal 9").
    """

    worker: int
    why: str


def interval_bounds(rampup_s: float, duration_s: float, interval_s: float) -> list[tuple[float, float, bool]]:
    """(start offset, end offset, steady) of each interval, relative to a step's start.

    Ramp-up and steady state are cut separately so that no interval straddles the two:
    the steady window is measured alone, from its first second to its last.
    """
    bounds: list[tuple[float, float, bool]] = []
    for begin, length, steady in ((0.0, rampup_s, False), (rampup_s, duration_s, True)):
        t = 0.0
        while length - t > 1e-9:
            end = min(t + interval_s, length)
            bounds.append((begin + t, begin + end, steady))
            t = end
    return bounds
