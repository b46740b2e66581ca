"""``run --until-steady``: a step's measured window grown until it is steady, by SNIA's test.

Why: a fixed ``--duration`` is either long enough for the slowest step to settle (and
wastes the others' time) or too short for it (its figures mix two states). With
``--until-steady MAX`` a step measures at least ``--duration``, then goes on interval by
interval until its last five steady intervals pass the SNIA criterion
(tpsbench.measure.steady_state: TPS and p95 within 20% range and 10% slope), or until MAX.
The coordinator watches each merged interval here and ends the step (EndStep) the
moment the criterion holds; the interval then under way is not steady, so the step's
figures are exactly the window that was judged steady.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpsbench.engine.steps import LoadStep
from tpsbench.measure.reports import IntervalReport, clock
from tpsbench.measure.steady_state import WINDOW, excursion

#: the observer name the outcome is stored under, with the step's readings
UNTIL_STEADY = "until_steady"


@dataclass
class SteadyWatch:
    """One step's steady intervals as they come, and whether the step may end yet."""

    #: the least measured time before steadiness may end the step (the step's --duration)
    least_s: float
    #: the most: the step's measured window as planned
    most_s: float
    tps: list[float] = field(default_factory=list)
    p95: list[float] = field(default_factory=list)
    seconds: float = 0.0
    #: set once the criterion held: the step ends there
    steady: bool = False

    def add(self, report: IntervalReport, steady: bool) -> bool:
        """Take one merged interval (``steady``: in the planned measured window); True the
        first time the step has measured enough and its last five are steady."""
        if not steady or self.steady:
            return False
        self.tps.append(report.tps)
        self.p95.append(report.histogram().percentile(95) / 1000.0)
        self.seconds += report.seconds
        if self.seconds < self.least_s - 1e-6:
            return False
        judged = [excursion(series) for series in (self.tps, self.p95)]
        self.steady = all(e is not None and e.steady for e in judged)
        return self.steady

    def reading(self) -> dict[str, float]:
        """What is stored with the step: steady (1) or MAX reached (0), and how long it measured."""
        return {"steady": float(self.steady), "measured_s": self.seconds, "intervals": float(len(self.tps))}

    def line(self, where: str) -> str:
        """The live line said at the step's end: which happened."""
        if self.steady:
            return (f"{where} steady (SNIA, last {WINDOW} intervals) after {clock(self.seconds)} measured: "
                    "the step ended there")
        return (f"{where} NOT steady by --until-steady {clock(self.most_s)}: measured {clock(self.seconds)}, "
                f"its last {WINDOW} intervals never passed the SNIA test")


def watch_for(step: LoadStep) -> SteadyWatch | None:
    """The watch of a step that ends once steady (``least_s`` set); None for the others."""
    return SteadyWatch(step.least_s, step.duration_s) if step.least_s is not None else None
