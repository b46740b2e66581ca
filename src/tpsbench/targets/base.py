"""What every database target provides.

A target is one database product family behind one module. The framework asks it for
connections, its bulk-load path, which errors are worth a retry and what the server
is; workloads never see driver details. SQLAlchemy serves URLs, engines, DDL and
reflection; the hot paths (bulk load, virtual users) use the DB-API connection
directly, because every layer above it costs client CPU that, on a small machine, is
taken from the database (see ../shared/reference/driver-costs.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cached_property
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import URL

from tpsbench.api.batch import Batch
from tpsbench.errors import TpsbenchError, first_line


class Target:
    """Base class of database targets; subclasses set the class attributes."""

    #: SQLAlchemy backend names this target serves, e.g. ("postgresql",).
    backends: ClassVar[tuple[str, ...]] = ()
    #: Stem of the DDL file under schemas/<workload>/, e.g. "postgresql".
    dialect: ClassVar[str] = ""
    #: SQLAlchemy driver used for engines, e.g. "psycopg".
    driver: ClassVar[str] = ""
    #: How many processes may load at once; None means as many as asked.
    max_load_workers: ClassVar[int | None] = None
    #: SQLAlchemy backend to use when the URL's own is an alias (postgres -> postgresql).
    sa_backend: ClassVar[str | None] = None

    def __init__(self, url: URL) -> None:
        backend = self.sa_backend or url.drivername.partition("+")[0]
        self.url = url.set(drivername=f"{backend}+{self.driver}")

    # -- identity ---------------------------------------------------------------
    def describe(self) -> str:
        """The URL with any password hidden: safe to print and to store."""
        return self.url.render_as_string(hide_password=True)

    @property
    def database(self) -> str:
        return self.url.database or ""

    # -- connections --------------------------------------------------------------
    @cached_property
    def engine(self) -> sa.Engine:
        """An engine for DDL, reflection and checks (no pool: processes fork)."""
        return sa.create_engine(self.url, poolclass=sa.NullPool)

    def connect(self) -> Any:
        """A raw DB-API connection, not in autocommit mode."""
        with self.translate_errors("connect"):
            return self._connect()

    def _connect(self) -> Any:
        raise NotImplementedError

    def ensure_database(self) -> None:
        """Create the database named in the URL if the server does not have it yet."""

    @contextlib.contextmanager
    def translate_errors(self, doing: str) -> Iterator[None]:
        """Turn driver and SQLAlchemy errors into one-line :class:`TpsbenchError`."""
        try:
            yield
        except TpsbenchError:
            raise
        except sa.exc.DBAPIError as exc:
            raise TpsbenchError(f"{self.describe()}: {doing} failed: {first_line(exc.orig)}") from exc
        except sa.exc.SQLAlchemyError as exc:
            raise TpsbenchError(f"{self.describe()}: {doing} failed: {first_line(exc)}") from exc
        except Exception as exc:
            if self.is_driver_error(exc):
                raise TpsbenchError(f"{self.describe()}: {doing} failed: {first_line(exc)}") from exc
            raise

    def is_driver_error(self, exc: BaseException) -> bool:
        """True for exceptions raised by this target's DB-API driver."""
        module = type(exc).__module__ or ""
        return module.split(".")[0] in self.driver_modules

    driver_modules: ClassVar[tuple[str, ...]] = ()

    # -- loading ------------------------------------------------------------------
    def bulk_load(self, conn: Any, batch: Batch) -> None:
        """Insert ``batch`` through this target's fastest honest bulk path.

        The caller commits; a loader commits once per chunk so that a large
        transaction amortises the commit without holding locks for the whole build.
        """
        raise NotImplementedError

    def after_load(self, conn: Any, tables: list[str]) -> None:
        """Refresh planner statistics after a build (ANALYZE and friends)."""

    # -- running ------------------------------------------------------------------
    def is_retryable(self, exc: BaseException) -> bool:
        """Serialization failures, deadlocks and lock timeouts: worth another try."""
        return False

    def is_disconnect(self, exc: BaseException) -> bool:
        """The connection is gone: reconnect with back-off."""
        return False

    def server_info(self) -> dict[str, str]:
        """Server version and the settings that shape OLTP performance, for the results store."""
        return {}

    def connection_limit(self) -> int | None:
        """How many client connections the server accepts in all (None: no limit)."""
        return None

    def connection_limit_hint(self) -> str:
        """How to raise :meth:`connection_limit`, for the error that refuses a run."""
        return ""

    def placeholder(self) -> str:
        """The DB-API parameter marker of this target's driver ("%s" or "?")."""
        return "%s"

    def table_names(self) -> set[str]:
        """Names of the tables in the target database, lower case."""
        with self.translate_errors("reading the catalogue"):
            return {name.lower() for name in sa.inspect(self.engine).get_table_names()}
