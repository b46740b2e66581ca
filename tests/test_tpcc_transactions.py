"""The five TPC-C transactions on SQLite, PostgreSQL and MariaDB, on a freshly built database.

Each backend gets one 2-warehouse build (two warehouses, so that remote lines and
remote payments have somewhere to go) shared by the tests of this module; every test
asserts changes relative to what it reads first, so their order does not matter.
Servers that do not answer skip their tests, or fail them with CI=true.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pyodbc
import pytest
from conftest import scratch_database, sql_dialects, unavailable
from sqlalchemy.engine import make_url

from tpsbench.commands.build import build
from tpsbench.core.meta import read_meta
from tpsbench.core.mix_session import MixSession
from tpsbench.core.session import RunContext
from tpsbench.core.sql import SqlDialect
from tpsbench.core.target import Target
from tpsbench.core.transactions import Deck, permuted
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc import delivery, new_order, order_status, payment, procedures, rand, stock_level
from tpsbench.workloads.tpcc.checks import CHECKS
from tpsbench.workloads.tpcc.counts import database_counts, expected_counts
from tpsbench.workloads.tpcc.draws import Draws
from tpsbench.workloads.tpcc.new_order import UNUSED_ITEM, NewOrderInputs
from tpsbench.workloads.tpcc.payment import PaymentInputs
from tpsbench.workloads.tpcc.session import TpccSession
from tpsbench.workloads.tpcc.statements import statements
from tpsbench.workloads.tpcc.table import KEYING_S, TABLE, THINK_MEAN_S, TRANSACTIONS, WEIGHTS

SCALE = 2
SEED = 7
LOAD_TIME = "2026-01-02 03:04:05"


# -- fixtures ----------------------------------------------------------------------------
def built_database(backend: str, db_template: Callable[..., str]) -> Iterator[str]:
    """TPC-C at SCALE (seed SEED, loaded at LOAD_TIME) on the server, dropped afterwards: a
    copy of the session's template (conftest.db_template), which test_multiplex and
    test_deferred_delivery copy too."""
    with scratch_database(backend, db_template(backend, "tpcc", SCALE, loaders=2, seed=SEED, load_time=LOAD_TIME)) \
            as url:
        yield url


@dataclass
class Db:
    url: str
    target: Target
    ctx: RunContext
    conn: Any  # a probe connection for reading what the transactions did
    opened: list[Any]  # connections of the sessions, closed with the database
    options: dict[str, str] = field(default_factory=dict)  # run options of every session (--client)

    def rows(self, sql: str, *params: object) -> list[tuple]:
        """Rows of ``sql`` (written with ``?``), read in a transaction of their own."""
        cur = self.conn.cursor()
        try:
            cur.execute(sql.replace("?", self.target.placeholder()), params)
            return [tuple(row) for row in cur.fetchall()]
        finally:
            cur.close()
            self.conn.rollback()

    def one(self, sql: str, *params: object) -> tuple:
        rows = self.rows(sql, *params)
        assert len(rows) == 1, rows
        return rows[0]

    def connect(self) -> Any:
        """A connection for a session, closed with the database."""
        conn = self.target.connect()
        self.opened.append(conn)
        return conn

    def session(self, user_id: int = 0, **options: str) -> TpccSession:
        ctx = RunContext(self.ctx.workload, self.url, self.ctx.scale, self.ctx.seed, self.ctx.constants,
                         {"think": "off", "procedures": "off", **self.options, **options})
        return TpccSession(ctx, user_id, 4, self.connect(), self.target)


@pytest.fixture(scope="module", params=[
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.postgresql),
    # a build of its own and seconds a test: the quick lane's MariaDB is test_tpce_transactions'
    pytest.param("mysql", marks=[pytest.mark.mysql, pytest.mark.slow]),
    pytest.param("mysql-text", marks=[pytest.mark.mysql, pytest.mark.slow]),  # the prepared path's again, as text
])
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
       db_template: Callable[..., str]) -> Iterator[Db]:
    """Each database; on MySQL/MariaDB both statement paths, prepared (the default) and text."""
    backend, _, path = request.param.partition("-")
    if backend == "sqlite":
        scratch: Iterator[str] = iter([f"sqlite:///{tmp_path_factory.mktemp('tpcc') / 'tpcc.db'}"])
    else:
        scratch = built_database(backend, db_template)
    url = next(scratch)
    try:
        if backend == "sqlite":
            build("tpcc", SCALE, url, loaders=2, seed=SEED, load_time=LOAD_TIME, show_progress=False)
        target = open_target(url)
        if path and path not in target.client_paths():
            unavailable(f"--client {path}", target.client_path_missing(path))
        meta = read_meta(target, "tpcc")
        constants = {k.removeprefix("const_"): int(v) for k, v in meta.items() if k.startswith("const_")}
        ctx = RunContext("tpcc", url, int(meta["scale"]), 99, constants, {"think": "off"})
        probe = Db(url, target, ctx, target.connect(), [], {"client": path} if path else {})
        try:
            yield probe
        finally:
            for conn in [probe.conn, *probe.opened]:
                with contextlib.suppress(Exception):  # closed already, or another thread's
                    conn.close()
    finally:
        for _ in scratch:  # drop the server database
            pass


@pytest.fixture(params=["off", "on"])
def mode(request: pytest.FixtureRequest, db: Db) -> str:
    """The run option procedures: the statement path, then the stored procedures."""
    if request.param == "on" and not procedures.available(statements(db.target.sql)):
        pytest.skip(f"no stored procedures for {db.target.dialect}")
    return request.param


class Recorder:
    """A cursor that remembers the statements run through it (round trips)."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur
        self.statements: list[str] = []

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.statements.append(sql)
        return self.cur.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cur, name)


def run(session: TpccSession, name: str, inputs: object) -> tuple[bool, list[str]]:
    """``session.execute`` with the statements it ran."""
    real, calls = session.cur, session.transaction_cursor
    session.cur = recorder = Recorder(real)
    if calls is not None:  # the stored-procedure path runs on this one
        session.transaction_cursor = recorder
    try:
        return session.execute(name, inputs), recorder.statements
    finally:
        session.cur, session.transaction_cursor = real, calls


def money(value: object) -> Decimal:
    """An exact Decimal; SQLite's doubles (sums may carry 1e-12 noise) to 4 places first."""
    if isinstance(value, float):
        return Decimal(repr(value)).quantize(Decimal("0.0001"))
    return Decimal(value)  # type: ignore[arg-type]  # a column's value (int, str or Decimal here), typed object


# -- New-Order ---------------------------------------------------------------------------
def test_new_order_commits_with_quantity_rule_duplicates_and_remote_line(db: Db, mode: str) -> None:
    w, d, c = 1, 3, 42
    # item 11 twice (the rule applies per line, in order), item 12 near the wrap, item 13 remote
    lines = ((11, 1, 3), (12, 1, 5), (11, 1, 4), (13, 2, 2), (14, 1, 1))
    setup = db.target.connect()
    cur = setup.cursor()
    mark = db.target.placeholder()
    for sw, i_id, q in ((1, 11, 15), (1, 12, 12), (2, 13, 50)):
        cur.execute(f"UPDATE stock SET s_quantity = {mark} WHERE s_w_id = {mark} AND s_i_id = {mark}", (q, sw, i_id))
    setup.commit()
    setup.close()
    stock_sql = "SELECT s_quantity, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ? AND s_i_id = ?"
    before = {key: db.one(stock_sql, *key) for key in ((1, 11), (1, 12), (2, 13), (1, 14))}
    next_o_id = db.one("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", w, d)[0]

    session = db.session(procedures=mode)
    ok, sql = run(session, "new_order", NewOrderInputs.from_lines(w, d, c, lines, False))
    assert ok and len(sql) == (1 if mode == "on" else 8)  # 8 statements + COMMIT on every dialect, or one call
    out = session.last_output
    assert out.o_id == next_o_id and out.all_local == 0
    assert db.one("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", w, d)[0] == next_o_id + 1
    assert db.one("SELECT o_c_id, o_ol_cnt, o_all_local, o_carrier_id FROM orders"
                  " WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", w, d, out.o_id) == (c, 5, 0, None)
    assert db.rows("SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?", w, d, out.o_id)
    ol = db.rows("SELECT ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line"
                 " WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ? ORDER BY ol_number", w, d, out.o_id)
    prices = {i: money(db.one("SELECT i_price FROM item WHERE i_id = ?", i)[0]) for i in (11, 12, 13, 14)}
    assert [(n, i, sw, q, None) for n, i, sw, q, _, _d in ol] == [
        (n, i, sw, q, None) for n, (i, sw, q) in enumerate(lines, 1)]
    assert [money(row[4]) for row in ol] == [q * prices[i] for i, _, q in lines]
    after = {key: db.one(stock_sql, *key) for key in before}
    # item 11: 15 - 3 = 12, then 12 - 4 = 8 < 10 so 8 + 91 = 99
    assert after[(1, 11)] == (99, before[(1, 11)][1] + 7, before[(1, 11)][2] + 2, before[(1, 11)][3])
    assert after[(1, 12)] == (98, before[(1, 12)][1] + 5, before[(1, 12)][2] + 1, before[(1, 12)][3])  # 12-5=7 -> +91
    assert after[(2, 13)] == (48, before[(2, 13)][1] + 2, before[(2, 13)][2] + 1, before[(2, 13)][3] + 1)
    assert after[(1, 14)][0] in (before[(1, 14)][0] - 1, before[(1, 14)][0] + 90)
    disc, w_tax, d_tax = db.one("SELECT c_discount, w_tax, d_tax FROM customer, warehouse, district WHERE c_w_id = ?"
                                " AND c_d_id = ? AND c_id = ? AND w_id = c_w_id AND d_w_id = c_w_id AND d_id = c_d_id",
                                w, d, c)
    expected = sum(q * prices[i] for i, _, q in lines) * (1 - money(disc)) * (1 + money(w_tax) + money(d_tax))
    assert out.total == expected.quantize(Decimal("0.01"))


def test_new_order_rollback_leaves_no_trace_and_comes_after_the_stock_work(db: Db, mode: str) -> None:
    w, d = 2, 5
    lines = ((21, 2, 3), (22, 1, 4), (UNUSED_ITEM, 2, 1))
    counts = "SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM new_order), (SELECT COUNT(*) FROM order_line)"
    stock_sql = "SELECT s_quantity, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ? AND s_i_id = ?"
    before = (db.rows(counts), db.rows("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", w, d),
              db.one(stock_sql, 2, 21), db.one(stock_sql, 1, 22))
    session = db.session(procedures=mode)
    ok, sql = run(session, "new_order", NewOrderInputs.from_lines(w, d, 7, lines, True))
    assert ok is False
    if mode == "off":  # the unused item is found by the ITEM select, after the stock rows were locked and updated
        item_at = next(i for i, s in enumerate(sql) if "FROM item" in s)
        assert item_at == len(sql) - 1 and any(s.startswith("UPDATE stock") for s in sql[:item_at])
    after = (db.rows(counts), db.rows("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", w, d),
             db.one(stock_sql, 2, 21), db.one(stock_sql, 1, 22))
    assert after == before


def test_new_order_inputs_follow_the_spec() -> None:
    draw = Draws(1, 0, 3, {"c_last": 0, "c_id": 0, "ol_i_id": 0})
    orders = [new_order.inputs(draw, 2) for _ in range(20000)]
    lines = [line for o in orders for line in o.lines]
    assert {len(o.lines) for o in orders} == set(range(5, 16))
    assert abs(sum(o.rollback for o in orders) / len(orders) - 0.01) < 0.003
    assert all(o.lines[-1][0] == UNUSED_ITEM for o in orders if o.rollback)
    remote = [sw for _, sw, _ in lines if sw != 2]
    assert abs(len(remote) / len(lines) - 0.01) < 0.002 and set(remote) == {1, 3}
    assert {q for _, _, q in lines} == set(range(1, 11))
    quantities = Counter(q for _, _, q in lines)
    assert all(abs(n / len(lines) - 0.1) < 0.005 for n in quantities.values())
    # a line's supplier and its quantity are drawn apart: remote lines get every quantity too
    assert {q for _, sw, q in lines if sw != 2} == set(range(1, 11))
    assert all(o.all_local == int(all(sw == 2 for _, sw, _ in o.lines)) for o in orders)
    assert 0.85 < sum(o.all_local for o in orders) / len(orders) < 0.95  # 1% per line, ~10 lines
    single = Draws(1, 0, 1, {"c_last": 0, "c_id": 0, "ol_i_id": 0})
    assert all(sw == 1 for _ in range(2000) for _, sw, _ in new_order.inputs(single, 1).lines)


# -- Payment -----------------------------------------------------------------------------
CUSTOMER_SQL = ("SELECT c_balance, c_ytd_payment, c_payment_cnt, c_data, c_credit FROM customer"
                " WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?")


@pytest.mark.parametrize("remote", [False, True])
def test_payment_moves_the_exact_amount(db: Db, remote: bool, mode: str) -> None:
    w, d = 1, 4
    cw, cd, c = (2, 9, 1234) if remote else (1, 4, 1234)
    h = Decimal("1234.56")
    w_ytd, w_name = db.one("SELECT w_ytd, w_name FROM warehouse WHERE w_id = ?", w)
    d_ytd, d_name = db.one("SELECT d_ytd, d_name FROM district WHERE d_w_id = ? AND d_id = ?", w, d)
    cust = db.one(CUSTOMER_SQL, cw, cd, c)
    history = db.one("SELECT COUNT(*) FROM history WHERE h_c_w_id = ? AND h_c_d_id = ? AND h_c_id = ?", cw, cd, c)[0]
    ok, sql = run(db.session(procedures=mode), "payment", PaymentInputs(w, d, cw, cd, c, None, h))
    assert ok and len(sql) == (1 if mode == "on" else 3 if db.target.dialect == "mysql" else 4)
    assert money(db.one("SELECT w_ytd FROM warehouse WHERE w_id = ?", w)[0]) == money(w_ytd) + h
    assert money(db.one("SELECT d_ytd FROM district WHERE d_w_id = ? AND d_id = ?", w, d)[0]) == money(d_ytd) + h
    after = db.one(CUSTOMER_SQL, cw, cd, c)
    assert money(after[0]) == money(cust[0]) - h and money(after[1]) == money(cust[1]) + h
    assert after[2] == cust[2] + 1
    rows = db.rows("SELECT h_d_id, h_w_id, h_amount, h_data FROM history"
                   " WHERE h_c_w_id = ? AND h_c_d_id = ? AND h_c_id = ?", cw, cd, c)
    assert len(rows) == history + 1
    assert (d, w, h, f"{w_name}    {d_name}") in [(r[0], r[1], money(r[2]), r[3]) for r in rows]


def test_payment_bad_credit_prepends_to_c_data(db: Db, mode: str) -> None:
    cw, cd, c = db.one("SELECT c_w_id, c_d_id, MIN(c_id) FROM customer WHERE c_w_id = 2 AND c_d_id = 6"
                       " AND c_credit = 'BC' GROUP BY c_w_id, c_d_id")
    old = db.one(CUSTOMER_SQL, cw, cd, c)[3]
    assert db.session(procedures=mode).execute("payment", PaymentInputs(1, 3, cw, cd, c, None, Decimal("7.05")))
    new = db.one(CUSTOMER_SQL, cw, cd, c)[3]
    assert new == f"{c} {cd} {cw} 3 1 7.05 {old}"[:500]
    good = db.one("SELECT MIN(c_id) FROM customer WHERE c_w_id = 2 AND c_d_id = 6 AND c_credit = 'GC'")[0]
    old = db.one(CUSTOMER_SQL, 2, 6, good)[3]
    assert db.session(procedures=mode).execute("payment", PaymentInputs(2, 6, 2, 6, good, None, Decimal("7.05")))
    assert db.one(CUSTOMER_SQL, 2, 6, good)[3] == old


@pytest.mark.parametrize("parity", [0, 1])
def test_middle_row_rule_by_last_name(db: Db, parity: int, mode: str) -> None:
    """Payment and Order-Status by name take 0-based row (n-1)//2 of the rows by C_FIRST."""
    groups = db.rows("SELECT c_d_id, c_last, COUNT(*) FROM customer WHERE c_w_id = 1"
                     " GROUP BY c_d_id, c_last HAVING COUNT(*) BETWEEN 2 AND 6 ORDER BY 3 DESC, 1, 2")
    d, last, n = next(g for g in groups if g[2] % 2 == parity)
    ordered = [r[0] for r in db.rows("SELECT c_id FROM customer WHERE c_w_id = 1 AND c_d_id = ? AND c_last = ?"
                                     " ORDER BY c_first", d, last)]
    middle = ordered[(n - 1) // 2]
    counts = {c: db.one(CUSTOMER_SQL, 1, d, c)[2] for c in ordered}
    session = db.session(procedures=mode)
    assert session.execute("payment", PaymentInputs(1, d, 1, d, None, last, Decimal("1.00")))
    assert session.last_output.c_id == middle
    assert {c: db.one(CUSTOMER_SQL, 1, d, c)[2] for c in ordered} == {
        c: counts[c] + (c == middle) for c in ordered}
    assert session.execute("order_status", order_status.OrderStatusInputs(1, d, None, last))
    assert session.last_output.c_id == middle


def test_payment_inputs_follow_the_spec() -> None:
    draw = Draws(2, 5, 3, {"c_last": 10, "c_id": 0, "ol_i_id": 0})
    pays = [payment.inputs(draw, 3) for _ in range(20000)]
    remote = [p for p in pays if p.c_w_id != p.w_id]
    assert abs(len(remote) / len(pays) - 0.15) < 0.01
    assert abs(sum(p.c_last is not None for p in pays) / len(pays) - 0.60) < 0.015
    assert all((p.c_id is None) != (p.c_last is None) for p in pays)
    assert all(Decimal("1.00") <= p.h_amount <= Decimal("5000.00") and p.h_amount.as_tuple().exponent == -2
               for p in pays)
    single = Draws(2, 5, 1, {"c_last": 10, "c_id": 0, "ol_i_id": 0})
    alone = [payment.inputs(single, 1) for _ in range(2000)]
    assert all(p.c_w_id == 1 for p in alone) and any(p.c_d_id != p.d_id for p in alone)


# -- Order-Status, Delivery, Stock-Level ---------------------------------------------------
def test_order_status_returns_the_last_order_and_its_lines(db: Db, mode: str) -> None:
    session = db.session(procedures=mode)
    assert session.execute("new_order", NewOrderInputs.from_lines(2, 8, 77, ((5, 2, 1), (6, 2, 2), (7, 2, 3)), False))
    o_id = session.last_output.o_id
    ok, sql = run(session, "order_status", order_status.OrderStatusInputs(2, 8, 77, None))
    assert ok and len(sql) == 1
    out = session.last_output
    assert (out.c_id, out.o_id, out.o_carrier_id) == (77, o_id, None)
    assert sorted((line[0], line[2]) for line in out.lines) == [(5, 1), (6, 2), (7, 3)]


def test_delivery_delivers_the_oldest_new_order_of_each_district(db: Db, mode: str) -> None:
    w = 2
    oldest = dict(db.rows("SELECT no_d_id, MIN(no_o_id) FROM new_order WHERE no_w_id = ? GROUP BY no_d_id", w))
    orders = {d: db.one("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", w, d, o)[0]
              for d, o in oldest.items()}
    amounts = {d: money(db.one("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ?"
                               " AND ol_o_id = ?", w, d, o)[0]) for d, o in oldest.items()}
    customers = {d: db.one(CUSTOMER_SQL.replace("c_data, c_credit", "c_delivery_cnt"), w, d, c)
                 for d, c in orders.items()}
    ok, sql = run(db.session(procedures=mode), "delivery", delivery.DeliveryInputs(w, 7))
    assert ok and len(sql) == (1 if mode == "on" else 5)
    for d, o in oldest.items():
        assert not db.rows("SELECT 1 FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?", w, d, o)
        assert db.one("SELECT o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", w, d, o) == (7,)
        assert db.one("SELECT COUNT(*) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
                      " AND ol_delivery_d IS NULL", w, d, o) == (0,)
        balance, _, _, cnt = db.one(CUSTOMER_SQL.replace("c_data, c_credit", "c_delivery_cnt"), w, d, orders[d])
        assert money(balance) == money(customers[d][0]) + amounts[d] and cnt == customers[d][3] + 1


def test_delivery_skips_a_district_without_new_orders(db: Db, mode: str) -> None:
    """District (1, 10)'s NEW-ORDER rows are parked under warehouse 999 (committed, since a
    MySQL procedure commits its own transaction), Delivery runs, the rows come back."""
    park = "UPDATE new_order SET no_w_id = ? WHERE no_w_id = ? AND no_d_id = 10"
    conn = db.target.connect()
    cur = conn.cursor()
    mark = db.target.placeholder()
    cur.execute(park.replace("?", mark), (999, 1))
    conn.commit()
    try:
        session = db.session(procedures=mode)
        assert session.execute("delivery", delivery.DeliveryInputs(1, 3))
        out = session.last_output
        assert out.skipped == (10,) and [d for d, _ in out.delivered] == list(range(1, 10))
    finally:
        cur.execute(park.replace("?", mark), (1, 999))
        conn.commit()
        conn.close()


def test_a_delivery_waits_for_a_concurrent_one_and_takes_the_next_orders(db: Db, mode: str) -> None:
    """A Delivery of warehouse 1 held open in another transaction has taken each
    district's oldest order; ours waits for it to commit and then delivers each district's
    next oldest order, skipping none (PostgreSQL: the holder is its function, called in a
    transaction left open)."""
    if db.target.dialect != "postgresql":
        pytest.skip("a Delivery held open in a transaction is PostgreSQL's function")
    w = 1
    queued = db.rows("SELECT no_d_id, no_o_id FROM new_order WHERE no_w_id = ? ORDER BY no_d_id, no_o_id", w)
    second = {d: [o for dd, o in queued if dd == d][1] for d in range(1, 11)}
    holder = db.connect()
    holder.cursor().execute("SELECT tpcc_delivery(%s, %s)", (w, 1))
    session, done = db.session(procedures=mode), threading.Event()
    worker = threading.Thread(target=lambda: (session.execute("delivery", delivery.DeliveryInputs(w, 2)), done.set()))
    worker.start()
    try:
        assert not done.wait(0.5), "the Delivery did not wait for the one holding the oldest orders"
    finally:
        holder.commit()
        worker.join(30)
    out = session.last_output
    assert done.is_set() and out.skipped == () and dict(out.delivered) == second


def test_stock_level_counts_low_stock_items_of_the_last_20_orders(db: Db, mode: str) -> None:
    w, d, threshold = 1, 2, 15
    next_o_id = db.one("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", w, d)[0]
    items = {i for (i,) in db.rows("SELECT ol_i_id FROM order_line WHERE ol_w_id = ? AND ol_d_id = ?"
                                   " AND ol_o_id >= ? AND ol_o_id < ?", w, d, next_o_id - 20, next_o_id)}
    low = {i for i in items if db.one("SELECT s_quantity FROM stock WHERE s_w_id = ? AND s_i_id = ?", w, i)[0]
           < threshold}
    session = db.session(procedures=mode)
    ok, sql = run(session, "stock_level", stock_level.StockLevelInputs(w, d, threshold))
    assert ok and len(sql) == 1 and session.last_output == len(low)


# -- many transactions: consistency and evidence ----------------------------------------
def run_mix(db: Db, users: list[int], per_session: int, **options: str) -> Counter[str]:
    """Each user runs ``per_session`` transactions of its deck in its own thread (and
    connection, made there: sqlite3 wants that), retrying retryable errors as the engine
    does; returns the committed count per transaction."""
    commits: Counter[str] = Counter()
    lock = threading.Lock()
    failures: list[BaseException] = []

    def user(user_id: int) -> None:
        try:
            session = db.session(user_id, **options)
            db.opened.remove(session.conn)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
            return
        try:
            for _ in range(per_session):
                name = session.next_transaction()
                inputs = session.inputs(name)
                for _attempt in range(50):
                    try:
                        ok = session.execute(name, inputs)
                        break
                    except Exception as exc:
                        if not db.target.is_retryable(exc):
                            raise
                else:
                    raise AssertionError(f"{name} kept failing")
                if ok:
                    with lock:
                        commits[name] += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
        finally:
            session.conn.close()

    threads = [threading.Thread(target=user, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return commits


def assert_mix_consistent(db: Db, runner: Db, users: list[int], per_session: int, **options: str) -> Counter[str]:
    """Run the mix through ``runner`` (``db`` or another path to the same database); then
    the evidence matches the commits exactly and every condition that holds after a run
    (1-10, 12) holds. Returns the commits."""
    before = database_counts(db.conn)
    commits = run_mix(runner, users, per_session, **options)
    after = database_counts(db.conn)
    assert {k: after[k] - before[k] for k in after} == expected_counts(dict(commits))
    for check in CHECKS:
        if check.holds_after_run:
            assert db.rows(check.sql) == [], f"condition {check.number} ({check.title}) fails"
    return commits


def test_consistency_and_evidence_after_hundreds_of_transactions(db: Db, mode: str) -> None:
    """Four users (two per warehouse) run 100 transactions each, concurrently."""
    commits = assert_mix_consistent(db, db, list(range(4)), 100, procedures=mode)
    assert sum(commits.values()) >= 380 and commits["delivery"] > 0 and commits["payment"] > 0


def test_dbapi_client_path(db: Db, mode: str) -> None:
    """client=dbapi: the driver's DB-API cursor instead of the fast cursor (psycopg's own
    prepared statements, MySQLdb's cursor and its result sets of a CALL)."""
    commits = assert_mix_consistent(db, db, [0, 1], 60, procedures=mode, client="dbapi")
    assert sum(commits.values()) >= 110


def test_mix_through_odbc(db: Db, mode: str) -> None:
    """The same statements through pyodbc (psqlODBC, MariaDB Connector/ODBC): ``?`` markers,
    no lastrowid (MySQL reads LAST_INSERT_ID), parameters typed by the ODBC driver."""
    driver = {"postgresql": "PostgreSQL Unicode", "mysql": "MariaDB Unicode"}.get(db.target.dialect)
    if driver is None:
        pytest.skip("no ODBC path for SQLite here")
    if driver not in pyodbc.drivers():
        unavailable(f"ODBC driver {driver!r}", f"installed: {pyodbc.drivers()}")
    url = make_url(db.url)
    url = url.set(drivername=f"{url.get_backend_name()}+pyodbc", query={"driver": driver})
    text = url.render_as_string(hide_password=False)
    assert_mix_consistent(db, Db(text, open_target(text), db.ctx, db.conn, db.opened), [0, 1], 40, procedures=mode)


def test_all_warehouses_mode_spreads_users(db: Db) -> None:
    session = db.session(0, warehouses="all")
    seen = Counter(session.inputs("payment").w_id for _ in range(400))
    assert set(seen) == {1, 2}
    commits = run_mix(db, [0, 1], 30, warehouses="all")
    assert sum(commits.values()) >= 28


# -- session, mix and timing (no database needed beyond the fixture's metadata) -----------
def test_home_warehouse_district_and_c_run(db: Db) -> None:
    homes = [(s.home_w, s.home_d) for s in (db.session(u) for u in range(4))]
    assert homes == [(1, 1), (2, 1), (1, 2), (2, 2)]
    session = db.session(3)
    assert rand.c_run_valid(session.c_run["c_last"], db.ctx.constants["c_last"])
    assert session.c_run == db.session(1).c_run  # one C per field for the whole run
    assert {session.inputs("stock_level").d_id for _ in range(20)} == {2}
    session.conn.close()


def test_mix_is_within_one_point_of_the_weights() -> None:
    deck = Deck(TABLE.cards(), permuted(np.random.default_rng(3)))
    drawn = Counter(deck.draw() for _ in range(12345))
    for name, weight in WEIGHTS.items():
        assert abs(100 * drawn[name] / 12345 - weight) < 1.0, (name, drawn)
    assert tuple(WEIGHTS) == TRANSACTIONS and sum(WEIGHTS.values()) == 100


def waits_of_table(think: str) -> MixSession:
    """A session of TPC-C's table that only waits: --think ``think`` (spec's think times
    drawn from a stream of seed 5), on an SQLite connection it never uses."""
    import random
    import sqlite3

    class Waits(MixSession):
        table = TABLE

    target = open_target("sqlite://")
    session = Waits(RunContext("tpcc", "sqlite://", 1, 5, {}, {"think": think}), 0, 1, sqlite3.connect(":memory:"),
                    target)
    session.spec_rng = random.Random(5)
    return session


def test_think_and_keying_times() -> None:
    off, spec = waits_of_table("off"), waits_of_table("spec")
    assert all(off.keying_time(n) == 0 and off.think_time(n) == 0 for n in TRANSACTIONS)
    assert [spec.keying_time(n) for n in TRANSACTIONS] == [KEYING_S[n] for n in TRANSACTIONS] == [18, 3, 2, 2, 2]
    assert [THINK_MEAN_S[n] for n in TRANSACTIONS] == [12, 12, 10, 5, 5]
    times = [spec.think_time("delivery") for _ in range(50000)]
    assert max(times) <= 50.0 and min(times) >= 0
    assert abs(sum(times) / len(times) - 5.0 * (1 - math.exp(-10))) < 0.1


def test_statement_table_is_built_for_every_dialect() -> None:
    dialects = sql_dialects()
    assert set(dialects) == {"postgresql", "mysql", "sqlite", "mssql"}
    for dialect in dialects.values():
        for mark in ("?", "%s"):
            s = statements(dialect, mark)
            other = "%s" if mark == "?" else "?"
            texts = texts_of(s)
            assert texts and not any(other in t for t in texts)
    assert statements(dialects["postgresql"], "%s") is statements(dialects["postgresql"], "%s")
    assert "OUTPUT deleted.no_d_id" in statements(dialects["mssql"]).delivery.delete_k[3]
    mssql = statements(dialects["mssql"])
    assert mssql.delivery.oldest.startswith("SELECT TOP 1 ") and "LIMIT" not in mssql.delivery.oldest
    assert "FOR UPDATE" not in str(texts_of(statements(dialects["sqlite"])))


def texts_of(value: object) -> list[str]:
    """Every statement text in a statement record, its nested records, tuples and dicts
    (not in the dialect it was built for)."""
    if isinstance(value, SqlDialect):
        return []
    if isinstance(value, str):
        return [value]
    if dataclasses.is_dataclass(value):
        return [t for f in dataclasses.fields(value) for t in texts_of(getattr(value, f.name))]
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts_of(v)]
    if isinstance(value, tuple):
        return [t for v in value for t in texts_of(v)]
    return []
