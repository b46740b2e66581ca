"""What the database's sessions wait on beside every step: the server's side of a limit.

Host CPU and device I/O say how busy the machine was; only the server can say what its
sessions were waiting for while the TPS was what it was: a step whose sessions spend
their time waiting for a lock on one table is limited by that table, not by the
storage, however busy the disks look, and a storage-bound step shows its sessions
waiting on I/O even where a throttle hides the waits from the device's own counters.
So this observer keeps one autocommit connection of its own and, on a thread of its own
through each step, looks at the benchmark database's sessions about 10 times a second
(:data:`POLL_EVERY_S`) through the target's :meth:`~tpsbench.core.target.Target.read_waits`
(the SQL of each database lives with its target), counting what it sees. A sample is
those counts so far, so a reading is the mean over its window as the other observers'.

Figures per interval and per steady window (percentages are of active-session samples,
all 0 when no session was active):

- ``active``: the mean number of the database's client sessions executing a statement
  (not idle, not the observers' own): how many the server was working for at once;
- ``cpu_pct``, ``lock_pct``, ``lwlock_pct``, ``io_pct``, ``ipc_pct``, ``client_pct``,
  ``other_pct``: the share on CPU (not waiting), waiting on a heavyweight or row lock, on
  an internal lock (PostgreSQL's LWLocks), on I/O, on another process (IPC), on the
  client, on anything else. Only the kinds the database tells apart are given
  (:attr:`Target.wait_kinds`): MariaDB and MySQL without performance_schema give no
  ``io_pct`` nor ``lwlock_pct``, and their ``cpu_pct`` holds the I/O too
  (targets/mysql/sessions.py);
- ``lock_on.<table>``: the share waiting on a lock of that table (the TOP biggest);
- ``event.<Type>:<Event>``: the share in that wait (the TOP biggest), e.g.
  ``event.IO:DataFileRead``, ``event.Lock:transactionid``.

Why some windows have no figures: a look the server did not answer drops the connection
(the next one, a second later, connects again) and counts for nothing; a window in
which no look was answered has no figures, never an error. SQLite has no sessions to
look at, so it has no such observer (commands.run adds it where the target has
``wait_kinds``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, NamedTuple

from tpsbench.core.target import Target, close_quietly
from tpsbench.measure.observers import StepObserver, StepThread

#: seconds between two looks at the sessions
POLL_EVERY_S = 0.1
#: seconds before a look that failed is tried again (a server down is not asked 10 times a second)
RETRY_AFTER_S = 1.0
#: how long the end of a step waits for a look in flight before leaving it to its daemon thread
STOP_WAIT_S = 2.0
#: how many tables and events a reading names
TOP = 5
#: the results store's longest figure name
NAME_MOST = 64


class WaitCounts(NamedTuple):
    """Counts since the step began: looks answered, active sessions seen, and those by
    kind, by table locked and by wait event."""

    looks: int
    sessions: int
    kinds: dict[str, int]
    tables: dict[str, int]
    events: dict[str, int]


class DbWaits(StepObserver):
    """The database's sessions, looked at several times a second (see the module docstring)."""

    name = "db_waits"
    connections = 1

    def __init__(self, target: Target, every_s: float = POLL_EVERY_S) -> None:
        self.target = target
        self.every_s = every_s
        self._lock = threading.Lock()
        self._looks = self._sessions = 0
        self._kinds: Counter[str] = Counter()
        self._tables: Counter[str] = Counter()
        self._events: Counter[str] = Counter()
        self._thread = StepThread("db_waits", self._look, STOP_WAIT_S)

    def step_started(self, step: int, users: int) -> None:
        self._thread.start()

    def step_ended(self, step: int) -> None:
        self._thread.end()

    def _look(self, stop: threading.Event) -> None:
        """Look every ``every_s`` on the clock (a slow look skips, never drifts) until stopped."""
        conn: Any = None
        due = time.monotonic()
        while not stop.is_set():
            try:
                conn = conn or self.target.observer_connection()
                waits = self.target.read_waits(conn)
            except Exception:  # noqa: BLE001 - a look not answered counts for nothing, never an error
                close_quietly(conn)
                conn = None
                stop.wait(RETRY_AFTER_S)
                due = time.monotonic()
                continue
            with self._lock:
                self._looks += 1
                self._sessions += len(waits)
                self._kinds.update(w.kind for w in waits)
                self._tables.update(w.table for w in waits if w.table)
                self._events.update(w.event for w in waits if w.event)
            now = time.monotonic()
            due += self.every_s * max(1, int((now - due) / self.every_s) + 1)
            stop.wait(max(0.0, due - now))
        close_quietly(conn)

    def sample(self) -> WaitCounts:
        with self._lock:
            return WaitCounts(self._looks, self._sessions, dict(self._kinds), dict(self._tables), dict(self._events))

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        """Means over the looks between two samples (see the module docstring)."""
        looks = after.looks - before.looks
        if looks <= 0:
            return {}
        seen = after.sessions - before.sessions

        def share(counts: dict[str, int], earlier: dict[str, int], key: str) -> float:
            return round(100.0 * (counts.get(key, 0) - earlier.get(key, 0)) / seen, 2) if seen > 0 else 0.0

        figures = {"active": round(seen / looks, 3)}
        figures |= {f"{kind}_pct": share(after.kinds, before.kinds, kind) for kind in self.target.wait_kinds}
        for prefix, counts, earlier in (("lock_on", after.tables, before.tables),
                                        ("event", after.events, before.events)):
            top = sorted(((share(counts, earlier, key), key) for key in counts), reverse=True)[:TOP]
            figures |= {f"{prefix}.{key}"[:NAME_MOST]: value for value, key in top if value > 0}
        return figures
