"""PostgreSQL through psycopg 3, directly or through PgBouncer.

Bulk path: COPY ... FROM STDIN in text format, fed with the batch's TSV bytes.
Errors worth a retry are told apart by SQLSTATE, which psycopg exposes on every
server error, rather than by message text. Virtual users' statements go through
libpq below psycopg (targets/libpq.py).

PgBouncer is named in the URL (``?pool_mode=transaction``, its own setting's name and
value), not detected: through it a connection reports the server's version and
parameters unchanged, and only its admin console, which few users may open, says what
it is. In transaction and statement pooling a named prepared statement does not outlive
its transaction (before PgBouncer 1.21), so users then send each statement as libpq's
unnamed one (parse, bind and execute in one message) and ``--client prepared`` is refused; PostgreSQL's max_connections
then bounds PgBouncer's server connections, not the users, whose bound is max_client_conn.
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.engine import URL

from tpsbench.core.batch import Batch
from tpsbench.core.cursor import CountingCursor
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.sql import SqlDialect
from tpsbench.core.target import OBSERVER_APPLICATION, WAIT_KINDS, SessionWait, Target
from tpsbench.targets import server
from tpsbench.targets.libpq import LibpqCursor, UnnamedCursor
from tpsbench.targets.libpq_counting import LibpqCountingCursor

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
#: server_version_num of the first releases with pg_stat_io, with pg_stat_checkpointer,
#: and with pg_stat_io in bytes and WAL in it (its WAL writes leave pg_stat_wal then)
PG16, PG17, PG18 = 160000, 170000, 180000
BLOCK_KB = "current_setting('block_size')::numeric / 1024"
CHECKPOINTS_BEFORE_17 = (
    "(SELECT checkpoints_timed + checkpoints_req AS checkpoints,"
    " buffers_checkpoint + buffers_clean + buffers_backend AS blocks_written, stats_reset FROM pg_stat_bgwriter)")
CHECKPOINTS_SINCE_17 = "(SELECT num_timed + num_requested AS checkpoints, stats_reset FROM pg_stat_checkpointer)"
#: pg_stat_io summed over its rows (backend types, objects, contexts); a NULL cell is an
#: operation that cannot happen there. Extends (blocks added to a table) are writes too.
IO = ("(SELECT sum(reads) AS reads, sum({read_bytes}) AS read_bytes,"
      " sum(coalesce(writes, 0) + coalesce(extends, 0)) AS writes, sum({write_bytes}) AS write_bytes,"
      " max(stats_reset) AS stats_reset FROM pg_stat_io)")
IO_BYTES_BEFORE_18 = {"read_bytes": "reads * op_bytes",
                      "write_bytes": "(coalesce(writes, 0) + coalesce(extends, 0)) * op_bytes"}
#: pg_stat_activity's wait_event_type -> what db_waits calls it (NULL: on CPU); others are "other"
WAIT_TYPES = {None: "cpu", "Lock": "lock", "LWLock": "lwlock", "IO": "io", "IPC": "ipc", "Client": "client"}
#: this database's client sessions executing a statement, but the asking one and the observers'
ACTIVE_SESSIONS = ("SELECT pid, wait_event_type, wait_event FROM pg_stat_activity"
                   " WHERE datname = current_database() AND state = 'active' AND backend_type = 'client backend'"
                   " AND pid <> pg_backend_pid() AND application_name IS DISTINCT FROM %s")
#: the table each lock-waiting session waits for: its ungranted lock's relation, else the
#: relation of the tuple lock it holds while it waits for the row's transaction to end
LOCKED_TABLES = ("SELECT DISTINCT ON (pid) pid, relation::regclass::text FROM pg_locks"
                 " WHERE pid = ANY(%s) AND relation IS NOT NULL AND (NOT granted OR locktype = 'tuple')"
                 " ORDER BY pid, granted")
IO_BYTES_SINCE_18 = {"read_bytes": "read_bytes", "write_bytes": "coalesce(write_bytes, 0) + coalesce(extend_bytes, 0)"}
#: the URL parameter that says a PgBouncer is in between, with its pool_mode setting
POOL_MODE = "pool_mode"
#: PgBouncer's pool modes, and those that hand a client's next transaction to any server connection
POOL_MODES, SHARED_MODES = ("session", "transaction", "statement"), ("transaction", "statement")
#: PgBouncer's admin console: a database of that name on its port
POOLER_CONSOLE = "pgbouncer"


class PostgresTarget(Target):
    backends = ("postgresql", "postgres")
    sa_backend = "postgresql"
    dialect = "postgresql"
    driver = "psycopg"
    driver_modules = ("psycopg",)
    sql = SqlDialect("postgresql", row_lock=" FOR UPDATE", call="SELECT * FROM {name}({args})",
                     call_arg="CAST(? AS {type})", int_list="{%s}")

    def __init__(self, url: URL) -> None:
        super().__init__(url)
        mode = self.url.query.get(POOL_MODE)
        if mode is not None and mode not in POOL_MODES:
            raise TpsbenchError(f"{POOL_MODE}={mode} in the URL: PgBouncer's pool_mode is one of "
                                f"{', '.join(POOL_MODES)}")
        #: PgBouncer's pool_mode where the URL says one is in between, else None
        self.pool_mode = None if mode is None else str(mode)

    @property
    def shares_connections(self) -> bool:
        """Through a PgBouncer that gives a user's next transaction any server connection."""
        return self.pool_mode in SHARED_MODES

    @cached_property
    def engine(self) -> sa.Engine:
        """The base's, on the URL less pool_mode: tpsbench's, which libpq would refuse."""
        return sa.create_engine(self.url.difference_update_query([POOL_MODE]), poolclass=sa.NullPool,
                                connect_args=self.unprepared())

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
        params.update({k: v for k, v in url.query.items() if isinstance(v, str) and k != POOL_MODE})
        return params | self.unprepared()

    def unprepared(self) -> dict[str, Any]:
        """psycopg.connect's argument that keeps it from preparing statements (it would
        after 5 runs of one) where the next transaction may meet another server connection."""
        return {"prepare_threshold": None} if self.shares_connections else {}

    def _connect(self) -> Any:  # type: ignore[override]  # never asked for another database: only the server-level families are
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
            info = {"version": conn.execute("SHOW server_version").fetchone()[0]}  # type: ignore[index]  # SHOW always answers one row
            rows = conn.execute("SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)",
                                (list(KEY_SETTINGS),))
            for name, setting, unit in rows:
                info[name] = f"{setting}{' ' + unit if unit else ''}"
            return info

    def read_counters(self, conn: Any) -> dict[str, float]:
        """pg_stat_database of this database, pg_stat_wal, the checkpoints and the I/O, in
        one statement (:func:`counters_query`), so one transaction of the observer's own
        per call: ``commits`` counts it (pg_stat_database counts every transaction).

        PostgreSQL 15 and later publish a backend's counts when it commits at most once
        a second (an idle one's within 10 s), so a reading over a second or two is late
        by up to a second; over a steady window that washes out. PostgreSQL 14 or later
        (pg_stat_wal): on older servers the statement fails and the observer has no figures.
        """
        # pg_stat_* views are a snapshot per transaction (stats_fetch_consistency): the
        # connection is in autocommit, so each call is a transaction and a fresh look.
        cur = conn.execute(counters_query(conn.info.server_version))
        row = cur.fetchone()
        if row is None:
            return {}
        return {column.name: float(value) for column, value in zip(cur.description, row) if value is not None}

    wait_kinds = WAIT_KINDS
    server_commands = ("postgres", "postmaster")
    default_port = 5432

    def read_waits(self, conn: Any) -> list[SessionWait]:
        """pg_stat_activity's active client backends of this database, by wait event type
        (none: on CPU), leaving out this session and the observers' (by application_name).
        The table of a Lock wait comes from pg_locks, asked only when a session waits on one
        (pg_locks takes the lock manager's partition locks, which a busy server feels)."""
        sessions = conn.execute(ACTIVE_SESSIONS, (OBSERVER_APPLICATION,)).fetchall()
        waiting = [pid for pid, kind, _ in sessions if kind == "Lock"]
        tables = dict(conn.execute(LOCKED_TABLES, (waiting,)).fetchall()) if waiting else {}
        return [SessionWait(WAIT_TYPES.get(kind, "other"), f"{kind}:{event}" if kind else "", tables.get(pid))
                for pid, kind, event in sessions]

    def server_process(self) -> int | None:
        """The checkpointer, a child of the postmaster for as long as the server runs."""
        rows = self.fetch_all("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
                              "finding the server's process")
        return int(rows[0][0]) if rows else None

    def observer_connection(self) -> Any:
        """Named by application_name, which read_waits leaves out."""
        with self.translate_errors("connect"):
            return psycopg.connect(**self._connect_params() | {"application_name": OBSERVER_APPLICATION},
                                   autocommit=True)

    def cache_sizes(self) -> dict[str, int]:
        """pg_database_size of this database, and shared_buffers."""
        with self.translate_errors("reading sizes"), psycopg.connect(**self._connect_params()) as conn:
            size, pool = conn.execute("SELECT pg_database_size(current_database()),"
                                      " pg_size_bytes(current_setting('shared_buffers'))").fetchone()  # type: ignore[misc]  # a SELECT without FROM answers one row
            return {"database_bytes": int(size), "buffer_pool_bytes": int(pool)}

    def restart_server(self) -> None:
        """The cluster of this data directory and port restarted (tpsbench.targets.server),
        then connected to until it answers."""
        with self.translate_errors("restarting the server"), psycopg.connect(**self._connect_params()) as conn:
            folder, port = conn.execute("SELECT current_setting('data_directory'), current_setting('port')"
                                        ).fetchone()  # type: ignore[misc]  # a SELECT without FROM answers one row
        server.restart_postgres(folder, int(port), self.server_pid())
        server.wait_until(self.answers, f"{self.describe()} did not answer after its restart")

    def connection_limit(self) -> int | None:
        """Connections still free: through PgBouncer (a pool_mode in the URL), its max_client_conn
        less its clients, None where its admin console will not tell; else max_connections
        less the reserved and the connected."""
        if self.pool_mode is not None:
            return self.pooler_room()
        with self.translate_errors("reading max_connections"), psycopg.connect(**self._connect_params()) as conn:
            row = conn.execute(
                "SELECT current_setting('max_connections')::int"
                " - current_setting('superuser_reserved_connections')::int"
                " - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int"
            ).fetchone()
            return int(row[0])  # type: ignore[index]  # a SELECT without FROM answers one row

    def pooler_room(self) -> int | None:
        """PgBouncer's max_client_conn less its clients now (but this one, about to leave),
        read on its admin console where this user is in admin_users or stats_users."""
        try:
            with psycopg.connect(**self._connect_params(POOLER_CONSOLE), autocommit=True) as conn:
                most = next(int(row[1]) for row in conn.execute("SHOW CONFIG") if row[0] == "max_client_conn")
                return most - (len(conn.execute("SHOW CLIENTS").fetchall()) - 1)
        except (psycopg.Error, StopIteration, ValueError):
            return None

    def connection_limit_hint(self) -> str:
        if self.pool_mode is not None:
            return "raise max_client_conn in pgbouncer.ini and restart PgBouncer (and its LimitNOFILE to match)"
        return "raise it with ALTER SYSTEM SET max_connections = N and restart PostgreSQL"

    def storage_path(self) -> str | None:
        """The data directory, where the server is this host and lets us read the setting."""
        if not self.is_local:
            return None
        try:  # the maintenance database: the URL's may not exist yet
            with psycopg.connect(**self._connect_params("postgres")) as conn:
                return str(conn.execute("SHOW data_directory").fetchone()[0])  # type: ignore[index]  # SHOW always answers one row
        except psycopg.Error:
            return None

    def data_paths(self) -> list[str]:
        """The data directory (the WAL and the catalogues are there), and the location of
        each tablespace this database uses: its default one and any of its tables' (a
        tablespace per pool is how PostgreSQL spreads databases over devices, and a
        database on one pool must not be read as if it were on the others)."""
        main = self.storage_path()
        if main is None:
            return []
        try:  # the URL's database: it may not exist yet, and then it uses no tablespace
            with psycopg.connect(**self._connect_params()) as conn:
                rows = conn.execute(
                    "SELECT pg_tablespace_location(oid) FROM pg_tablespace WHERE oid = "
                    "(SELECT dattablespace FROM pg_database WHERE datname = current_database()) "
                    "OR oid IN (SELECT reltablespace FROM pg_class WHERE reltablespace <> 0)").fetchall()
        except psycopg.Error:
            rows = []
        return list(dict.fromkeys([main, *(str(r[0]) for r in rows if r[0])]))

    def set_autocommit(self, conn: Any) -> None:
        """psycopg refuses the switch inside a transaction: end it first."""
        conn.rollback()
        conn.autocommit = True

    def client_paths(self, waits: bool = False) -> tuple[str, ...]:
        """libpq's prepared statements; through PgBouncer's transaction pooling, which keeps
        none, each statement with its values in one message, parsed every time (text)."""
        return ("text",) if self.shares_connections else ("prepared",)

    def client_path_missing(self, choice: str) -> str:
        if self.shares_connections:
            return (f"PgBouncer's pool_mode={self.pool_mode} hands a user's next transaction to any server "
                    "connection, where its named prepared statements do not exist before PgBouncer 1.21")
        return "libpq's statements here are prepared ones" if choice == "text" else ""

    def fast_cursor(self, conn: Any, path: str = "fast") -> LibpqCursor | None:
        """A cursor for a virtual user's hot path: libpq prepared statements (see LibpqCursor);
        through transaction pooling, which keeps no prepared statement, libpq's unnamed one."""
        return UnnamedCursor(conn) if self.shares_connections else LibpqCursor(conn)

    def counting_cursor(self, conn: Any, path: str = "fast") -> CountingCursor:
        prepared = path != "dbapi" and not self.shares_connections
        return LibpqCountingCursor(conn) if prepared else super().counting_cursor(conn)


@cache
def counters_query(version: int) -> str:
    """The one SELECT of :meth:`PostgresTarget.read_counters` for ``server_version_num``.

    ``commits``, ``rollbacks``, ``cache_hits``, ``cache_misses`` (blks_hit, blks_read),
    ``tup_*`` and ``temp_bytes`` are this database's (pg_stat_database). ``wal_records``,
    ``wal_bytes`` (WAL generated) and ``checkpoints`` (timed, even those skipped on an
    idle server, and requested) are the server's. ``reads``/``read_kB``: from 16 on
    the server's reads into its buffers (pg_stat_io), before that this database's blocks
    read (blks_read x block_size); either may have come from the OS page cache.
    ``writes``/``write_kB``: blocks written to data files (pg_stat_io from 16 on, before
    that pg_stat_bgwriter's checkpoint, bgwriter and backend writes) plus the WAL: its
    write calls (wal_write) and the WAL generated (wal_bytes), which is less than the
    WAL written where commits rewrite a partly filled WAL page; from 18 on pg_stat_io
    counts the WAL's writes and bytes themselves.
    """
    sources = {"d": "pg_stat_database", "w": "pg_stat_wal",
               "c": CHECKPOINTS_SINCE_17 if version >= PG17 else CHECKPOINTS_BEFORE_17}
    if version >= PG16:
        sources["io"] = IO.format(**(IO_BYTES_SINCE_18 if version >= PG18 else IO_BYTES_BEFORE_18))
        reads, read_kb, writes, write_kb = "io.reads", "io.read_bytes / 1024", "io.writes", "io.write_bytes / 1024"
    else:
        reads, read_kb = "d.blks_read", f"d.blks_read * {BLOCK_KB}"
        writes, write_kb = "c.blocks_written", f"c.blocks_written * {BLOCK_KB}"
    if version < PG18:
        writes, write_kb = f"{writes} + w.wal_write", f"{write_kb} + w.wal_bytes / 1024"
    resets = ", ".join(f"{alias}.stats_reset" for alias in sources)
    return ("SELECT d.xact_commit AS commits, d.xact_rollback AS rollbacks, d.blks_hit AS cache_hits,"
            " d.blks_read AS cache_misses, d.tup_inserted, d.tup_updated, d.tup_deleted, d.temp_bytes,"
            " w.wal_records, w.wal_bytes, c.checkpoints,"
            f' {reads} AS reads, {writes} AS writes, {read_kb} AS "read_kB", {write_kb} AS "write_kB",'
            f" extract(epoch FROM greatest(pg_postmaster_start_time(), {resets})) AS counting_since"
            f" FROM {', '.join(f'{source} {alias}' for alias, source in sources.items())}"
            " WHERE d.datname = current_database()")


TARGET = PostgresTarget
