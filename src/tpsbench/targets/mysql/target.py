"""MySQL and MariaDB, through mysqlclient (C) where installed, else PyMySQL.

Driver: mysqlclient costs a fifth of PyMySQL's client CPU per statement
(targets/mysql/mysqlclient.py), but it needs libmariadb-dev to build, so it is the
optional extra ``fast`` and PyMySQL is the fallback that always installs. The URL can
force either: ``mysql+pymysql://`` or ``mysql+mysqldb://``; a bare ``mysql://`` (or
``mariadb://``) takes the fastest one installed.

Bulk path: LOAD DATA LOCAL INFILE of the batch's TSV, written to a temporary file in
/dev/shm (memory, so the file costs no disk I/O). Measured against large multi-row INSERTs
(bench/experiments/results/mysql_bulk_paths.txt): with both drivers LOAD DATA loads
more rows per second for less client CPU. Multi-row INSERT stays as the fallback for servers that
refuse LOCAL (MySQL 8 ships with ``local_infile=OFF``).

TLS: PyMySQL connections are plain unless the URL names an ``ssl*`` option. PyMySQL 1.2
tries TLS whenever nobody says no, and builds each connection a context from the
system's CA store first, even where the server offers no TLS: client CPU enough per
connection that thousands of users ramping up starve one another's logins past the
server's connect_timeout (docs/performance.md). Plain is also what PyMySQL before 1.2 and
mysqlclient on MariaDB Connector/C 3.3 connect with, so the drivers measure the same wire.

:class:`MysqlFamily` holds what does not depend on the driver (error numbers, settings,
DDL), so the ODBC target reuses it for ``mysql+pyodbc://`` URLs.
"""

from __future__ import annotations

import importlib
import os
import time
from typing import Any, ClassVar

from sqlalchemy.engine import URL

from tpsbench.core.batch import Batch
from tpsbench.core.cursor import CountingCursor
from tpsbench.core.errors import TpsbenchError, error_codes
from tpsbench.core.sql import SqlDialect
from tpsbench.targets import server
from tpsbench.targets.mysql import libmariadb
from tpsbench.targets.mysql.insert import insert_rows, load_data_local
from tpsbench.targets.mysql.mysqlclient import MysqlclientCountingCursor, MysqlclientCursor
from tpsbench.targets.mysql.prepared import PreparedCountingCursor, PreparedCursor
from tpsbench.targets.mysql.sessions import MysqlSessions

#: lock wait timeout, deadlock, table definition changed, record changed since last
#: read (MariaDB snapshot isolation), too many concurrent transactions, NOWAIT lock
RETRYABLE_CODES = frozenset({1205, 1213, 1412, 1020, 1637, 3572})
#: server shutdown, aborted connection, network read/write errors, connection killed
#: (MariaDB), can't connect (socket, TCP), server gone away, lost connection (twice),
#: disconnected for inactivity (MySQL 8), and MariaDB Connector/C's (libmariadb, under
#: mysqlclient and the ODBC driver) own network read and write errors
DISCONNECT_CODES = frozenset({
    1053, 1152, 1158, 1159, 1160, 1161, 1927, 2002, 2003, 2006, 2013, 2055, 4031, 5013, 5014,
})
#: the server or client refuses LOAD DATA LOCAL (MySQL 5.7, MySQL client, MySQL 8,
#: MariaDB 10.6+): use multi-row INSERTs instead
LOCAL_INFILE_REFUSED = frozenset({1148, 2068, 3948, 4166})
#: settings recorded with every run, because they shape OLTP performance; both names of
#: the isolation level are asked for (MariaDB before 11.1 knows only tx_isolation)
KEY_SETTINGS = (
    "version", "version_comment", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit",
    "sync_binlog", "log_bin", "innodb_flush_method", "innodb_log_file_size", "innodb_redo_log_capacity",
    "innodb_io_capacity", "innodb_doublewrite", "max_connections", "transaction_isolation",
    "tx_isolation", "datadir", "open_files_limit", "thread_handling",
)
#: files a server holds beside its tables' and connections' (logs, sockets, pipes): the
#: margin left free under open_files_limit
FILES_BESIDE = 24
#: connections from which a compiled copy of the routines in each is worth a note
MANY_CONNECTIONS = 1000
#: drivers by the name used in URLs, with the module that provides each
DRIVER_MODULES = {"mysqldb": "MySQLdb", "pymysql": "pymysql"}
#: the SHOW GLOBAL STATUS variables read_counters reads (MariaDB 10 and MySQL 5.7/8 have all)
STATUS_VARIABLES = (
    "com_commit", "com_rollback", "innodb_buffer_pool_read_requests", "innodb_buffer_pool_reads",
    "innodb_data_reads", "innodb_data_read", "innodb_pages_written", "innodb_dblwr_pages_written",
    "innodb_dblwr_writes", "innodb_log_writes", "innodb_os_log_written", "innodb_page_size",
    "uptime_since_flush_status",
)


class MysqlFamily(MysqlSessions):
    """MySQL/MariaDB knowledge that holds whatever the driver: codes, settings, DDL.

    Subclasses provide ``_connect(database)``, opening a DB-API connection to
    ``database``: the URL's when None, none when "" (to create the URL's).
    """

    dialect: ClassVar[str] = "mysql"
    sql: ClassVar[SqlDialect] = SqlDialect(
        "mysql", row_lock=" FOR UPDATE", returning="", update_join="join", concat="concat", int_param="?",
        auto_id="zero", call="CALL {name}({args})", routines_end_transactions=True)
    retryable_codes: ClassVar[frozenset[int]] = RETRYABLE_CODES
    disconnect_codes: ClassVar[frozenset[int]] = DISCONNECT_CODES

    def ensure_database(self) -> None:
        """CREATE DATABASE IF NOT EXISTS, from a connection that names no database."""
        if not self.database:
            return
        with self.translate_errors(f"creating database {self.database}"):
            conn = self._connect(database="")
            try:
                cur = conn.cursor()
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {quote_name(self.database)} CHARACTER SET utf8mb4")
                cur.close()
            finally:
                conn.close()

    def after_load(self, conn: Any, tables: list[str]) -> None:
        """ANALYZE TABLE, so that the first runs do not plan with empty statistics."""
        if tables:
            cur = conn.cursor()
            cur.execute("ANALYZE TABLE " + ", ".join(tables))
            cur.fetchall()
            cur.close()
        conn.commit()

    def server_info(self) -> dict[str, str]:
        names = ", ".join(f"'{name}'" for name in KEY_SETTINGS)
        rows = self.fetch_all(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})", "reading server settings")
        info = {str(name): _text(value) for name, value in rows}
        isolation = info.pop("tx_isolation", None)
        info.setdefault("transaction_isolation", isolation or "")
        return info

    def read_counters(self, conn: Any) -> dict[str, float]:
        """SHOW GLOBAL STATUS, one statement on any driver: the whole server's counters.

        ``commits``/``rollbacks``: COMMIT and ROLLBACK statements (Com_commit,
        Com_rollback, those in procedures too) on every database of the server; a
        statement in autocommit mode commits without one and is not counted.
        ``cache_misses``: pages InnoDB read into its buffer pool (Innodb_buffer_pool_reads);
        ``cache_hits``: the page requests it served from there (read requests less those).
        ``reads``/``read_kB``: InnoDB's read calls and their size (Innodb_data_reads/_read).
        ``writes``: data pages written, doublewrite batches and redo log writes;
        ``write_kB``: the data and doublewrite pages' size and the redo log's bytes
        (Innodb_os_log_written, also a counter of its own). Counted from these rather
        than Innodb_data_writes/_written because whether those include the redo log
        depends on the version (MariaDB 10.11's do not; MySQL 5's did).
        """
        cur = conn.cursor()
        try:
            cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({', '.join(map(repr, STATUS_VARIABLES))})")
            status = {_text(name).lower(): float(_text(value)) for name, value in cur.fetchall()}
        finally:
            cur.close()
        pages_written = status["innodb_pages_written"]
        return {
            "commits": status["com_commit"], "rollbacks": status["com_rollback"],
            "cache_hits": status["innodb_buffer_pool_read_requests"] - status["innodb_buffer_pool_reads"],
            "cache_misses": status["innodb_buffer_pool_reads"],
            "reads": status["innodb_data_reads"], "read_kB": status["innodb_data_read"] / 1024,
            "writes": pages_written + status["innodb_dblwr_writes"] + status["innodb_log_writes"],
            "write_kB": ((pages_written + status["innodb_dblwr_pages_written"]) * status["innodb_page_size"]
                         + status["innodb_os_log_written"]) / 1024,
            "innodb_os_log_written": status["innodb_os_log_written"],
            # whole seconds, on our clock: "to within a second"
            "counting_since": time.time() - status["uptime_since_flush_status"],
        }

    def cache_sizes(self) -> dict[str, int]:
        """The schema's tables and indexes (information_schema.TABLES), and InnoDB's buffer pool."""
        ((size, pool),) = self.fetch_all(
            "SELECT (SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.TABLES"
            " WHERE table_schema = DATABASE()), @@innodb_buffer_pool_size", "reading sizes")
        return {"database_bytes": int(size), "buffer_pool_bytes": int(pool)}

    def restart_server(self) -> None:
        """SHUTDOWN, the same server started again as it was, and a wait until it answers."""
        server.restart_mysql(self)

    def connection_limit(self) -> int | None:
        """Connections still free: max_connections less the clients connected now, or
        fewer where the server's open files bind first (each connection holds one, beside
        the tables' and InnoDB's; past open_files_limit a connection is refused).

        Our own connection is counted back in, since it closes before the run opens its own.
        """
        return min(self._connection_room()) + 1

    def _connection_room(self) -> tuple[int, int]:
        """(room under max_connections, room under open_files_limit), our connection counted.
        One session and no transaction: a run's statement counts (Com_*) see one SELECT only."""
        with self.session("reading max_connections") as conn:
            cur = conn.cursor()
            cur.execute("SELECT @@GLOBAL.max_connections, @@GLOBAL.open_files_limit")
            limit, files = cur.fetchone()
            cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN "
                        "('Threads_connected', 'Open_files', 'Innodb_num_open_files')")
            used = {_text(k).lower(): int(v) for k, v in cur.fetchall()}
            cur.close()
        connected = used.get("threads_connected", 0)
        held = used.get("open_files", 0) + used.get("innodb_num_open_files", 0) + FILES_BESIDE
        return int(limit) - connected, int(files) - held - connected

    def connection_limit_hint(self) -> str:
        connections, files = self._connection_room()
        if files < connections:
            return ("each connection holds one of the server's open files: raise open_files_limit in my.cnf's "
                    "[mysqld] (and LimitNOFILE in its systemd unit) and restart it")
        return "raise it with SET GLOBAL max_connections = N (and max_connections in my.cnf to keep it)"

    def routine_cache_note(self, connections: int) -> str | None:
        """MySQL and MariaDB compile a routine into each connection that calls it and keep
        it there (up to stored_program_cache routines): with thousands of connections,
        gigabytes of the server's memory (docs/getting-started.md)."""
        if connections < MANY_CONNECTIONS:
            return None
        ((cache,),) = self.fetch_all("SELECT @@GLOBAL.stored_program_cache", "reading stored_program_cache")
        if not int(cache):
            return None
        return (f"note: each of the {connections:,} connections will keep its own compiled copy of the procedures it"
                f" calls (stored_program_cache = {cache}), gigabytes of the server's memory in all;"
                " SET GLOBAL stored_program_cache = 0 frees them after each call")

    def data_paths(self) -> list[str]:
        """The data directory, and InnoDB's data and redo log folders where set apart
        (relative ones are under the data directory)."""
        main = self.storage_path()
        if main is None:
            return []
        paths = [main]
        for name in ("innodb_data_home_dir", "innodb_log_group_home_dir"):
            try:
                (value,) = self.fetch_all(f"SELECT @@{name}", f"reading {name}")[0]
            except TpsbenchError:  # not this server's variable (MySQL 8.0.30 renamed the log's)
                continue
            folder = _text(value) if value else ""
            if folder:
                paths.append(os.path.normpath(os.path.join(main, folder)))
        return list(dict.fromkeys(os.path.normpath(p) for p in paths))

    def storage_path(self) -> str | None:
        """The data directory, where the server is this host."""
        if not self.is_local:
            return None
        try:  # no database named: the URL's may not exist yet
            with self.translate_errors("reading datadir"):
                conn = self._connect(database="")
                try:
                    cur = conn.cursor()
                    cur.execute("SELECT @@datadir")
                    return _text(cur.fetchone()[0])
                finally:
                    conn.close()
        except TpsbenchError:  # no answer is no check, never a failed build
            return None


class MysqlTarget(MysqlFamily):
    backends = ("mysql", "mariadb")
    driver = "mysqldb"
    driver_modules = ("MySQLdb", "pymysql")

    def __init__(self, url: URL) -> None:
        self.driver = choose_driver(url)  # type: ignore[misc]  # the class's default driver, chosen per URL on the instance
        self.dbapi: Any = importlib.import_module(DRIVER_MODULES[self.driver])
        super().__init__(url)
        #: False once the server refused LOAD DATA LOCAL: later batches go straight to INSERT
        self.local_infile = True

    def _connect(self, database: str | None = None) -> Any:
        url = self.url
        params: dict[str, Any] = {
            "host": url.host or "127.0.0.1",
            "port": url.port or 3306,
            "user": url.username or "root",
            "password": url.password or "",
            "charset": "utf8mb4",
            "connect_timeout": 10,
            "local_infile": True,
            "autocommit": False,
        }
        name = url.database if database is None else database
        if name:
            params["database"] = name
        if self.driver == "pymysql" and not any(key.startswith("ssl") for key in url.query):
            params["ssl_disabled"] = True  # plain unless the URL asks for TLS (module docstring)
        # URL options are text; the drivers want numbers for flags and timeouts (local_infile=0)
        params.update({k: int(v) if v.isdigit() else v for k, v in url.query.items() if isinstance(v, str)})
        try:
            return self.dbapi.connect(**params)
        except TypeError as exc:
            raise TpsbenchError(f"{self.describe()}: unsupported connection option in the URL: {exc}") from exc

    # -- loading --------------------------------------------------------------------
    def bulk_load(self, conn: Any, batch: Batch) -> None:
        if not len(batch):
            return
        if self.local_infile:
            try:
                load_data_local(conn, batch)
                return
            except self.dbapi.Error as exc:
                if error_codes(exc)[1] not in LOCAL_INFILE_REFUSED:
                    raise
                self.local_infile = False
        insert_rows(conn, batch)

    # -- running --------------------------------------------------------------------
    def is_disconnect(self, exc: BaseException) -> bool:
        # PyMySQL raises InterfaceError(0, "") on a connection it has already closed.
        return super().is_disconnect(exc) or isinstance(exc, self.dbapi.InterfaceError)

    def set_autocommit(self, conn: Any) -> None:
        conn.autocommit(True)  # a method on both drivers

    def client_paths(self, waits: bool = False) -> tuple[str, ...]:
        """Prepared statements and text on mysqlclient (prepared where libmariadb's
        statement calls can run on its connections), none on PyMySQL. Prepared first: it
        costs the server less per statement at the same client CPU
        (bench/experiments/results/mysql_prepared.txt). Text first for users that
        ``waits``: a prepared statement keeps its metadata and buffers in the client's
        memory for the connection's life, which thousands of sleeping users multiply
        (bench/results/fifteen_thousand.txt), while what it saves the server counts only
        at a throughput they never reach."""
        if self.driver != "mysqldb":
            return ()
        if libmariadb.unavailable():
            return ("text",)
        return ("text", "prepared") if waits else ("prepared", "text")

    def client_path_missing(self, choice: str) -> str:
        if self.driver != "mysqldb":
            return "PyMySQL has only its DB-API cursor: install mysqlclient, pip install 'tpsbench[fast]'"
        return libmariadb.unavailable() or ""

    def fast_cursor(self, conn: Any, path: str = "fast") -> MysqlclientCursor | PreparedCursor | None:
        """A cursor for a virtual user's hot path on mysqlclient's C connection: prepared
        statements or text (``path``, "fast" for the default); None on PyMySQL."""
        path = self.client_path(path)
        if path == "dbapi":
            return None
        return PreparedCursor(conn) if path == "prepared" else MysqlclientCursor(conn)

    def counting_cursor(self, conn: Any, path: str = "fast") -> CountingCursor:
        path = self.client_path(path)
        if path == "prepared":
            return PreparedCountingCursor(conn)
        if path == "text":
            return MysqlclientCountingCursor(conn)
        return super().counting_cursor(conn)


def choose_driver(url: URL) -> str:
    """The DB-API driver for ``url``: the one it names, else mysqlclient if importable."""
    named = url.drivername.partition("+")[2]
    if named:
        if named not in DRIVER_MODULES:
            known = ", ".join(f"+{name}" for name in DRIVER_MODULES)
            raise TpsbenchError(f"unsupported MySQL driver {named!r} in {url.drivername}://; use {known} or +pyodbc")
        if named == "mysqldb" and not _importable("MySQLdb"):
            raise TpsbenchError("mysqlclient is not installed: pip install 'tpsbench[fast]', or use mysql+pymysql://")
        return named
    return "mysqldb" if _importable("MySQLdb") else "pymysql"


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def quote_name(name: str) -> str:
    """An identifier in MySQL's backquotes."""
    return "`" + name.replace("`", "``") + "`"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


TARGET = MysqlTarget
