"""Every database target, against the real server: bulk path, errors, settings.

Targets: SQLite; PostgreSQL through psycopg and through psqlODBC; MariaDB through
PyMySQL, mysqlclient and MariaDB Connector/ODBC; and SQL Server's target class
driven through MariaDB's ODBC driver, which exercises everything it inherits (the
connection string, pyodbc and the bulk path) on a server that runs here.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import psycopg
import pyodbc
import pytest
import sqlalchemy as sa
from conftest import unavailable
from sqlalchemy.engine import make_url

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError, error_codes, error_message
from tpsbench.core.target import Target
from tpsbench.targets import open_target
from tpsbench.targets.mssql import MssqlTarget
from tpsbench.targets.mysql import target as mysql_module
from tpsbench.targets.mysql.insert import insert_statements
from tpsbench.targets.mysql.target import MysqlTarget
from tpsbench.targets.odbc import OdbcTarget, parse_connection_string
from tpsbench.targets.rows import LazyRows

SERVER_KINDS = ["postgresql", "postgresql+pyodbc", "mysql+pymysql", "mysql+mysqldb", "mysql+pyodbc"]
ODBC_DRIVERS = {"mysql": "MariaDB Unicode", "postgresql": "PostgreSQL Unicode"}


def server_url(kind: str, request: pytest.FixtureRequest, require: Callable[..., Any]) -> str:
    """A scratch database's URL, spelled for ``kind`` ("<backend>+<driver>")."""
    backend, _, driver = kind.partition("+")
    url = make_url(request.getfixturevalue("pg_url" if backend == "postgresql" else "mysql_url"))
    if driver == "mysqldb" and not importlib.util.find_spec("MySQLdb"):
        require("mysqlclient (pip install mysqlclient)", "not installed")
    if driver == "pyodbc":
        if ODBC_DRIVERS[backend] not in pyodbc.drivers():
            require(f"ODBC driver {ODBC_DRIVERS[backend]!r}", f"installed: {pyodbc.drivers()}")
        url = url.set(query={"driver": ODBC_DRIVERS[backend]})
    return url.set(drivername=f"{backend}+{driver or 'psycopg'}").render_as_string(hide_password=False)


@pytest.fixture(params=SERVER_KINDS)
def server_target(request: pytest.FixtureRequest, require: Callable[..., Any]) -> Target:
    target = open_target(server_url(request.param, request, require))
    assert target.url.drivername.split("+")[1] == (request.param.partition("+")[2] or "psycopg")
    return target


@pytest.fixture(params=["sqlite", *SERVER_KINDS])
def any_target(request: pytest.FixtureRequest, require: Callable[..., Any]) -> Target:
    if request.param == "sqlite":
        return open_target(request.getfixturevalue("sqlite_url"))
    return open_target(server_url(request.param, request, require))


# -- the bulk path ---------------------------------------------------------------------
SAMPLE = sa.Table(
    "sample", sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("amount", sa.Numeric(12, 2), nullable=False),
    sa.Column("rate", sa.Numeric(4, 4), nullable=False),
    sa.Column("name", sa.String(20), nullable=False),
    sa.Column("code", sa.CHAR(2), nullable=False),
    sa.Column("stamp", sa.DateTime, nullable=True),
    sa.Column("count", sa.Integer, nullable=True),
    sa.Column("note", sa.String(30), nullable=True),
)
EXPECTED = [
    (1, Decimal("0.00"), Decimal("0.0001"), "a", "AB", None, None, None),
    (2, Decimal("1234.56"), Decimal("0.5000"), "Zoë O'Brien", "xy", dt.datetime(2024, 2, 29, 23, 59, 59), 7, "n1"),
    (3, Decimal("-10.00"), Decimal("0.1234"), "twenty characters!!!", "  ", dt.datetime(1999, 1, 1), None, "x" * 30),
    (4, Decimal("9999999999.99"), Decimal("0.9999"), "", "zz", None, -2147483648, None),
    (5, Decimal("0.01"), Decimal("0.0000"), "last", "Q1", dt.datetime(2038, 1, 19, 3, 14, 8), 2147483647, ""),
]


def sample_batch() -> Batch:
    """EXPECTED as the loaders make batches: numpy columns, floats for money, masks for NULL."""
    cols = list(zip(*EXPECTED))

    def strings(values: tuple[str | None, ...]) -> np.ndarray:
        return np.array([(v or "").encode() for v in values])

    columns = {
        "id": np.array(cols[0], dtype=np.int64),
        "amount": np.array([float(v) for v in cols[1]]),
        "rate": np.array([float(v) for v in cols[2]]),
        "name": strings(cols[3]),
        "code": strings(cols[4]),
        "stamp": np.array([v or dt.datetime(2000, 1, 1) for v in cols[5]], dtype="datetime64[s]"),
        "count": np.array([v or 0 for v in cols[6]], dtype=np.int64),
        "note": strings(cols[7]),
    }
    nulls = {name: np.array([v is None for v in cols[i]]) for i, name in enumerate(columns) if None in cols[i]}
    return Batch("sample", columns, nulls)


def read_sample(engine: sa.Engine) -> list[tuple]:
    with engine.connect() as conn:
        rows = conn.execute(sa.select(SAMPLE).order_by(SAMPLE.c.id)).all()
    # CHAR(n) comes back blank-padded from some servers and trimmed from others
    return [(*row[:4], row[4].rstrip(), *row[5:]) for row in rows]


def expected_sample() -> list[tuple]:
    return [(*row[:4], row[4].rstrip(), *row[5:]) for row in EXPECTED]


def test_bulk_load_round_trip(any_target: Target) -> None:
    target = any_target
    target.ensure_database()
    SAMPLE.create(target.engine)
    conn = target.connect()
    try:
        batch = sample_batch()
        target.bulk_load(conn, batch)
        target.bulk_load(conn, Batch("sample", {k: v[:0] for k, v in batch.columns.items()}))  # no rows: no error
        conn.commit()
        cur = conn.cursor()
        cur.execute(f"SELECT name FROM sample WHERE id = {target.placeholder()}", (2,))
        assert cur.fetchone()[0] == "Zoë O'Brien"
        cur.close()
        conn.rollback()
    finally:
        conn.close()
    assert read_sample(target.engine) == expected_sample()
    target.engine.dispose()


def test_bulk_load_thousands_of_wide_rows(any_target: Target) -> None:
    """Enough rows and width to need slicing (ODBC parameter arrays) and several statements."""
    target, n = any_target, 5000
    target.ensure_database()
    wide = sa.Table("wide", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
                    sa.Column("amount", sa.Numeric(12, 2), nullable=False), sa.Column("data", sa.String(500)))
    wide.create(target.engine)
    ids = np.arange(1, n + 1)
    data = np.array([(b"%05d" % i) * 100 for i in range(n)])
    batch = Batch("wide", {"id": ids, "amount": np.round(ids * 1.01, 2), "data": data}, {"data": ids % 7 == 0})
    conn = target.connect()
    try:
        target.bulk_load(conn, batch)
        conn.commit()
    finally:
        conn.close()
    with target.engine.connect() as conn:
        count, total, nulls, longest = conn.execute(sa.select(
            sa.func.count(), sa.func.sum(wide.c.amount), sa.func.count() - sa.func.count(wide.c.data),
            sa.func.max(sa.func.length(wide.c.data)))).one()
    assert (count, Decimal(total).quantize(Decimal("0.01")), nulls, longest) == (
        n, sum(Decimal(str(round(i * 1.01, 2))) for i in range(1, n + 1)), n // 7, 500)
    target.engine.dispose()


def test_mssql_target_inherited_paths_on_mariadb_odbc(mysql_url: str, require: Callable[..., Any]) -> None:
    """SQL Server's class: ODBC connection string, pyodbc connection and bulk path, for real."""
    if "MariaDB Unicode" not in pyodbc.drivers():
        require("ODBC driver 'MariaDB Unicode'", "not installed")
    mariadb = open_target(mysql_url)
    SAMPLE.create(mariadb.engine)
    url = make_url(mysql_url)
    raw = (f"DRIVER={{MariaDB Unicode}};SERVER={url.host};PORT={url.port or 3306};DATABASE={url.database};"
           f"UID={url.username}")
    target = open_target(sa.engine.URL.create("mssql+pyodbc", query={"odbc_connect": raw}).render_as_string())
    assert type(target) is MssqlTarget and target.dialect == "mssql" and target.database == url.database
    assert target.placeholder() == "?"
    conn = target.connect()
    try:
        target.bulk_load(conn, sample_batch())
        conn.commit()
    finally:
        conn.close()
    assert read_sample(mariadb.engine) == expected_sample()
    mariadb.engine.dispose()


@pytest.mark.parametrize("kind", ["mysql+pymysql", "mysql+mysqldb"])
def test_refused_load_data_falls_back_to_multirow_insert(kind: str, request: pytest.FixtureRequest,
                                                         require: Callable[..., Any]) -> None:
    """With LOCAL refused (here by the client, as MySQL 8 servers do by default) rows still arrive."""
    url = make_url(server_url(kind, request, require))
    target = open_target(url.update_query_dict({"local_infile": "0"}).render_as_string(hide_password=False))
    assert isinstance(target, MysqlTarget)
    SAMPLE.create(target.engine)
    conn = target.connect()
    try:
        target.bulk_load(conn, sample_batch())
        assert target.local_infile is False
        conn.commit()
    finally:
        conn.close()
    assert read_sample(target.engine) == expected_sample()
    target.engine.dispose()


def test_multirow_insert_statements_split_and_escape() -> None:
    batch = sample_batch()
    statements = list(insert_statements(batch, statement_bytes=200))
    assert len(statements) > 1
    head = b"INSERT INTO sample (id,amount,rate,name,code,stamp,count,note) VALUES ("
    assert all(s.startswith(head) for s in statements)
    text = b"".join(statements).decode()
    assert "'Zoë O''Brien'" in text
    assert text.count("NULL") == sum(int(mask.sum()) for mask in batch.nulls.values())


def test_libpq_parameters_round_trip(pg_url: str) -> None:
    """The fast cursor's parameters (joined, encoded and split in one go) come back as sent:
    NULLs anywhere and several of them, empty and non-ASCII text, decimals. Text with a NUL
    byte is refused, as psycopg's cursor refuses it (libpq would cut the value there)."""
    target = open_target(pg_url)
    conn = target.connect()
    try:
        cur = target.fast_cursor(conn)
        sql = "SELECT %s::int, %s::text, %s::text, %s::numeric, %s::int, %s::text, %s::text"
        for params in [(1, None, "", Decimal("12.50"), None, "Zoë", None), (None, None, None, None, None, None, None),
                       (-7, "x,y", "None", Decimal("-0.01"), 0, "", "{1,2}")]:
            cur.execute(sql, params)
            assert cur.fetchone() == params
        for params in [(None,), ("None",), ("",)]:  # one parameter takes a path of its own
            cur.execute("SELECT %s::text", params)
            assert cur.fetchone() == params
        with pytest.raises(psycopg.DataError):
            cur.execute("SELECT %s::text", ("a\0b",))
    finally:
        conn.close()


@pytest.mark.parametrize("kind", ["postgresql", "mysql+mysqldb"])
def test_fast_cursor_rows_convert_when_read_and_keep_their_own_result(
        kind: str, request: pytest.FixtureRequest, require: Callable[..., Any]) -> None:
    """A fast cursor's rows are converted on first use only (LazyRows: a result nobody
    reads costs no conversion), counted without converting, and rows kept past the
    next run of the same statement still hold their own values: on libpq the
    statement's loaders are shared by all its results, so the later result must not
    leak into the earlier rows."""
    target = open_target(server_url(kind, request, require))
    conn = target.connect()
    try:
        # MySQL's text path: its prepared path reads rows whole as it takes them (test_mysql_prepared.py)
        cur = target.fast_cursor(conn, "text" if target.dialect == "mysql" else "fast")
        sql = "SELECT %s + 0, 'a' UNION ALL SELECT %s + 0, 'b'"
        cur.execute(sql, (1, 2))
        kept = cur.fetchall()
        assert isinstance(kept, LazyRows) and len(kept) == 2 and kept._rows is None  # counted, not converted
        cur.execute(sql, (3, 4))
        assert cur.fetchone() == (3, "a") and list(cur.fetchall()) == [(4, "b")] and cur.fetchone() is None
        assert list(kept) == [(1, "a"), (2, "b")] and kept._rows is not None
        cur.execute("SELECT 1 WHERE 1 = 0", ())
        assert len(cur.fetchall()) == 0 and cur.fetchone() is None
    finally:
        conn.close()


def test_mysql_driver_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert open_target("mysql+pymysql://root@h/db").driver == "pymysql"
    assert open_target("mariadb+pymysql://root@h/db").url.drivername == "mariadb+pymysql"
    monkeypatch.setattr(mysql_module, "_importable", lambda module: False)
    assert open_target("mysql://root@h/db").driver == "pymysql"
    with pytest.raises(TpsbenchError, match="mysqlclient is not installed"):
        open_target("mysql+mysqldb://root@h/db")
    monkeypatch.undo()
    if importlib.util.find_spec("MySQLdb"):
        assert open_target("mysql://root@h/db").driver == "mysqldb"


def test_pymysql_connects_plain_unless_the_url_asks_for_tls(request: pytest.FixtureRequest,
                                                            require: Callable[..., Any]) -> None:
    """PyMySQL 1.2 left to itself builds each connection a TLS context from the system's CA
    store, a cost that made thousands of users' logins time out; a URL's ssl option still
    gets PyMySQL's own choice."""
    import pymysql

    url = make_url(server_url("mysql+pymysql", request, require))
    plain = open_target(url.render_as_string(hide_password=False)).connect()
    asked = open_target(url.update_query_dict({"ssl_disabled": "0"}).render_as_string(hide_password=False)).connect()
    own = pymysql.connect(host=url.host, port=url.port or 3306, user=url.username, password=url.password or "")
    try:
        assert plain.ssl is False
        assert asked.ssl == own.ssl
    finally:
        for conn in (plain, asked, own):
            conn.close()


# -- errors reach the user as one line ----------------------------------------------
def assert_one_line(exc: pytest.ExceptionInfo[TpsbenchError], *needles: str) -> None:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    for needle in needles:
        assert needle.lower() in text.lower(), text


@pytest.mark.parametrize("kind", ["mysql+pymysql", "mysql+mysqldb", "mysql+pyodbc"])
def test_wrong_password(kind: str, request: pytest.FixtureRequest, require: Callable[..., Any]) -> None:
    url = make_url(server_url(kind, request, require)).set(password="wrong-password")
    target = open_target(url.render_as_string(hide_password=False))
    with pytest.raises(TpsbenchError) as info:
        target.connect()
    assert_one_line(info, "access denied", "1045")
    assert "wrong-password" not in str(info.value)


@pytest.mark.parametrize("kind", ["postgresql", "postgresql+pyodbc"])
def test_unknown_role(kind: str, request: pytest.FixtureRequest, require: Callable[..., Any]) -> None:
    """The PostgreSQL here trusts any password, so a wrong login is a role that does not exist."""
    url = make_url(server_url(kind, request, require)).set(username="tpsb_no_such_role")
    with pytest.raises(TpsbenchError) as info:
        open_target(url.render_as_string(hide_password=False)).connect()
    assert_one_line(info, "tpsb_no_such_role", "does not exist")


@pytest.mark.parametrize("kind", SERVER_KINDS)
@pytest.mark.parametrize("host, port", [("127.0.0.1", 1), ("nonexistent.invalid", None)])
def test_unreachable_server(kind: str, host: str, port: int | None) -> None:
    backend, _, driver = kind.partition("+")
    if driver == "mysqldb" and not importlib.util.find_spec("MySQLdb"):
        unavailable("mysqlclient", "not installed")
    if driver == "pyodbc" and ODBC_DRIVERS[backend] not in pyodbc.drivers():
        unavailable(f"ODBC driver {ODBC_DRIVERS[backend]!r}", f"installed: {pyodbc.drivers()}")
    query = {"driver": ODBC_DRIVERS[backend]} if driver == "pyodbc" else {}
    url = sa.engine.URL.create(kind, username="root", host=host, port=port, database="tpsb_tgt_x", query=query)
    target = open_target(url.render_as_string())
    for action in (target.connect, target.server_info, target.ensure_database):
        with pytest.raises(TpsbenchError) as info:
            action()
        assert_one_line(info, host)


@pytest.mark.parametrize("url, needle", [
    ("mysql+nosuchdriver://root@127.0.0.1/db", "unsupported mysql driver"),
    ("nosuchdb://user@127.0.0.1/db", "unsupported database"),
    ("mysql+pyodbc://root@127.0.0.1:3306/db?driver=No+Such+Driver", "no such driver"),
    ("postgresql+pyodbc://postgres@127.0.0.1:5432/db?driver=No+Such+Driver", "no such driver"),
])
def test_unknown_driver(url: str, needle: str) -> None:
    with pytest.raises(TpsbenchError) as info:
        open_target(url).connect()
    assert_one_line(info, needle)


def test_error_codes_of_each_driver_shape() -> None:
    odbc = pyodbc.Error("40001", "[40001] [ma-3.1.15]Deadlock found when trying to get lock (1213) (SQLExecDirectW)")
    assert error_codes(odbc) == ("40001", 1213)
    assert error_message(odbc) == "[40001] [ma-3.1.15]Deadlock found when trying to get lock (1213)"
    assert error_codes(Exception(2006, "MySQL server has gone away")) == (None, 2006)
    assert error_message(Exception(2006, "MySQL server has gone away")) == "MySQL server has gone away (2006)"
    assert error_codes(ValueError("plain")) == (None, None)
    mssql = MssqlTarget(make_url("mssql+pyodbc://sa@db.example/tpcc"))
    def said(state: str, text: str) -> pyodbc.Error:
        return pyodbc.Error(state, f"[{state}] [Microsoft]{text} (SQLExecute)")

    assert mssql.is_retryable(said("40001", "Transaction was deadlocked (1205)"))
    assert mssql.is_retryable(said("HY000", "Lock request time out period exceeded. (1222)"))
    assert mssql.is_disconnect(said("08S01", "TCP Provider: Error code 0x68 (104)"))
    assert not mssql.is_retryable(said("23000", "Violation of PRIMARY KEY (2627)"))


# -- retryable errors, provoked for real --------------------------------------------
def execute(conn: Any, sql: str) -> None:
    cur = conn.cursor()
    cur.execute(sql)
    cur.close()


def lock_table(target: Target) -> tuple[Any, Any]:
    """Two connections and a two-row table, with connection ``a`` holding row 1's lock."""
    with target.engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE locks (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)"))
        conn.execute(sa.text("INSERT INTO locks VALUES (1, 0), (2, 0)"))
    a, b = target.connect(), target.connect()
    fast = "SET deadlock_timeout = '100ms'" if target.dialect == "postgresql" else "SET innodb_lock_wait_timeout = 5"
    for conn in (a, b):
        execute(conn, fast)
    execute(a, "UPDATE locks SET v = v + 1 WHERE id = 1")
    return a, b


def assert_not_disconnect(target: Target, exc: BaseException) -> None:
    """A lock conflict must not read as a lost connection (callers would reconnect)."""
    assert not target.is_disconnect(exc), exc


def test_lock_wait_timeout_is_retryable(server_target: Target) -> None:
    a, b = lock_table(server_target)
    try:
        execute(b, "SET lock_timeout = '300ms'" if server_target.dialect == "postgresql"
                else "SET innodb_lock_wait_timeout = 1")
        with pytest.raises(Exception) as info:
            execute(b, "UPDATE locks SET v = v + 1 WHERE id = 1")
        assert server_target.is_retryable(info.value), info.value
        assert_not_disconnect(server_target, info.value)
    finally:
        a.close(), b.close()
    server_target.engine.dispose()


def test_deadlock_is_retryable(server_target: Target) -> None:
    a, b = lock_table(server_target)
    errors: list[BaseException] = []

    def update(conn: Any, row: int) -> None:
        try:
            execute(conn, f"UPDATE locks SET v = v + 1 WHERE id = {row}")
        except Exception as exc:  # noqa: BLE001 - the deadlock victim, whatever its driver; the other goes on
            errors.append(exc)
            conn.rollback()

    try:
        execute(b, "UPDATE locks SET v = v + 1 WHERE id = 2")
        waiter = threading.Thread(target=update, args=(a, 2))
        waiter.start()
        time.sleep(0.5)  # let ``a`` wait for row 2 before ``b`` closes the cycle
        update(b, 1)
        waiter.join(timeout=30)
        assert not waiter.is_alive()
        assert len(errors) == 1, errors
        assert server_target.is_retryable(errors[0]), errors[0]
        assert_not_disconnect(server_target, errors[0])
    finally:
        a.close(), b.close()
    server_target.engine.dispose()


def test_killed_connection_is_a_disconnect(server_target: Target) -> None:
    victim = server_target.connect()
    pg = server_target.dialect == "postgresql"
    cur = victim.cursor()
    cur.execute("SELECT pg_backend_pid()" if pg else "SELECT CONNECTION_ID()")
    thread = int(cur.fetchone()[0])
    with server_target.session("killing a connection") as admin:
        execute(admin, f"SELECT pg_terminate_backend({thread})" if pg else f"KILL {thread}")
    time.sleep(0.2)
    with pytest.raises(Exception) as info:
        cur.execute("SELECT 1")
        cur.fetchall()
    assert server_target.is_disconnect(info.value), info.value
    assert not server_target.is_retryable(info.value)


# -- what the server is --------------------------------------------------------------
KEY_SETTINGS = {
    "mysql": ["innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "sync_binlog", "innodb_flush_method",
              "innodb_log_file_size", "max_connections", "transaction_isolation", "innodb_io_capacity", "datadir"],
    "postgresql": ["shared_buffers", "synchronous_commit", "max_connections", "data_directory"],
}


def test_server_info_and_connection_limit(server_target: Target) -> None:
    info = server_target.server_info()
    assert info["version"][:2].isdigit(), info
    for name in KEY_SETTINGS[server_target.dialect]:
        assert info.get(name), (name, info)
    limit = server_target.connection_limit()
    assert isinstance(limit, int) and 0 < limit <= int(info["max_connections"])
    assert "max_connections" in server_target.connection_limit_hint()


def test_ensure_database_creates_it_once(server_target: Target) -> None:
    url = server_target.url.set(database=server_target.database + "_new")
    target = open_target(url.render_as_string(hide_password=False))
    try:
        target.ensure_database()
        target.ensure_database()  # already there: no error
        assert target.table_names() == set()
    finally:
        target.engine.dispose()
        with server_target.session("dropping") as admin:
            if server_target.dialect == "postgresql":
                admin.rollback()
                admin.autocommit = True
                execute(admin, f'DROP DATABASE "{target.database}" WITH (FORCE)')
            else:
                execute(admin, f"DROP DATABASE `{target.database}`")


# -- URL handling of the ODBC targets ------------------------------------------------
def test_odbc_urls_become_connection_strings() -> None:
    mysql = open_target("mariadb+pyodbc://u:p%3Bw@h:3307/db?driver=MariaDB+Unicode&OPTION=3")
    assert isinstance(mysql, OdbcTarget) and mysql.dialect == "mysql"
    assert parse_connection_string(mysql.connection_string()) == {
        "DRIVER": "MariaDB Unicode", "SERVER": "h", "PORT": "3307", "DATABASE": "db", "UID": "u", "PWD": "p;w",
        "OPTION": "3"}
    assert "DATABASE" not in mysql.connection_string(database="")
    pg = open_target("postgresql+pyodbc://u@h/db?driver=PostgreSQL+Unicode")
    assert pg.dialect == "postgresql" and pg.placeholder() == "?"
    assert pg.engine.url.drivername == "postgresql+psycopg" and pg.engine.url.database == "db"
    mssql = open_target("mssql+pyodbc://sa:pw@host:1433/tpcc?driver=ODBC+Driver+18+for+SQL+Server")
    assert parse_connection_string(mssql.connection_string())["SERVER"] == "host,1433"
    assert parse_connection_string(open_target("mssql+pyodbc://sa:pw@mydsn").connection_string())["DSN"] == "mydsn"
    generic = open_target("oracle+pyodbc://u:pw@h:1521/db?driver=Oracle")
    assert type(generic) is OdbcTarget and generic.dialect == "oracle"
