"""PostgreSQL through psycopg 3.

Bulk path: COPY ... FROM STDIN in text format, fed with the batch's TSV bytes.
Errors worth a retry are told apart by SQLSTATE, which psycopg exposes on every
server error, rather than by message text. Virtual users' statements go through
libpq below psycopg (targets/libpq.py).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from tpsbench.core.batch import Batch
from tpsbench.core.cursor import CountingCursor
from tpsbench.core.sql import SqlDialect
from tpsbench.core.target import Target
from tpsbench.targets.libpq import LibpqCountingCursor, LibpqCursor

#: serialization_failure, deadlock_detected, lock_not_available
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "55P03"})
#: admin_shutdown (pg_terminate_backend), crash_shutdown, cannot_connect_now
DISCONNECT_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
#: settings recorded with every run, because they shape OLTP performance
KEY_SETTINGS = (
    "shared_buffers", "effective_cache_size", "work_mem", "max_connections",
    "synchronous_commit", "fsync", "full_page_writes", "wal_level", "wal_buffers",
    "checkpoint_timeout", "max_wal_size", "random_page_cost", "effective_io_concurrency",
    "default_transaction_isolation", "data_directory",
)


class PostgresTarget(Target):
    backends = ("postgresql", "postgres")
    sa_backend = "postgresql"
    dialect = "postgresql"
    driver = "psycopg"
    driver_modules = ("psycopg",)
    sql = SqlDialect("postgresql", row_lock=" FOR UPDATE", call="SELECT * FROM {name}({args})",
                     call_arg="CAST(? AS {type})", int_list="{%s}")

    def _connect_params(self, database: str | None = None) -> dict[str, Any]:
        url = self.url
        params: dict[str, Any] = {
            "host": url.host or "127.0.0.1",
            "port": url.port or 5432,
            "user": url.username or "postgres",
            "dbname": database or url.database or url.username or "postgres",
            "connect_timeout": 10,
        }
        if url.password:
            params["password"] = url.password
        params.update({k: v for k, v in url.query.items() if isinstance(v, str)})
        return params

    def _connect(self) -> Any:
        return psycopg.connect(**self._connect_params())

    def ensure_database(self) -> None:
        if not self.url.database:
            return
        with self.translate_errors("connect"):
            with psycopg.connect(**self._connect_params("postgres"), autocommit=True) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.url.database,)).fetchone()
                if not exists:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.url.database)))

    def bulk_load(self, conn: Any, batch: Batch) -> None:
        with conn.cursor() as cur, cur.copy(f"COPY {batch.table} ({','.join(batch.names)}) FROM STDIN") as copy:
            copy.write(batch.to_tsv())

    def after_load(self, conn: Any, tables: list[str]) -> None:
        with conn.cursor() as cur:
            for table in tables:
                cur.execute(f"VACUUM (ANALYZE) {table}") if conn.autocommit else cur.execute(f"ANALYZE {table}")
        conn.commit()

    retryable_sqlstates = RETRYABLE_SQLSTATES

    def is_disconnect(self, exc: BaseException) -> bool:
        """A terminated backend, a connection-class SQLSTATE (08xxx), or a client-side
        failure with no SQLSTATE at all (the socket closed under psycopg). Lock and
        deadlock errors are OperationalErrors too, but carry their own SQLSTATE."""
        state = getattr(exc, "sqlstate", None)
        if state is not None:
            return state in DISCONNECT_SQLSTATES or state.startswith("08")
        return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))

    def server_info(self) -> dict[str, str]:
        with self.translate_errors("reading server settings"), psycopg.connect(**self._connect_params()) as conn:
            info = {"version": conn.execute("SHOW server_version").fetchone()[0]}
            rows = conn.execute("SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)", (list(KEY_SETTINGS),))
            for name, setting, unit in rows:
                info[name] = f"{setting}{' ' + unit if unit else ''}"
            return info

    def connection_limit(self) -> int | None:
        with self.translate_errors("reading max_connections"), psycopg.connect(**self._connect_params()) as conn:
            row = conn.execute(
                "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int"
                " - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int"
            ).fetchone()
            return int(row[0])

    def connection_limit_hint(self) -> str:
        return "raise it with ALTER SYSTEM SET max_connections = N and restart PostgreSQL"

    def storage_path(self) -> str | None:
        """The data directory, where the server is this host and lets us read the setting."""
        if not self.is_local:
            return None
        try:  # the maintenance database: the URL's may not exist yet
            with psycopg.connect(**self._connect_params("postgres")) as conn:
                return str(conn.execute("SHOW data_directory").fetchone()[0])  # type: ignore[index]
        except psycopg.Error:
            return None

    def set_autocommit(self, conn: Any) -> None:
        """psycopg refuses the switch inside a transaction: end it first."""
        conn.rollback()
        conn.autocommit = True

    def fast_cursor(self, conn: Any) -> LibpqCursor:
        """A cursor for a virtual user's hot path: libpq prepared statements (see LibpqCursor)."""
        return LibpqCursor(conn)

    def counting_cursor(self, conn: Any, fast: bool = True) -> CountingCursor:
        return LibpqCountingCursor(conn) if fast else super().counting_cursor(conn)




TARGET = PostgresTarget
