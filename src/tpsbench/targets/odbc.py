"""Any database through ODBC: ``<backend>+pyodbc://`` URLs.

Connections and the bulk path use pyodbc directly: the bulk path is one parameterised
INSERT run by ``executemany`` with ``fast_executemany`` (pyodbc binds whole parameter
arrays instead of one row per round trip), inside the caller's transaction. How much
that gains is the ODBC driver's business: measured here on 10,000 order_line rows,
MariaDB Connector/ODBC 3.1 managed about 3,000 rows/s and psqlODBC 13,000-20,000,
against 30,000 (LOAD DATA) and 78,000 (COPY) for the native targets. So ODBC is the
way to SQL Server, and a way to compare client stacks; MariaDB and PostgreSQL load
faster through their own targets.

What a backend *is* (schema dialect, error codes, settings, how to create a database)
does not depend on the driver, so each backend gets a flavour: :class:`OdbcTarget`
itself turns into the subclass registered for the URL's backend (MySQL/MariaDB and
PostgreSQL here, SQL Server in mssql.py), and an unknown backend stays generic.

URL forms, as SQLAlchemy's pyodbc dialects read them:
- ``mysql+pyodbc://user:pw@host:port/db?driver=MariaDB+Unicode``; without ``driver``
  the first installed ODBC driver that fits the backend is used; other query keys
  are passed into the connection string as they are;
- ``mssql+pyodbc://user:pw@mydsn`` or ``?dsn=mydsn``: a DSN from odbc.ini;
- ``mssql+pyodbc:///?odbc_connect=DRIVER%3D...``: a whole connection string.

The SQLAlchemy engine (DDL, reflection) is the backend's own pyodbc dialect, with
connections made by this module so that every URL form works. SQLAlchemy has no
PostgreSQL dialect for pyodbc, so for ``postgresql+pyodbc://`` the engine goes through
psycopg to the same host, port, user and database: DDL and catalogue reads are not
what a benchmark measures, and the server's catalogue is the same whichever client
reads it. A DSN-only PostgreSQL URL therefore has no engine (a one-line error says so).
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pyodbc
import sqlalchemy as sa
from sqlalchemy.engine import URL

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target
from tpsbench.targets import postgresql as pg
from tpsbench.targets.mysql.target import MysqlFamily

#: about how much memory one ``executemany`` parameter array may take
PARAM_ARRAY_BYTES = 16 << 20
#: query keys that are not connection-string attributes
URL_ONLY_KEYS = frozenset({"driver", "dsn", "odbc_connect"})
_ATTRIBUTE = re.compile(r"\s*([^=;]+?)\s*=\s*(\{(?:[^}]|\}\})*\}|[^;]*)\s*(?:;|$)")


class OdbcTarget(Target):
    """The generic ODBC target; becomes the flavour registered for the URL's backend."""

    backends = ("odbc",)
    driver = "pyodbc"
    routine_answers = False
    driver_modules = ("pyodbc",)
    #: SQLSTATEs every ODBC driver uses: serialization failure, and the 08 class
    #: (connection failure, link failure, connection gone or rejected)
    retryable_sqlstates: ClassVar[frozenset[str]] = frozenset({"40001"})
    disconnect_sqlstates: ClassVar[frozenset[str]] = frozenset({"08S01", "08001", "08003", "08004", "08007"})
    #: backends this class serves when reached through a pyodbc URL
    odbc_backends: ClassVar[tuple[str, ...]] = ()
    #: installed ODBC driver names that suit the backend, best first (regular expressions)
    odbc_driver_patterns: ClassVar[tuple[str, ...]] = ()
    #: the driver name to try when none of the patterns is installed
    odbc_driver_fallback: ClassVar[str] = ""
    default_port: ClassVar[int | None] = None
    _flavours: ClassVar[dict[str, type[OdbcTarget]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for backend in cls.__dict__.get("odbc_backends", ()):  # declared here, not inherited
            OdbcTarget._flavours[backend] = cls

    def __new__(cls, url: URL) -> OdbcTarget:  # returns the backend's subclass on purpose
        flavour = cls
        if cls is OdbcTarget:
            from tpsbench.targets import target_classes

            target_classes()  # imports every target module, so that all flavours are registered
            flavour = OdbcTarget._flavours.get(url.get_backend_name(), OdbcTarget)
        return super().__new__(flavour)

    def __init__(self, url: URL) -> None:
        super().__init__(url)
        if not self.dialect:
            self.dialect = self.url.get_backend_name()  # type: ignore[misc]  # the class's default dialect, taken from the URL on the instance

    # -- connections ----------------------------------------------------------------
    @property
    def database(self) -> str:
        return self.url.database or self.attributes().get("DATABASE", "")

    def attributes(self, database: str | None = None) -> dict[str, str]:
        """The connection string as attributes, upper-case keys, values unquoted.

        ``database`` replaces the URL's database ("" leaves the attribute out), for the
        server-level connection that creates a database.
        """
        url, query = self.url, {k: v for k, v in self.url.query.items() if isinstance(v, str)}
        if "odbc_connect" in query:
            attrs = parse_connection_string(query["odbc_connect"])
        elif "dsn" in query or (url.host and not url.database and not url.port and "driver" not in query):
            attrs = {"DSN": query.get("dsn") or url.host or ""}
        else:
            attrs = {"DRIVER": query.get("driver") or self.odbc_driver_name()}
            attrs.update(self.server_attributes(url.host or "127.0.0.1", url.port or self.default_port))
            if url.database:
                attrs["DATABASE"] = url.database
        if url.username:
            attrs["UID"] = url.username
        if url.password is not None and url.username:
            attrs["PWD"] = url.password
        attrs.update({k.upper(): v for k, v in query.items() if k not in URL_ONLY_KEYS})
        if database is not None:
            attrs.pop("DATABASE", None)
            if database:
                attrs["DATABASE"] = database
        return attrs

    def server_attributes(self, host: str, port: int | None) -> dict[str, str]:
        """Where the server is, in the attribute names most ODBC drivers use."""
        return {"SERVER": host, **({"PORT": str(port)} if port else {})}

    def odbc_driver_name(self) -> str:
        """The installed ODBC driver that suits the backend (see ``odbcinst -q -d``)."""
        installed = pyodbc.drivers()
        for pattern in self.odbc_driver_patterns:
            matches = sorted((name for name in installed if re.search(pattern, name)), reverse=True)
            if matches:
                return matches[0]
        if self.odbc_driver_fallback:
            return self.odbc_driver_fallback
        raise TpsbenchError(f"{self.describe()}: name the ODBC driver with ?driver=...; installed: {installed}")

    def connection_string(self, database: str | None = None) -> str:
        return ";".join(f"{key}={quote_value(value)}" for key, value in self.attributes(database).items()) + ";"

    def _connect(self, database: str | None = None) -> Any:
        return pyodbc.connect(self.connection_string(database), autocommit=False, timeout=10)

    @cached_property
    def engine(self) -> sa.Engine:
        """The backend's SQLAlchemy pyodbc dialect on connections made by :meth:`_connect`."""
        return sa.create_engine(self.url, creator=self._connect, poolclass=sa.NullPool)

    # -- loading --------------------------------------------------------------------
    def bulk_load(self, conn: Any, batch: Batch) -> None:
        """``fast_executemany`` of the rows, with parameter types and sizes given up front.

        Without ``setinputsizes`` pyodbc asks the driver for each parameter's size, and
        MariaDB's driver answers with a maximum so large for strings that the parameter
        array for a thousand rows no longer fits in memory. The batch's own dtypes give
        tight sizes; rows go in slices so the array stays around PARAM_ARRAY_BYTES.
        """
        if not len(batch):
            return
        marks = ",".join("?" * len(batch.columns))
        sql = f"INSERT INTO {batch.table} ({','.join(batch.names)}) VALUES ({marks})"
        sizes = [input_size(values) for values in batch.columns.values()]
        step = max(1, PARAM_ARRAY_BYTES // sum(max(size, 8) * 2 + 16 for _, size, _ in sizes))
        rows = batch.to_rows("datetime")
        cur = conn.cursor()
        try:
            cur.fast_executemany = True
            cur.setinputsizes(sizes)
            for start in range(0, len(rows), step):
                cur.executemany(sql, rows[start:start + step])
        finally:
            cur.close()

    def placeholder(self) -> str:
        return "?"


class MysqlOdbcTarget(MysqlFamily, OdbcTarget):
    """MySQL and MariaDB through Connector/ODBC: MySQL knowledge from mysql.py."""

    odbc_backends = ("mysql", "mariadb")
    odbc_driver_patterns = (r"^MariaDB.*Unicode", r"^MariaDB", r"^MySQL.*Unicode", r"^MySQL")
    odbc_driver_fallback = "MariaDB Unicode"
    default_port = 3306


class PostgresOdbcTarget(OdbcTarget):
    """PostgreSQL through psqlODBC; the engine uses psycopg (see the module docstring)."""

    odbc_backends = ("postgresql", "postgres")
    sa_backend = "postgresql"
    dialect = "postgresql"
    odbc_driver_patterns = (r"^PostgreSQL Unicode", r"^PostgreSQL")
    odbc_driver_fallback = "PostgreSQL Unicode"
    default_port = 5432
    sql = pg.PostgresTarget.sql
    # psqlODBC passes the server's SQLSTATEs through; its native numbers mean nothing.
    retryable_sqlstates = OdbcTarget.retryable_sqlstates | pg.RETRYABLE_SQLSTATES
    disconnect_sqlstates = OdbcTarget.disconnect_sqlstates | pg.DISCONNECT_SQLSTATES

    @cached_property
    def engine(self) -> sa.Engine:
        attrs = self.attributes()
        if "SERVER" not in attrs:
            raise TpsbenchError(f"{self.describe()}: a DSN-only postgresql+pyodbc URL has no SQLAlchemy engine; "
                                "give host, port and database in the URL")
        url = URL.create("postgresql+psycopg", username=attrs.get("UID"), password=attrs.get("PWD"),
                         host=attrs["SERVER"], port=int(attrs.get("PORT", 5432)), database=attrs.get("DATABASE"))
        return sa.create_engine(url, poolclass=sa.NullPool)

    def ensure_database(self) -> None:
        if not self.database:
            return
        with self.translate_errors(f"creating database {self.database}"):
            conn = self._connect(database="postgres")
            try:
                conn.autocommit = True  # CREATE DATABASE refuses to run in a transaction
                cur = conn.cursor()
                if not cur.execute("SELECT 1 FROM pg_database WHERE datname = ?", self.database).fetchone():
                    cur.execute('CREATE DATABASE "' + self.database.replace('"', '""') + '"')
            finally:
                conn.close()

    def after_load(self, conn: Any, tables: list[str]) -> None:
        cur = conn.cursor()
        for table in tables:
            cur.execute(f"ANALYZE {table}")
        conn.commit()

    def server_info(self) -> dict[str, str]:
        names = ", ".join(f"'{name}'" for name in ("server_version", *pg.KEY_SETTINGS))
        rows = self.fetch_all(f"SELECT name, setting, unit FROM pg_settings WHERE name IN ({names})",
                              "reading server settings")
        info = {name: f"{setting}{' ' + unit if unit else ''}" for name, setting, unit in rows}
        info["version"] = info.pop("server_version", "")
        return info

    def connection_limit(self) -> int | None:
        """Free connection slots, as the psycopg target counts them."""
        rows = self.fetch_all(
            "SELECT (SELECT setting::int FROM pg_settings WHERE name = 'max_connections')"
            " - (SELECT setting::int FROM pg_settings WHERE name = 'superuser_reserved_connections')"
            " - (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend')",
            "reading max_connections",
        )
        return int(rows[0][0])

    def connection_limit_hint(self) -> str:
        return "raise it with ALTER SYSTEM SET max_connections = N and restart PostgreSQL"


def input_size(values: np.ndarray) -> tuple[int, int, int]:
    """(SQL type, column size, decimal digits) of a batch column, for ``setinputsizes``.

    Money arrives as doubles already rounded to the column's scale; the server's
    conversion to DECIMAL rounds them back to the exact decimal.
    """
    kind = values.dtype.kind
    if kind == "S":  # bytes of UTF-8: never fewer than its characters
        return (pyodbc.SQL_WVARCHAR, max(values.dtype.itemsize, 1), 0)
    if kind == "M":
        return (pyodbc.SQL_TYPE_TIMESTAMP, 19, 0)
    if kind == "f":
        return (pyodbc.SQL_DOUBLE, 0, 0)
    return (pyodbc.SQL_BIGINT, 0, 0)


def parse_connection_string(text: str) -> dict[str, str]:
    """``KEY=value;KEY={va;lue}`` as a dict with upper-case keys and unbraced values."""
    attrs = {}
    for key, value in _ATTRIBUTE.findall(text):
        if value.startswith("{") and value.endswith("}"):
            value = value[1:-1].replace("}}", "}")
        attrs[key.strip().upper()] = value
    return attrs


def quote_value(value: str) -> str:
    """A connection-string value, braced when it holds characters ODBC would split on."""
    if not re.search(r"[;{}=\s]", value):
        return value
    return "{" + value.replace("}", "}}") + "}"


TARGET = OdbcTarget
