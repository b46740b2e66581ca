"""SQL Server through Microsoft's ODBC driver (``mssql+pyodbc://`` or ``mssql://``).

Everything that moves data is the ODBC target's (pyodbc, ``fast_executemany``); this
module adds what SQL Server is: its error numbers, its settings, how it counts
connections and creates databases.

The server cannot run on the machines this project is tested on, so the SQL below is
kept in module constants that the tests parse with sqlglot (T-SQL dialect), and the
inherited connection and bulk paths are tested against the ODBC drivers that can run.

Driver 18 encrypts by default and refuses self-signed certificates: for a lab server
add ``?TrustServerCertificate=yes`` (or ``&Encrypt=no``) to the URL, knowingly.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tpsbench.core.sql import SqlDialect
from tpsbench.targets.odbc import OdbcTarget

#: deadlock victim, lock request timeout, snapshot update conflict, and the In-Memory
#: OLTP conflicts (commit dependency, write conflict, repeatable-read and serializable
#: validation failures) that Microsoft documents as "retry the transaction"
RETRYABLE_CODES = frozenset({1205, 1222, 3960, 41301, 41302, 41305, 41325})
#: connection reset or aborted (10053, 10054), timed out (10060), no process at the
#: other end of the pipe (233), network name gone (64), session killed (596)
DISCONNECT_CODES = frozenset({64, 233, 596, 10053, 10054, 10060})
#: instance-wide settings that shape OLTP performance, from sys.configurations
CONFIGURATIONS = (
    "max server memory (MB)", "min server memory (MB)", "max degree of parallelism",
    "cost threshold for parallelism", "user connections", "max worker threads",
    "recovery interval (min)", "optimize for ad hoc workloads",
)
_CONFIG_NAMES = ", ".join("'" + name + "'" for name in CONFIGURATIONS)
#: version, editions, where data lives, the database's durability and isolation
#: options and the instance settings, as (name, value) text rows
SERVER_INFO_SQL = f"""
SELECT N'version', CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(4000))
UNION ALL SELECT N'product_level', CAST(SERVERPROPERTY('ProductLevel') AS NVARCHAR(4000))
UNION ALL SELECT N'edition', CAST(SERVERPROPERTY('Edition') AS NVARCHAR(4000))
UNION ALL SELECT N'version_string', CAST(@@VERSION AS NVARCHAR(4000))
UNION ALL SELECT N'default_data_path', CAST(SERVERPROPERTY('InstanceDefaultDataPath') AS NVARCHAR(4000))
UNION ALL SELECT N'default_log_path', CAST(SERVERPROPERTY('InstanceDefaultLogPath') AS NVARCHAR(4000))
UNION ALL SELECT N'cpu_count', CAST(cpu_count AS NVARCHAR(4000)) FROM sys.dm_os_sys_info
UNION ALL SELECT N'physical_memory_kb', CAST(physical_memory_kb AS NVARCHAR(4000)) FROM sys.dm_os_sys_info
UNION ALL SELECT N'recovery_model', CAST(recovery_model_desc AS NVARCHAR(4000))
    FROM sys.databases WHERE database_id = DB_ID()
UNION ALL SELECT N'read_committed_snapshot', CAST(is_read_committed_snapshot_on AS NVARCHAR(4000))
    FROM sys.databases WHERE database_id = DB_ID()
UNION ALL SELECT N'snapshot_isolation', CAST(snapshot_isolation_state_desc AS NVARCHAR(4000))
    FROM sys.databases WHERE database_id = DB_ID()
UNION ALL SELECT N'delayed_durability', CAST(delayed_durability_desc AS NVARCHAR(4000))
    FROM sys.databases WHERE database_id = DB_ID()
UNION ALL SELECT CAST(name AS NVARCHAR(4000)), CAST(value_in_use AS NVARCHAR(4000))
    FROM sys.configurations WHERE name IN ({_CONFIG_NAMES})
"""
#: free connection slots: the instance's ceiling less the user sessions open now
#: (ours included, which the PostgreSQL target also counts)
CONNECTION_LIMIT_SQL = (
    "SELECT @@MAX_CONNECTIONS - (SELECT COUNT(*) FROM sys.dm_exec_sessions WHERE is_user_process = 1)"
)


class MssqlTarget(OdbcTarget):
    backends = ("mssql",)
    odbc_backends = ("mssql",)
    dialect = "mssql"
    sql = SqlDialect("mssql", table_lock=" WITH (UPDLOCK, ROWLOCK)", returning="output", update_join="from-join",
                     concat="concat", top1="TOP 1 ", limit1="", begin="BEGIN TRANSACTION",
                     commit="COMMIT TRANSACTION", rollback="ROLLBACK TRANSACTION", auto_id="")
    odbc_driver_patterns = (r"^ODBC Driver \d+ for SQL Server$", r"SQL Server")
    odbc_driver_fallback = "ODBC Driver 18 for SQL Server"
    retryable_codes: ClassVar[frozenset[int]] = RETRYABLE_CODES
    disconnect_codes: ClassVar[frozenset[int]] = DISCONNECT_CODES

    def server_attributes(self, host: str, port: int | None) -> dict[str, str]:
        """SQL Server's driver takes the port after a comma in SERVER, and has no PORT.

        No default port: a named instance (``host\\instance``) is found by the browser
        service on a dynamic port, which ",1433" would override.
        """
        return {"SERVER": f"{host},{port}" if port else host}

    def ensure_database(self) -> None:
        if not self.database:
            return
        with self.translate_errors(f"creating database {self.database}"):
            conn = self._connect(database="master")
            try:
                conn.autocommit = True  # CREATE DATABASE refuses to run in a transaction
                conn.cursor().execute(create_database_sql(self.database))
            finally:
                conn.close()

    def after_load(self, conn: Any, tables: list[str]) -> None:
        """UPDATE STATISTICS, so that the first run does not trigger auto-statistics on the loaded tables."""
        cur = conn.cursor()
        for table in tables:
            cur.execute(f"UPDATE STATISTICS {quote_name(table)}")
        conn.commit()

    def server_info(self) -> dict[str, str]:
        rows = self.fetch_all(SERVER_INFO_SQL, "reading server settings")
        return {str(name): "" if value is None else str(value) for name, value in rows}

    def connection_limit(self) -> int | None:
        return int(self.fetch_all(CONNECTION_LIMIT_SQL, "reading @@MAX_CONNECTIONS")[0][0])

    def connection_limit_hint(self) -> str:
        return "raise it with EXEC sp_configure 'user connections', N; RECONFIGURE; then restart SQL Server"


def quote_name(name: str) -> str:
    """An identifier in SQL Server's brackets, as QUOTENAME() would write it."""
    return "[" + name.replace("]", "]]") + "]"


def create_database_sql(database: str) -> str:
    """Create ``database`` unless it exists, in one batch (no GO, no transaction)."""
    literal = "N'" + database.replace("'", "''") + "'"
    return f"IF DB_ID({literal}) IS NULL CREATE DATABASE {quote_name(database)}"


TARGET = MssqlTarget
