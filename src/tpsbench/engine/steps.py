"""A run's steps: one user load each, and the checks that refuse one that cannot be measured.

Apart from the coordinator that runs them so that what reads a step (the ``--until-steady``
watch, tpsbench.engine.until_steady) needs no coordinator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import MAX_DURATION_S, MAX_RATE, MAX_USERS, MIN_INTERVAL_S
from tpsbench.engine.pacing import ARRIVALS, refuse_rate


@dataclass(frozen=True)
class LoadStep:
    """One user load of a run: ``users`` start over ``rampup_s``, then ``duration_s`` is measured.

    Users connect (when they have no connection yet) at their start, so without a ramp-up
    connection setup falls into the first measured interval: give every step a ramp-up.
    """

    users: int
    duration_s: float
    rampup_s: float = 0.0
    interval_s: float = 10.0
    #: host users whose sessions allow it on one shared thread per worker (tpsbench.engine.multiplex)
    multiplex: bool = True
    #: a paced step's arrivals per second for all its users, and their spacing
    #: (tpsbench.engine.pacing); 0: a closed loop, each user's next transaction after its last
    rate: float = 0.0
    arrivals: str = "poisson"
    #: a folder where a paced step's workers write every transaction's timestamps ("": none)
    trace_dir: str = ""
    #: --until-steady: measure at least this long, then end once steady (SNIA) or at duration_s
    least_s: float | None = None


def check_steps(steps: Sequence[LoadStep], processes: int | None = None) -> None:
    """Refuse, in one line naming the value, steps that cannot be measured; with the most
    driver ``processes`` the run can have, also a rate that many cannot keep."""
    if not steps:
        raise TpsbenchError("no steps to run")
    for step in steps:
        if not 1 <= step.users <= MAX_USERS:
            raise TpsbenchError(f"a step needs 1 to {MAX_USERS:,} users, not {step.users:,}")
        for what, seconds, least in (("duration", step.duration_s, MIN_INTERVAL_S),
                                     ("interval", step.interval_s, MIN_INTERVAL_S), ("ramp-up", step.rampup_s, 0.0)):
            if not least <= seconds <= MAX_DURATION_S:  # NaN fails too
                raise TpsbenchError(f"a step's {what} must be from {least:g} s to 30 days, not {seconds} s")
        if not 0 <= step.rate < MAX_RATE:
            raise TpsbenchError(f"a step's rate must be 0 (no pacing) or positive and below {MAX_RATE:,}, "
                                f"not {step.rate}")
        if processes is not None:
            refuse_rate(step.rate, step.users, processes)
        if step.least_s is not None and not 0 <= step.least_s <= step.duration_s:
            raise TpsbenchError(f"a step's least measured time must be from 0 to its duration, not {step.least_s} s")
        if step.arrivals not in ARRIVALS:
            raise TpsbenchError(f"arrivals must be one of {', '.join(ARRIVALS)}, not {step.arrivals!r}")
