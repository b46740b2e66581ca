"""SQLite: the embedded default, so that everything works with no server.

One file, one writer at a time: loads run in a single process, and contention shows up
as "database is locked", which virtual users retry. WAL mode lets readers run beside
the writer, which is how anyone benchmarking SQLite would set it up.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import sqlalchemy as sa

from tpsbench.core.batch import Batch
from tpsbench.core.sql import SqlDialect
from tpsbench.core.target import Target

BUSY_TIMEOUT_S = 30.0


#: SQLite's page cache per connection when no cache_size is set (SQLITE_DEFAULT_CACHE_SIZE: -2000, in KiB)
DEFAULT_CACHE_KIB = 2000


class SqliteTarget(Target):
    backends = ("sqlite",)
    dialect = "sqlite"
    driver = "pysqlite"
    max_loaders = 1
    embedded = True
    driver_modules = ("sqlite3",)
    sql = SqlDialect("sqlite", exact_decimals=False, begin="BEGIN IMMEDIATE")

    @property
    def path(self) -> str:
        return self.url.database or ":memory:"

    def _connect(self) -> Any:  # type: ignore[override]  # never asked for another database: only the server-level families are
        """check_same_thread=False: the engine keeps a user's connection from one step to
        the next, and the next step's user runs on a new thread; a connection is still
        used by one thread at a time, which is all sqlite3 needs."""
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level="DEFERRED", check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @property
    def engine(self) -> sa.Engine:
        engine = sa.create_engine(self.url, poolclass=sa.NullPool, connect_args={"timeout": BUSY_TIMEOUT_S})
        return engine

    def bulk_load(self, conn: Any, batch: Batch) -> None:
        marks = ",".join("?" * len(batch.columns))
        conn.executemany(f"INSERT INTO {batch.table} ({','.join(batch.names)}) VALUES ({marks})", batch.to_rows())

    def after_load(self, conn: Any, tables: list[str]) -> None:
        conn.execute("ANALYZE")
        conn.commit()

    def is_retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)

    def server_info(self) -> dict[str, str]:
        conn = self.connect()
        try:
            info = {"version": sqlite3.sqlite_version}
            for pragma in ("journal_mode", "synchronous", "page_size", "cache_size"):
                info[pragma] = str(conn.execute(f"PRAGMA {pragma}").fetchone()[0])
            return info
        finally:
            conn.close()

    def cache_sizes(self) -> dict[str, int]:
        """The file and its write-ahead log; the buffer pool is one connection's page cache,
        which tpsbench leaves at SQLite's default. Read without connecting: a connection
        opens the write-ahead log, and a run refused after this must leave no file behind."""
        if self.path == ":memory:" or not os.path.exists(self.path):
            return {}
        size = sum(os.path.getsize(p) for p in (self.path, f"{self.path}-wal") if os.path.exists(p))
        return {"database_bytes": size, "buffer_pool_bytes": DEFAULT_CACHE_KIB * 1024}

    def read_counters(self, conn: Any) -> dict[str, float]:
        """None: SQLite keeps its page cache hits and misses per connection, and Python's
        sqlite3 module does not expose them (no sqlite3_db_status); its I/O is the host's,
        which a device observer sees. ``total_changes`` would count the observer's own
        connection only."""
        return {}

    def placeholder(self) -> str:
        return "?"

    def table_names(self) -> set[str]:
        """No tables where there is no file yet, without creating one: check, drop, size
        and runs never leave an empty database behind."""
        if self.path != ":memory:" and not os.path.exists(self.path):
            return set()
        return super().table_names()

    def storage_path(self) -> str | None:
        return None if self.path == ":memory:" else os.path.dirname(os.path.abspath(self.path))

    def set_autocommit(self, conn: Any) -> None:
        if conn.in_transaction:
            conn.rollback()
        conn.isolation_level = None


TARGET = SqliteTarget
