"""Outages: when the database could not be reached during a step, and for how long.

Why an observer of its own and not the users' reconnects: a reconnect says that one
connection was lost (a killed backend loses one, a restart loses all), not that the
server was gone, nor from when to when. A fault test, and a review of a run that went
through a failover, needs the outage itself: it began at ..., it lasted ... s. So this
observer keeps one connection of its own and asks ``SELECT 1`` every PROBE_EVERY_S; an
outage runs from the start of the first probe that failed to the end of the first one
that worked again (so its length is known to within a probe's period). A probe that
hangs longer than PROBE_HUNG_S counts as failed from its start, so a server that stops
answering without closing its sockets shows as an outage too.

Its figures per interval and per steady window: ``down_s`` (seconds of outage within
the window), ``outages`` (outages that began in it) and ``first_at`` (the wall-clock
time, epoch seconds, the first of them began; only when one did).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tpsbench.core.target import Target, close_quietly
from tpsbench.measure.observers import StepObserver, StepThread

#: seconds between probes: the precision of an outage's start and length
PROBE_EVERY_S = 0.1
#: a probe unanswered for this long counts as failed from its start
PROBE_HUNG_S = 1.0

#: (start, end) wall-clock times of an outage; end None while it lasts
Outage = tuple[float, float | None]


class Reachability(StepObserver):
    """Probes the database on a connection of its own through every step."""

    name = "outage"
    connections = 1

    def __init__(self, target: Target, every_s: float = PROBE_EVERY_S) -> None:
        self.target = target
        self.every_s = every_s
        self._lock = threading.Lock()
        self._outages: list[Outage] = []
        self._probe_since: float | None = None  # start of the probe in flight
        self._thread = StepThread("reachability", self._probe, PROBE_HUNG_S)

    def step_started(self, step: int, users: int) -> None:
        with self._lock:
            self._outages = []
        self._thread.start()

    def step_ended(self, step: int) -> None:
        self._thread.end()

    def _probe(self, stop: threading.Event) -> None:
        conn: Any = None
        while not stop.is_set():
            started = time.time()
            with self._lock:
                self._probe_since = started
            try:
                if conn is None:
                    conn = self.target.observer_connection()  # autocommit: no transaction left open
                cur = conn.cursor()
                cur.execute("SELECT 1")
                cur.fetchall()
                cur.close()
                ok = True
            except Exception:  # noqa: BLE001 - any failure to answer is what this observer records
                ok = False
                close_quietly(conn)
                conn = None
            self._settle(started, time.time(), ok)
            stop.wait(self.every_s)
        close_quietly(conn)

    def _settle(self, started: float, ended: float, ok: bool) -> None:
        with self._lock:
            self._probe_since = None
            ongoing = bool(self._outages) and self._outages[-1][1] is None
            if ok and ongoing:
                self._outages[-1] = (self._outages[-1][0], ended)
            elif not ok and not ongoing:
                self._outages.append((started, None))

    def sample(self) -> tuple[float, list[Outage]]:
        """Now, and the step's outages so far (a probe hung since ``t`` counts from ``t``)."""
        with self._lock:
            now, outages = time.time(), list(self._outages)
            hung = self._probe_since
        if hung is not None and now - hung > PROBE_HUNG_S and not (outages and outages[-1][1] is None):
            outages.append((hung, None))
        return now, outages

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        """Outage seconds within the window, the outages that began in it and when the first did."""
        return outage_figures(after[1], before[0], after[0])


def outage_figures(outages: list[Outage], start: float, end: float) -> dict[str, float]:
    """The figures of ``outages`` within the window from ``start`` to ``end`` (wall clock)."""
    down, began = 0.0, []
    for first, last in outages:
        last = end if last is None else last
        down += max(0.0, min(last, end) - max(first, start))
        if start <= first < end:
            began.append(first)
    figures = {"down_s": down, "outages": float(len(began))}
    if began:
        figures["first_at"] = min(began)
    return figures
