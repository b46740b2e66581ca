"""The servers the benchmarks talk to: URL options, their defaults, and the drivers' spellings.

Every benchmark that talks to PostgreSQL or MariaDB takes the server's URL from an option
(``--pg-url`` / ``--mysql-url``, or ``--url`` where it talks to one server) whose default
comes from the environment:

- ``TPSBENCH_BENCH_PG``: default ``postgresql://postgres@127.0.0.1:5432``
- ``TPSBENCH_BENCH_MYSQL``: default ``mysql://root@127.0.0.1:3306``

An environment URL names the server (user, password, host, port, query); each benchmark
puts its own database into it (engine_tpcc's ``tpsb_eng_tpcc``, vs_sysbench's
``tpsb_sb_bench`` ...), since several of them drop and rebuild theirs. A URL given as an
option is taken as it is, database included.

Only the standard library here: bench/engine_tpcc.py imports this module under older
revisions' packages too (bench/engine_tpcc_revs.py).
"""

from __future__ import annotations

import argparse
import os
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

#: server kind -> (environment variable, its default)
ENVIRONMENT = {
    "postgresql": ("TPSBENCH_BENCH_PG", "postgresql://postgres@127.0.0.1:5432"),
    "mariadb": ("TPSBENCH_BENCH_MYSQL", "mysql://root@127.0.0.1:3306"),
}
#: server kind -> its option
OPTIONS = {"postgresql": "--pg-url", "mariadb": "--mysql-url"}
#: the servers' Unix sockets on this machine (Debian's paths)
SOCKETS = {"postgresql": "/var/run/postgresql", "mariadb": "/run/mysqld/mysqld.sock"}


def with_database(url: str, database: str) -> str:
    """``url`` with its database (the path) replaced by ``database`` ("" for none)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}" if database else ""))


def database(url: str) -> str:
    """The database a URL names ("" for none)."""
    return unquote(urlsplit(url).path.lstrip("/"))


def default_url(server: str, db: str) -> str:
    """The server's URL from the environment (or its default), with database ``db``."""
    variable, fallback = ENVIRONMENT[server]
    return with_database(os.environ.get(variable) or fallback, db)


def add_url_options(parser: argparse.ArgumentParser, db: str, servers: tuple[str, ...] = tuple(OPTIONS),
                    single: bool = False, note: str = "") -> None:
    """Add ``--pg-url`` / ``--mysql-url`` (``--url`` with ``single``) defaulting to the
    environment's server with database ``db`` ("": the server alone, ``note`` says whose
    database the benchmark puts in)."""
    for server in servers:
        variable = ENVIRONMENT[server][0]
        what = f"database (default %(default)s: ${variable}'s server, database {db})" if db else \
            f"server (default %(default)s: ${variable}'s)"
        parser.add_argument("--url" if single else OPTIONS[server], dest="url" if single else f"{server}_url",
                            default=default_url(server, db), metavar="URL", help=f"the {server} {what}{note}")


def urls(args: argparse.Namespace) -> dict[str, str]:
    """Server kind -> URL, of the options :func:`add_url_options` added."""
    return {server: getattr(args, f"{server}_url") for server in OPTIONS if hasattr(args, f"{server}_url")}


def socket_url(server: str, url: str) -> str:
    """The same database and user through the server's Unix socket (:data:`SOCKETS`)."""
    parts = urlsplit(url)
    user = parts.netloc.rpartition("@")[0]
    if server == "postgresql":
        return urlunsplit(parts._replace(netloc=f"{user}@", query=f"host={SOCKETS[server]}"))
    return urlunsplit(parts._replace(netloc=f"{user}@localhost", query=f"unix_socket={SOCKETS[server]}"))


def pg_conninfo(url: str, db: str | None = None) -> str:
    """A libpq URI for psycopg (SQLAlchemy's ``+driver`` dropped), on database ``db`` if given."""
    parts = urlsplit(url if db is None else with_database(url, db))
    return urlunsplit(parts._replace(scheme="postgresql"))


def mysql_args(url: str, db: str | None = None) -> dict[str, Any]:
    """Keyword arguments of MySQLdb.connect / pymysql.connect for ``url``; database ``db``
    if given ("" for none)."""
    parts = urlsplit(url)
    args: dict[str, Any] = {"host": parts.hostname or "localhost", "user": unquote(parts.username or "root"),
                            "password": unquote(parts.password or "")}
    if parts.port:
        args["port"] = parts.port
    name = database(url) if db is None else db
    if name:
        args["database"] = name
    socket = parse_qs(parts.query).get("unix_socket")
    if socket:
        args["unix_socket"] = socket[0]
    return args
