"""What the storage did for each transaction: device I/O and log bytes per commit.

Why: TPS alone does not say whether a configuration did less I/O or faster I/O. A review
that shows "2.1 reads and 9 KB written per New-Order" beside the TPS shows what the
storage was asked for each unit of work, and a cache that hid the reads shows as reads
per transaction near 0. Every figure is a rate over a step's steady window divided by the
transactions committed per second over the same window (the step's TPS, or one
transaction type's commits per second), so the window's length cancels out.
"""

from __future__ import annotations

from collections.abc import Mapping

#: (figure per transaction, observer, the rate it is made of), in report order: the
#: database's devices as a whole (tpsbench.measure.disk_io's total) and its log
#: (tpsbench.measure.db_counters: PostgreSQL's WAL, MariaDB's and MySQL's redo log)
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("reads", "disk_io", "total.r_s"),
    ("writes", "disk_io", "total.w_s"),
    ("read_kB", "disk_io", "total.r_kB_s"),
    ("written_kB", "disk_io", "total.w_kB_s"),
    ("wal_bytes", "database", "wal_bytes_s"),
    ("redo_bytes", "database", "innodb_os_log_written_s"),
)


def io_per_txn(readings: Mapping[str, Mapping[str, float]], per_s: float) -> dict[str, float]:
    """Each figure of FIGURES that the readings have, divided by ``per_s`` (transactions
    committed per second over the same window); nothing where no transaction committed."""
    if per_s <= 0:
        return {}
    return {name: readings[observer][rate] / per_s for name, observer, rate in FIGURES
            if rate in readings.get(observer, {})}
