"""The database's own counters beside every step: what the server did for the TPS.

A storage review puts "12,000 reads/s, 96 % buffer hits, 40 MB/s of WAL" beside the
TPS, because that is what the storage was asked to do; only the server can tell it.
This observer keeps one autocommit connection of its own through each step and reads
the target's :meth:`~tpsbench.core.target.Target.read_counters` at every interval
boundary (one statement; the SQL of each database lives with its target).

Figures per interval and per steady window, all per second unless named otherwise:
``<counter>_s`` for every counter the target reports (``commits_s``, ``rollbacks_s``,
``cache_hits_s``, ``cache_misses_s``, ``reads_s``, ``writes_s``, ``read_kB_s``,
``write_kB_s``, and the database's own: ``wal_bytes_s``, ``checkpoints_s``,
``innodb_os_log_written_s``, ...), and ``buffer_hit_pct``, the share of page requests
the buffer cache served (PostgreSQL: blks_hit / (blks_hit + blks_read); MariaDB and
MySQL: 1 - Innodb_buffer_pool_reads / Innodb_buffer_pool_read_requests). What each
counter covers on each database (this database or the whole server, data files or WAL
too) is said where it is read: PostgresTarget.read_counters and counters_query,
MysqlFamily.read_counters. SQLite has none, so its readings are empty.

Why some windows have no figures: a sample the server did not answer (the connection is
dropped and the next sample connects again) gives none for the windows it bounds, and so
does a reset between two samples (a restart, pg_stat_reset(), FLUSH STATUS), told by the
target's ``counting_since``: after a reset a counter may have climbed past its old value,
and its difference would be wrong without showing it. A counter that went backwards
all the same (a dropped database's share of a sum) gives no figure of its own.
"""

from __future__ import annotations

from typing import Any

from tpsbench.core.target import Target, close_quietly
from tpsbench.measure.observers import StepObserver

#: the key of read_counters that is a time, not a counter
SINCE = "counting_since"
#: how far ``counting_since`` may move without a reset: servers tell uptimes in whole seconds
RESET_SLACK_S = 2.0


class DatabaseCounters(StepObserver):
    """Rates of the server's cumulative counters, on a connection of its own (see the module docstring)."""

    name = "database"
    connections = 1

    def __init__(self, target: Target) -> None:
        self.target = target
        #: the observer's autocommit connection; None until connected, and after a failure
        self.conn: Any = None

    def step_started(self, step: int, users: int) -> None:
        """Connect now, so that the step's first sample is one query and on time; a
        server that does not answer now is tried again at the next sample."""
        try:
            self._connection()
        except Exception:  # noqa: BLE001 - no connection is no figures, never a failed step
            self._close()

    def step_ended(self, step: int) -> None:
        self._close()

    def sample(self) -> dict[str, float] | None:
        """The counters as of now; None where the server did not answer (the connection
        is dropped, and the next sample connects again)."""
        try:
            return self.target.read_counters(self._connection())
        except Exception:  # noqa: BLE001 - a failed sample is a window without figures, never an error
            self._close()
            return None

    def reading(self, before: Any, after: Any, seconds: float) -> dict[str, float]:
        """Each counter's rate over the window, and the buffer cache's hit ratio in it."""
        if not before or not after or seconds <= 0:
            return {}
        if abs(after.get(SINCE, 0.0) - before.get(SINCE, 0.0)) > RESET_SLACK_S:
            return {}
        change = {name: after[name] - before[name] for name in after
                  if name != SINCE and name in before and after[name] >= before[name]}
        figures = {f"{name}_s": delta / seconds for name, delta in change.items()}
        requests = change.get("cache_hits", 0.0) + change.get("cache_misses", 0.0)
        if "cache_hits" in change and "cache_misses" in change and requests > 0:
            figures["buffer_hit_pct"] = 100.0 * change["cache_hits"] / requests
        return figures

    def _connection(self) -> Any:
        if self.conn is None:
            self.conn = self.target.observer_connection()  # autocommit: each reading a fresh look
        return self.conn

    def _close(self) -> None:
        """Close the connection, which may be dead already (it is gone either way)."""
        conn, self.conn = self.conn, None
        close_quietly(conn)
