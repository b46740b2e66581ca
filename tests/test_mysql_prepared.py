"""MySQL/MariaDB's prepared-statement path (targets/mysql/libmariadb.py, targets/mysql/prepared.py)
on the real MariaDB: the same Python values as the text path, parameters of every type
the workloads bind, a CALL's results in turn, sending without waiting, statements the
server will not prepare going as text, errors sorted as the text path's are, and
``--client`` telling each target's paths apart."""

from __future__ import annotations

import datetime
import importlib.util
import select
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from conftest import unavailable

from tpsbench.core.cursor import READ, WRITE
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target
from tpsbench.targets import open_target
from tpsbench.targets.mysql import libmariadb
from tpsbench.targets.mysql.mysqlclient import MysqlclientCursor
from tpsbench.targets.mysql.prepared import PreparedCountingCursor, PreparedCursor

pytestmark = pytest.mark.mysql

COLUMNS = ("a INT PRIMARY KEY AUTO_INCREMENT, b VARCHAR(500), c DECIMAL(12,2), d DATETIME(6), e DOUBLE,"
           " f BIGINT UNSIGNED, g BLOB, h DATE, i TEXT, j TIME, k TINYINT, l CHAR(3) CHARACTER SET binary")
ROW = ("Zoë O'Brien", Decimal("-12.34"), datetime.datetime(2026, 12, 1, 22, 33, 44, 123456), 1.25, 2**63 + 5,
       b"\x00\x01\xff", datetime.date(2026, 1, 2), "x" * 3000, datetime.timedelta(hours=3, seconds=7), -5, b"ab\x00")


@pytest.fixture
def target(mysql_url: str) -> Target:
    if importlib.util.find_spec("MySQLdb") is None:
        unavailable("mysqlclient (pip install 'tpsbench[fast]')", "not installed")
    why = libmariadb.unavailable()
    if why:
        unavailable("libmariadb's prepared statements", why)
    return open_target(mysql_url.replace("+pymysql", "+mysqldb"))


@pytest.fixture
def conn(target: Target) -> Iterator[Any]:
    conn = target.connect()
    target.set_autocommit(conn)
    cur = MysqlclientCursor(conn)
    cur.execute(f"CREATE TABLE tp ({COLUMNS})")
    cur.execute("CREATE PROCEDURE pp(IN x INT) BEGIN SELECT x, 'a' AS s; SELECT NULL, NULL;"
                " SELECT b, c FROM tp WHERE a = x; END")
    try:
        yield conn
    finally:
        conn.close()


def status(conn: Any, name: str) -> int:
    cur = conn.cursor()
    cur.execute(f"SHOW SESSION STATUS LIKE '{name}'")
    value = int(cur.fetchone()[1])
    cur.close()
    return value


def answered(cur: PreparedCursor, encoded: Any) -> None:
    """Send ``encoded`` without waiting and read its answer as the shared thread does:
    the socket waited on until the cursor has it all."""
    if not cur.send_encoded(encoded):
        while True:
            assert select.select([cur.fileno()], [], [], 5.0)[0], "no answer in 5 s"
            if cur.receive():
                break


def answer(cur: PreparedCursor, encoded: Any) -> list[tuple]:
    """The rows of ``encoded``'s answer (:func:`answered`)."""
    answered(cur, encoded)
    return list(cur.fetchall())


def test_rows_have_the_text_paths_values_and_types(conn: Any) -> None:
    """Every column type of the workloads, NULLs, a text longer than the first buffer and
    an unsigned value past 2**63: what the prepared path reads is what the text path reads."""
    prepared = PreparedCursor(conn)
    markers = ",".join(["%s"] * len(ROW))
    insert = f"INSERT INTO tp (b,c,d,e,f,g,h,i,j,k,l) VALUES ({markers})"
    prepared.execute(insert, ROW)
    assert (prepared.rowcount, prepared.lastrowid) == (1, 1)
    prepared.execute(insert, (None,) * len(ROW))  # every value's type changes: bound again
    assert prepared.lastrowid == 2
    select_all = "SELECT a,b,c,d,e,f,g,h,i,j,k,l FROM tp WHERE a >= %s ORDER BY a"
    text = MysqlclientCursor(conn)
    text.execute(select_all, (0,))
    expected = [tuple(row) for row in text.fetchall()]
    prepared.execute(select_all, (0,))
    got = [tuple(row) for row in prepared.fetchall()]
    assert got == expected
    assert [type(v) for v in got[0]] == [type(v) for v in expected[0]]
    assert got[0][1:] == ROW and got[1][1:] == (None,) * len(ROW)
    kept = prepared.fetchall()
    prepared.execute(select_all, (2,))  # the same statement again: rows kept from before keep their values
    assert [tuple(row) for row in kept] == [] and [row[0] for row in prepared.fetchall()] == [2]
    prepared.execute(select_all, (0,))
    kept = prepared.fetchall()
    prepared.execute(select_all, (2,))
    assert [row[0] for row in kept] == [1, 2]


@pytest.mark.parametrize("value", [0, -1, 2**62, 2**64 - 1, "", "é" * 100, "a" * 70, Decimal("0.01"), 1.5, None,
                                   b"\x00", datetime.date(2026, 12, 1), datetime.datetime(2026, 12, 1, 1, 2, 3)])
def test_a_bound_value_comes_back_as_sent(conn: Any, value: Any) -> None:
    """Dates go as text (the server converts them as it converts a literal), the rest as
    their own type; a text outgrowing its buffer is bound again, as is a change of type."""
    cur = PreparedCursor(conn)
    for v in (value, "a" * 200, value):
        cur.execute("SELECT %s", (v,))
        (got,) = cur.fetchone()
        if isinstance(v, datetime.date):
            assert got == (v.isoformat(" ") if isinstance(v, datetime.datetime) else v.isoformat())
        else:
            assert got == v and type(got) is type(v), (v, got)


def test_a_calls_results_come_in_turn_as_on_the_text_path(conn: Any) -> None:
    MysqlclientCursor(conn).execute("INSERT INTO tp (b, c) VALUES ('one', 1.50)")
    results = {}
    for cur in (MysqlclientCursor(conn), PreparedCursor(conn)):
        cur.execute("CALL pp(%s)", (1,))
        got = [list(cur.fetchall())]
        while cur.next_result_set():
            got.append(list(cur.fetchall()))
        assert not cur.next_result_set()
        results[type(cur)] = got
        cur.execute("CALL pp(%s)", (2,))  # its status left unread: read before the next command
        assert list(cur.fetchall()) == [(2, "a")]
        cur.execute("SELECT 1 + %s", (1,))
        assert list(cur.fetchall()) == [(2,)]
        cur.execute("CALL pp(%s)", (3,))
        cur.commit()  # reads that status first too
    assert results[PreparedCursor] == results[MysqlclientCursor] == [[(1, "a")], [(None, None)],
                                                                      [("one", Decimal("1.50"))], []]


def test_statements_are_prepared_once_per_connection_and_counted_by_kind(conn: Any) -> None:
    cur = PreparedCountingCursor(conn)
    before = status(conn, "Com_stmt_prepare"), status(conn, "Com_stmt_execute")
    kinds = []
    for _ in range(3):
        for sql, params in [("BEGIN", ()), ("INSERT INTO tp (b) VALUES (%s)", ("x",)), ("SELECT b FROM tp", ()),
                            ("UPDATE tp SET b = %s WHERE a = %s", ("y", -1)), ("COMMIT", ())]:
            cur.execute(sql, params)
            kinds.append(cur.kind)
    after = status(conn, "Com_stmt_prepare"), status(conn, "Com_stmt_execute")
    assert (after[0] - before[0], after[1] - before[1]) == (5, 15)
    assert kinds[:5] == [2, WRITE, READ, 2, 2]
    cur.close()


def test_statements_sent_without_waiting_are_answered_in_turn(conn: Any) -> None:
    """libmariadb's non-blocking calls on mysqlclient's connection (the engine's shared
    thread): each answer read whole once its socket is readable, or as it was sent."""
    cur = PreparedCursor(conn)
    counting = PreparedCountingCursor(conn)
    fd = cur.fileno()
    assert fd == counting.fileno() == conn.fileno()
    for n in range(1, 201):
        assert answer(cur, cur.encode("SELECT %s, REPEAT('z', %s)", (n, n * 10))) == [(n, "z" * n * 10)]
    cur.execute("CALL pp(%s)", (7,))  # a blocking call on the non-blocking socket still works
    assert list(cur.fetchall()) == [(7, "a")]
    answered(counting, counting.encode("UPDATE tp SET b = %s WHERE a = %s", ("q", -1)))
    assert counting.kind == 2


def test_a_statement_new_to_the_connection_is_prepared_at_its_send_without_waiting(conn: Any) -> None:
    """Encoding (ahead, on the shared thread) sends nothing; the prepare goes with the
    send, its answer waited for on the socket like any other, then the execute's."""
    cur = PreparedCursor(conn)
    cur.fileno()
    prepared = status(conn, "Com_stmt_prepare")
    first, second = cur.encode("SELECT %s * 2", (21,)), cur.encode("SELECT %s * 2", (5,))
    assert status(conn, "Com_stmt_prepare") == prepared  # nothing sent
    assert answer(cur, first) == [(42,)]
    assert answer(cur, second) == [(10,)]  # encoded before the prepare: prepared by now, not again
    assert status(conn, "Com_stmt_prepare") == prepared + 1  # once
    with pytest.raises(Exception, match="1064"):  # the server's error, as the statement's
        answer(cur, cur.encode("SELEKT %s", (1,)))
    assert answer(cur, cur.encode("SELECT %s * 2", (4,))) == [(8,)]


@pytest.mark.alone  # lowers the server's max_prepared_stmt_count for a moment
def test_a_statement_the_server_will_not_prepare_goes_as_text(conn: Any) -> None:
    """Past max_prepared_stmt_count (300 users preparing sysbench's statements on 10 tables
    pass MariaDB's default) a statement goes as text and still answers."""
    admin = conn.cursor()
    admin.execute("SELECT @@GLOBAL.max_prepared_stmt_count")
    (limit,) = admin.fetchone()
    admin.execute("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'")
    in_use = int(admin.fetchone()[1])
    admin.execute(f"SET GLOBAL max_prepared_stmt_count = {in_use + 1}")
    try:
        cur = PreparedCursor(conn)
        cur.execute("SELECT %s + 1", (1,))
        executed = status(conn, "Com_stmt_execute")
        cur.execute("SELECT %s + 2", (1,))  # the limit is reached: as text
        assert list(cur.fetchall()) == [(3,)]
        assert not cur.send_encoded(cur.encode("SELECT %s + 2", (5,)))
        select.select([cur.fileno()], [], [], 5.0)
        assert cur.receive() and list(cur.fetchall()) == [(7,)]
        assert answer(cur, cur.encode("SELECT %s + 3", (5,))) == [(8,)]  # refused at a prepare sent without waiting
        cur.execute("SELECT %s + 1", (2,))  # the prepared one still is
        assert list(cur.fetchall()) == [(3,)] and status(conn, "Com_stmt_execute") == executed + 1
        cur.close()
    finally:
        admin.execute(f"SET GLOBAL max_prepared_stmt_count = {limit}")
        admin.close()


def test_errors_are_sorted_as_the_text_paths(target: Target, conn: Any) -> None:
    import MySQLdb

    cur = PreparedCursor(conn)
    cur.execute("INSERT INTO tp (a) VALUES (%s)", (1,))
    with pytest.raises(MySQLdb.IntegrityError) as dup:
        cur.execute("INSERT INTO tp (a) VALUES (%s)", (1,))
    assert dup.value.args[0] == 1062 and dup.value.sqlstate == "23000"
    with pytest.raises(MySQLdb.ProgrammingError):
        cur.execute("SELECT nope FROM tp WHERE a = %s", (1,))
    killer = target.connect()
    try:
        k = killer.cursor()
        k.execute(f"KILL {conn.thread_id()}")
    finally:
        killer.close()
    with pytest.raises(MySQLdb.OperationalError) as lost:
        cur.execute("SELECT a FROM tp WHERE a = %s", (1,))
    assert target.is_disconnect(lost.value), lost.value
    assert not target.is_retryable(lost.value)


def test_client_paths_per_target(target: Target, tmp_path: Any) -> None:
    assert target.client_paths() == ("prepared", "text")
    assert target.client_path("fast") == "prepared" and target.client_path("text") == "text"
    conn = target.connect()
    try:
        assert isinstance(target.fast_cursor(conn), PreparedCursor)
        assert type(target.fast_cursor(conn, "text")) is MysqlclientCursor
        assert target.fast_cursor(conn, "dbapi") is None
    finally:
        conn.close()
    pymysql = open_target(target.describe().replace("+mysqldb", "+pymysql"))
    assert pymysql.client_paths() == () and pymysql.client_path("fast") == "dbapi"
    with pytest.raises(TpsbenchError, match=r"--client prepared: not on .*PyMySQL has only .*; use dbapi$"):
        pymysql.client_path("prepared")
    sqlite = open_target(f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(TpsbenchError, match=r"--client text: not on sqlite.*; use dbapi$"):
        sqlite.client_path("text")
    with pytest.raises(TpsbenchError, match="--client must be one of fast, prepared, text, dbapi, got 'binary'"):
        target.client_path("binary")


@pytest.mark.postgresql
def test_postgresql_has_prepared_statements_only(pg_url: str) -> None:
    pg = open_target(pg_url)
    assert pg.client_paths() == ("prepared",) and pg.client_path("fast") == "prepared"
    with pytest.raises(TpsbenchError, match=r"--client text: not on .*libpq's statements here are prepared.*; "
                                            r"use prepared, dbapi$"):
        pg.client_path("text")


def test_a_kept_connection_keeps_its_statements_for_the_next_session(conn: Any) -> None:
    """Users keep their connection from one step to the next and open a new session on it:
    its cursors find the statements prepared already and the last CALL's status read."""
    first = PreparedCursor(conn)
    first.execute("CALL pp(%s)", (1,))
    first.commit()  # the status read: the connection is free for the DB-API cursor that reads the counter
    prepares = status(conn, "Com_stmt_prepare")
    first.execute("CALL pp(%s)", (1,))  # its status still to read
    for cur in (PreparedCursor(conn), PreparedCountingCursor(conn)):
        cur.execute("CALL pp(%s)", (2,))
        assert cur.kind == READ if isinstance(cur, PreparedCountingCursor) else list(cur.fetchall()) == [(2, "a")]
    first.commit()
    assert status(conn, "Com_stmt_prepare") == prepares
    first.close()
    first.execute("SELECT %s", (3,))  # closing a cursor leaves the connection's statements
    assert list(first.fetchall()) == [(3,)]


def test_long_values_in_a_calls_results_read_whole_every_time(conn: Any) -> None:
    """A value longer than its column's first buffer is read again at its length; in a
    CALL's later results too, after libmariadb has freed the earlier results' binds."""
    text = MysqlclientCursor(conn)
    text.execute("INSERT INTO tp (a, i, b) VALUES (1, REPEAT('é€𝄞', 900), REPEAT('x', 400))")
    text.execute("CREATE PROCEDURE pl(IN x INT)"
                 " BEGIN SELECT x; SELECT i, b FROM tp WHERE a = x; SELECT b, i FROM tp; END")
    answers = {}
    for cur in (MysqlclientCursor(conn), PreparedCursor(conn)):
        got = []
        for _ in range(20):
            cur.execute("CALL pl(%s)", (1,))
            got.append([list(cur.fetchall())])
            while cur.next_result_set():
                got[-1].append(list(cur.fetchall()))
        answers[type(cur)] = got
    assert answers[PreparedCursor] == answers[MysqlclientCursor]
    assert answers[PreparedCursor][0][1] == [("é€𝄞" * 900, "x" * 400)]
