"""The TPC-E transactions on SQLite, PostgreSQL and MariaDB, on a freshly built database.

Each backend gets one build of 1,000 customers with one day of initial trades and 30 of
market history, shared by the tests of this module; they assert changes relative to what
they read first. The first test checks the fresh build, the last runs the real engine
on it (a short run, the realised mix, the honesty check, ``check tpce``). Servers that
do not answer skip their tests, or fail them with CI=true. The market exchange
emulator's rules without a database are in test_tpce_mee.py.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import scratch_database, slow_on, sql_dialects, unavailable
from test_tpcc_transactions import Db as ProbeDb

from tpsbench.commands.build import build
from tpsbench.commands.check import check
from tpsbench.commands.run import RunConfig, run
from tpsbench.core.meta import read_meta
from tpsbench.core.session import RunContext
from tpsbench.targets import open_target
from tpsbench.workloads.tpce import mee, trade_cleanup, trade_lookup, trade_update
from tpsbench.workloads.tpce.broker_volume import BrokerVolumeInputs
from tpsbench.workloads.tpce.maintenance import Maintenance
from tpsbench.workloads.tpce.market_feed import MarketFeedInputs
from tpsbench.workloads.tpce.mee import MarketExchange, MarketSession
from tpsbench.workloads.tpce.session import TpceSession
from tpsbench.workloads.tpce.table import CUSTOMER_WEIGHTS as WEIGHTS
from tpsbench.workloads.tpce.trade_lookup import TradeLookupInputs
from tpsbench.workloads.tpce.trade_order import TradeOrderInputs
from tpsbench.workloads.tpce.trade_result import TradeResultInputs
from tpsbench.workloads.tpce.trade_status import TradeStatusInputs

SEED = 7
LOAD_TIME = "2026-01-02 17:30:00"
BUILD = {"trade_days": "1", "market_days": "30"}


@dataclass
class Db(ProbeDb):
    """TPC-C's probe (rows, one, connect) with TPC-E's sessions."""

    def user(self, exchange: MarketExchange | None = None, user_id: int = 0) -> TpceSession:
        return TpceSession(self.ctx, user_id, 1, self.connect(), self.target, exchange)

    def market(self, exchange: MarketExchange) -> MarketSession:
        return MarketSession(self.ctx, self.connect(), self.target, exchange, lambda name, us: None)


@contextlib.contextmanager
def built(backend: str, tmp_path_factory: pytest.TempPathFactory, db_template: Callable[..., str]) -> Iterator[Db]:
    """A fresh build on ``backend`` (sqlite, postgresql or mysql; the module docstring's)
    and its probe, dropped afterwards: this module's fixture, and test_tpce_procedures'.
    On a server a copy of the session's template of this build, which both modules share."""
    arguments: dict[str, Any] = {"loaders": 2, "seed": SEED, "load_time": LOAD_TIME, "options": BUILD}
    with contextlib.ExitStack() as stack:
        if backend == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('tpce') / 'tpce.db'}"
            build("tpce", 1000, url, show_progress=False, **arguments)
        else:
            url = stack.enter_context(scratch_database(backend, db_template(backend, "tpce", 1000, **arguments)))
        target = open_target(url)
        meta = read_meta(target, "tpce")
        constants = {k.removeprefix("const_"): int(v) for k, v in meta.items() if k.startswith("const_")}
        probe = Db(url, target, RunContext("tpce", url, int(meta["scale"]), 99, constants, {}), target.connect(), [])
        try:
            yield probe
        finally:
            for conn in [probe.conn, *probe.opened]:
                with contextlib.suppress(Exception):
                    conn.close()


#: the backends of the ``db`` fixture, and their marks
BACKENDS: dict[str, list[pytest.MarkDecorator]] = {
    "sqlite": [], "postgresql": [pytest.mark.postgresql],
    "mysql": [pytest.mark.mysql, pytest.mark.slow]}  # a build of its own on MariaDB: the full lane's


@pytest.fixture(scope="module", params=[pytest.param(backend, marks=marks) for backend, marks in BACKENDS.items()])
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
       db_template: Callable[..., str]) -> Iterator[Db]:
    with built(request.param, tmp_path_factory, db_template) as probe:
        yield probe


def money(value: object) -> Decimal:
    return Decimal(repr(value)).quantize(Decimal("0.01")) if isinstance(value, float) else Decimal(value)  # type: ignore[arg-type]  # a column's value (int, str or Decimal here), typed object


def test_a_fresh_build_passes_every_check(db: Db) -> None:
    results = check("tpce", db.url)
    assert [r.number for r in results] == list(range(1, 12))
    assert {r.number: r.violations for r in results if not r.passed} == {}


# -- Trade-Order ---------------------------------------------------------------------------
def order(session: TpceSession, trade_type: str, qty: int = 200, acct: int | None = None, symbol: str = "AAAAAA",
          price: str = "25.00", **changes: Any) -> TradeOrderInputs:
    """An order on ``acct`` (the first account of customer 1 by default) executed by its owner."""
    world = session.world
    owner = world.customers[world.owner[acct]] if acct else world.customers[0]
    security = next(s for s in world.securities if s.symbol == symbol)
    inputs = TradeOrderInputs(session.next_trade_id(), acct or owner.accounts[0], owner.f_name, owner.l_name,
                              owner.tax_id, symbol, security.co_name, security.issue, trade_type, is_lifo=False,
                              is_margin=False, roll_it_back=False, requested_price=Decimal(price), trade_qty=qty)
    return replace(inputs, **changes)


def trade(db: Db, t_id: int) -> tuple:
    """(status, type, quantity, bid, cash, account) of a trade."""
    status, tt_id, qty, bid, cash, acct = db.one(
        "SELECT t_st_id, t_tt_id, t_qty, t_bid_price, t_is_cash, t_ca_id FROM trade WHERE t_id = ?", t_id)
    return status, tt_id, qty, money(bid), cash, acct


def test_trade_order_places_market_and_limit_orders_and_hands_them_to_the_exchange(db: Db) -> None:
    exchange = MarketExchange(SEED, 0)
    user = db.user(exchange)
    market = order(user, "TMB")
    assert user.execute("trade_order", market)
    price = money(db.one("SELECT lt_price FROM last_trade WHERE lt_s_symb = ?", "AAAAAA")[0])
    acct = market.acct_id
    assert trade(db, market.trade_id) == ("SBMT", "TMB", 200, price, 1, acct)
    assert db.rows("SELECT th_st_id FROM trade_history WHERE th_t_id = ?", market.trade_id) == [("SBMT",)]
    assert not db.rows("SELECT 1 FROM trade_request WHERE tr_t_id = ?", market.trade_id)
    assert [o[2] for o in exchange._orders] == [market.trade_id]
    # a limit order by company name and issue, on a margin account's order
    limit = order(user, "TLB", symbol="AAAAAB", price="19.99", is_margin=True)
    assert user.execute("trade_order", replace(limit, symbol=""))
    assert trade(db, limit.trade_id) == ("PNDG", "TLB", 200, Decimal("19.99"), 0, acct)
    b_id = db.one("SELECT ca_b_id FROM customer_account WHERE ca_id = ?", acct)[0]
    tt_id, symbol, qty, bid, broker = db.one("SELECT tr_tt_id, tr_s_symb, tr_qty, tr_bid_price, tr_b_id"
                                             " FROM trade_request WHERE tr_t_id = ?", limit.trade_id)
    assert (tt_id, symbol.rstrip(), qty, money(bid), broker) == ("TLB", "AAAAAB", 200, Decimal("19.99"), b_id)
    assert [entry[2] for entry in exchange._limits] == ["AAAAAB"]
    # someone the account permits, and someone it does not
    acct, people = next(iter(user.world.permitted.items()))
    f, last, tax = people[0]
    assert user.execute("trade_order", order(user, "TMS", acct=acct, exec_f_name=f, exec_l_name=last,
                                             exec_tax_id=tax))
    stranger = order(user, "TMS", acct=acct, exec_f_name="Nobody", exec_tax_id="X")
    with pytest.raises(LookupError, match="may not trade"):
        user.execute("trade_order", stranger)
    assert not db.rows("SELECT 1 FROM trade WHERE t_id = ?", stranger.trade_id)


def test_trade_order_rollback_leaves_no_trace(db: Db) -> None:
    exchange = MarketExchange(SEED, 0)
    user = db.user(exchange)
    before = db.one("SELECT (SELECT COUNT(*) FROM trade), (SELECT COUNT(*) FROM trade_history),"
                    " (SELECT COUNT(*) FROM trade_request)")
    for trade_type in ("TMB", "TLS"):
        assert user.execute("trade_order", order(user, trade_type, price="99.00", roll_it_back=True)) is False
    assert db.one("SELECT (SELECT COUNT(*) FROM trade), (SELECT COUNT(*) FROM trade_history),"
                  " (SELECT COUNT(*) FROM trade_request)") == before
    assert not exchange._orders and not exchange._limits


# -- Trade-Result and the lots --------------------------------------------------------------
def completed(db: Db, user: TpceSession, market: MarketSession, inputs: TradeOrderInputs, price: str) -> Any:
    assert user.execute("trade_order", inputs)
    assert market.execute("trade_result", TradeResultInputs(inputs.trade_id, Decimal(price)))
    return market.last_output


def test_trade_result_books_buys_and_sells_lot_by_lot(db: Db) -> None:
    exchange = MarketExchange(SEED, 0)
    user, market = db.user(exchange), db.market(exchange)
    acct = user.world.customers[5].accounts[0]
    symbol = next(s.symbol for s in user.world.securities
                  if not db.rows("SELECT 1 FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?", acct, s.symbol))
    b_id, bal, tax_st = db.one("SELECT ca_b_id, ca_bal, ca_tax_st FROM customer_account WHERE ca_id = ?", acct)
    trades, comm = db.one("SELECT b_num_trades, b_comm_total FROM broker WHERE b_id = ?", b_id)
    lots = "SELECT h_t_id, h_qty FROM holding WHERE h_ca_id = ? AND h_s_symb = ? ORDER BY h_t_id"
    summary = "SELECT hs_qty FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?"

    first = completed(db, user, market, order(user, "TMB", 200, acct, symbol), "20.00")
    status, price = db.one("SELECT t_st_id, t_trade_price FROM trade WHERE t_id = ?", first.trade_id)
    assert (status, money(price)) == ("CMPT", Decimal("20.00"))
    chrg = money(db.one("SELECT t_chrg FROM trade WHERE t_id = ?", first.trade_id)[0])
    assert first.se_amount == -(200 * Decimal("20.00") + chrg + first.commission) and first.commission > 0
    assert money(db.one("SELECT se_amt FROM settlement WHERE se_t_id = ?", first.trade_id)[0]) == first.se_amount
    assert money(db.one("SELECT ct_amt FROM cash_transaction WHERE ct_t_id = ?", first.trade_id)[0]) == first.se_amount
    assert first.acct_bal == money(bal) + first.se_amount
    second = completed(db, user, market, order(user, "TMB", 400, acct, symbol), "21.00")
    assert db.rows(lots, acct, symbol) == [(first.trade_id, 200), (second.trade_id, 400)]
    # LIFO: 500 shares take the newest lot whole and 100 of the first
    sell = completed(db, user, market, order(user, "TMS", 500, acct, symbol, is_lifo=True), "25.00")
    assert db.rows(lots, acct, symbol) == [(first.trade_id, 100)] and db.one(summary, acct, symbol) == (100,)
    assert sorted(db.rows("SELECT hh_h_t_id, hh_before_qty, hh_after_qty FROM holding_history WHERE hh_t_id = ?",
                          sell.trade_id)) == sorted([(second.trade_id, 400, 0), (first.trade_id, 200, 100)])
    gain = 500 * Decimal("25.00") - (400 * Decimal("21.00") + 100 * Decimal("20.00"))
    assert (sell.tax > 0) == (int(tax_st) in (1, 2)) and sell.tax <= gain
    # FIFO: 300 shares close the last lot and open a short one of 200
    short = completed(db, user, market, order(user, "TMS", 300, acct, symbol), "24.00")
    assert db.rows(lots, acct, symbol) == [(short.trade_id, -200)] and db.one(summary, acct, symbol) == (-200,)
    # a buy of 200 covers the short position: no lot, no summary row
    cover = completed(db, user, market, order(user, "TMB", 200, acct, symbol), "23.00")
    assert not db.rows(lots, acct, symbol) and not db.rows(summary, acct, symbol)
    results = (first, second, sell, short, cover)
    assert db.one("SELECT b_num_trades FROM broker WHERE b_id = ?", b_id) == (trades + 5,)
    assert money(db.one("SELECT b_comm_total FROM broker WHERE b_id = ?", b_id)[0]) == money(comm) + sum(
        r.commission for r in results)
    assert len(exchange._ticker) == 10  # each Trade-Result: its entry and a padding one
    with pytest.raises(LookupError, match="not submitted"):
        market.execute("trade_result", TradeResultInputs(cover.trade_id, Decimal("1.00")))


# -- Market-Feed and the exchange -------------------------------------------------------------
def test_market_feed_sets_prices_and_triggers_the_limit_orders_it_crosses(db: Db) -> None:
    exchange = MarketExchange(SEED, 0)
    user, market = db.user(exchange), db.market(exchange)
    buy, sell = order(user, "TLB", symbol="AAAABB", price="30.00"), order(user, "TLS", symbol="AAAABB", price="30.00")
    for inputs in (buy, sell):
        assert user.execute("trade_order", inputs)
    vol = db.one("SELECT lt_vol FROM last_trade WHERE lt_s_symb = ?", "AAAABB")[0]
    entries = [("AAAABB", Decimal("29.50"), 100), ("AAAABB", Decimal("29.00"), 200)]
    entries += [(s.symbol, s.price, 100) for s in user.world.securities[:18]]
    assert market.execute("market_feed", MarketFeedInputs(entries))
    assert buy.trade_id in {t.trade_id for t in market.last_output}  # type: ignore[attr-defined]  # Market-Feed's output is the trades it triggered; last_output is typed object
    assert sell.trade_id not in {t.trade_id for t in market.last_output}  # type: ignore[attr-defined]  # Market-Feed's output is the trades it triggered; last_output is typed object
    assert db.one("SELECT t_st_id FROM trade WHERE t_id = ?", buy.trade_id) == ("SBMT",)
    assert {r[0] for r in db.rows("SELECT th_st_id FROM trade_history WHERE th_t_id = ?", buy.trade_id)} == {
        "PNDG", "SBMT"}
    assert not db.rows("SELECT 1 FROM trade_request WHERE tr_t_id = ?", buy.trade_id)
    assert db.one("SELECT t_st_id FROM trade WHERE t_id = ?", sell.trade_id) == ("PNDG",)
    price, new_vol = db.one("SELECT lt_price, lt_vol FROM last_trade WHERE lt_s_symb = ?", "AAAABB")
    assert money(price) == Decimal("29.00") and new_vol == vol + 300
    # back at the exchange, the triggered buy is executed at its limit
    assert buy.trade_id in {o[2]: o[4] for o in exchange._orders} and {o[2]: o[4] for o in exchange._orders}[
        buy.trade_id] == Decimal("30.00")


def test_the_exchange_turns_orders_into_results_and_twenty_entries_into_a_feed(
        db: Db, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mee, "DELAY_MAX_S", 0.01)
    exchange = MarketExchange(SEED, 0)
    user, market = db.user(exchange), db.market(exchange)
    orders = [order(user, "TMB", acct=user.world.customers[20 + k].accounts[0]) for k in range(10)]
    for inputs in orders:
        assert user.execute("trade_order", inputs)
    done: Counter[str] = Counter()
    for _ in range(200):
        name = market.next_transaction()
        if name:
            assert market.execute(name, market.inputs(name))
            done[name] += 1
        if done["market_feed"]:
            break
    assert done == {"trade_result": 10, "market_feed": 1}
    ids = [o.trade_id for o in orders]
    assert db.rows(f"SELECT COUNT(*) FROM trade WHERE t_st_id = 'CMPT' AND t_id IN ({', '.join(map(str, ids))})") == [
        (10,)]


# -- the read-only transactions ----------------------------------------------------------------
def test_the_read_only_transactions_return_what_their_frames_read(db: Db) -> None:
    user = db.user()
    acct = next(a for c in user.world.customers for a in c.accounts
                if db.one("SELECT COUNT(*) FROM trade WHERE t_ca_id = ?", a)[0] > 5)
    assert user.execute("trade_status", TradeStatusInputs(acct))
    status = user.last_output
    n = db.one("SELECT COUNT(*) FROM trade WHERE t_ca_id = ?", acct)[0]
    assert len(status.trades) == min(50, n) and [t[1] for t in status.trades] == sorted(
        (t[1] for t in status.trades), reverse=True)
    customer = user.world.customers[user.world.owner[acct]]
    assert (status.c_f_name, status.c_l_name) == (customer.f_name, customer.l_name)
    for by_tax in (False, True):
        inputs = user.inputs("customer_position")
        inputs.cust_id, inputs.tax_id, inputs.get_history = (0, customer.tax_id, True) if by_tax else (
            customer.c_id, "", True)
        assert user.execute("customer_position", inputs)
        out = user.last_output
        assert sorted(a[0] for a in out.accounts) == sorted(customer.accounts)[:10] and len(out.history) <= 30
    # Broker-Volume against the pending orders summed here
    sector = user.world.sectors[0]
    assert user.execute("broker_volume", BrokerVolumeInputs(list(user.world.brokers), sector))
    want: dict[str, Decimal] = defaultdict(Decimal)
    for name, qty, bid in db.rows(
            "SELECT b_name, tr_qty, tr_bid_price FROM trade_request, broker, security, company, industry, sector"
            " WHERE b_id = tr_b_id AND s_symb = tr_s_symb AND co_id = s_co_id AND in_id = co_in_id"
            " AND sc_id = in_sc_id AND sc_name = ?", sector):
        want[name] += qty * money(bid)
    assert {name: money(v) for name, v in user.last_output} == want and want
    detail = user.inputs("security_detail")
    detail.max_rows, detail.access_lob = 7, True
    assert user.execute("security_detail", detail)
    sd = user.last_output
    assert len(sd.days) == 7 and len(sd.financials) == 20 and len(sd.competitors) == 3 and len(sd.news) == 2
    assert len(sd.news[0]) == 6 and all(d[0] >= sd.days[0][0] for d in sd.days)
    # Trade-Lookup, frame by frame
    for frame in (1, 2, 3, 4):
        inputs = user.inputs("trade_lookup")
        while inputs.frame != frame:
            inputs = user.inputs("trade_lookup")
        assert user.execute("trade_lookup", inputs)
        out = user.last_output
        if frame == 1:
            assert sorted(t[0] for t in out.trades) == inputs.trade_ids and len(out.trades) == 20
        if frame in (1, 2, 3):
            assert all(len(changes) <= 3 for changes in out.history.values()) and set(out.history) <= {
                t[0] for t in out.trades}
        elif out.trades:
            lots = {r[0] for r in db.rows("SELECT hh_h_t_id FROM holding_history WHERE hh_t_id = ?", out.trades[0][0])}
            assert len(out.holding_history) <= 20 and {h[0] for h in out.holding_history} <= lots
    market_watch = user.inputs("market_watch")
    assert user.execute("market_watch", market_watch) and isinstance(user.last_output, float)


def test_trade_update_frames_change_what_they_read_and_a_second_call_undoes_it(db: Db) -> None:
    user = db.user()
    ids = sorted(user.draw.trade_ids(20))
    checks = {
        1: ("SELECT t_id, t_exec_name FROM trade WHERE t_id IN ({ids})", TradeLookupInputs(1, ids, 0, "", "", "")),
        2: ("SELECT se_t_id, se_cash_type FROM settlement WHERE se_t_id IN ({ids})", None),
        3: ("SELECT ct_t_id, ct_name FROM cash_transaction WHERE ct_t_id IN ({ids})", None),
    }
    for frame, (sql, fixed) in checks.items():
        # frames 2 and 3 forced by their bounds, from the first initial trade on
        inputs = fixed or replace(trade_lookup.inputs(user.draw, tuple(0 if n < frame else 100 for n in (1, 2, 3))),
                                  start_dts=str(user.world.trade_times[0]))
        assert inputs.frame == frame
        assert user.execute("trade_update", inputs)
        touched = [t[0] for t in user.last_output.trades]
        assert touched, frame
        query = sql.format(ids=", ".join(map(str, touched)))
        first = dict(db.rows(query))
        assert user.execute("trade_update", inputs)
        second = dict(db.rows(query))
        assert first != second or not first
        assert user.execute("trade_update", inputs)
        assert dict(db.rows(query)) == first
    assert trade_update.toggled_name("Ann Lee") == "Ann X Lee" and trade_update.toggled_name("Ann X Lee") == "Ann Lee"


def test_data_maintenance_changes_each_of_its_tables_in_turn(db: Db) -> None:
    component = Maintenance()
    session = component.open_session(db.ctx, db.connect(), db.target, lambda name, us: None)
    symbols = [s.symbol for s in session.world.securities]  # type: ignore[attr-defined]  # a Maintenance session is a TPC-E session, with its world; open_session returns the base type
    watched = "SELECT wi_s_symb FROM watch_item, watch_list WHERE wi_wl_id = wl_id AND wl_c_id = ?"
    # a watch list whose middle symbol is followed by one it holds too: that one is skipped
    c_id, before = next((c, listed) for c in range(1, 200)
                        if (listed := sorted(r[0].rstrip() for r in db.rows(watched, c)))
                        and symbols[symbols.index(listed[len(listed) // 2]) + 1] in listed)
    tables = []
    for _ in range(12):
        inputs = session.inputs("data_maintenance")
        if inputs.table == "watch_item":  # type: ignore[attr-defined]  # Data-Maintenance's inputs; inputs() is typed object for every transaction
            inputs = replace(inputs, c_id=c_id)  # type: ignore[type-var]  # Data-Maintenance's inputs are a dataclass; inputs() is typed object
        assert session.execute("data_maintenance", inputs) and session.last_output >= 1, inputs
        tables.append(inputs.table)  # type: ignore[attr-defined]  # Data-Maintenance's inputs; inputs() is typed object for every transaction
    assert len(set(tables)) == 12 and component.turn == 12
    after = sorted(r[0].rstrip() for r in db.rows(watched, c_id))
    gone, new = set(before) - set(after), set(after) - set(before)
    assert len(after) == len(before) and gone == {before[len(before) // 2]} and len(new) == 1
    assert session.next_transaction() == ""  # the next is due a minute later
    component.stop()


def test_trade_cleanup_cancels_the_orders_runs_left_open(db: Db) -> None:
    user = db.user(MarketExchange(SEED, 0))
    pending, submitted = order(user, "TLS", price="99.00"), order(user, "TMB")
    for inputs in (pending, submitted):
        assert user.execute("trade_order", inputs)
    open_before = db.one("SELECT COUNT(*) FROM trade WHERE t_st_id IN ('PNDG', 'SBMT')")[0]
    cancelled = trade_cleanup.run(db.target, 1)
    assert cancelled["pending"] + cancelled["submitted"] == open_before and cancelled["pending"] >= 1
    assert db.rows("SELECT COUNT(*) FROM trade WHERE t_st_id IN ('PNDG', 'SBMT')") == [(0,)]
    assert db.rows("SELECT COUNT(*) FROM trade_request") == [(0,)]
    assert sorted(r[0] for r in db.rows("SELECT th_st_id FROM trade_history WHERE th_t_id = ?", pending.trade_id)) == [
        "CNCL", "PNDG", "SBMT"]
    assert sorted(r[0] for r in db.rows("SELECT th_st_id FROM trade_history WHERE th_t_id = ?",
                                        submitted.trade_id)) == ["CNCL", "SBMT"]
    failing = {r.number: r.violations for r in check("tpce", db.url) if r.number <= 9 and not r.passed}
    assert failing == {}


# -- a short run of the engine -------------------------------------------------------------------
@slow_on("db", BACKENDS, "postgresql")  # a run of seconds: the quick lane runs SQLite's
def test_a_short_run_realises_the_mix_reconciles_and_passes_the_checks(db: Db, tmp_path: Path) -> None:
    record = run(RunConfig("tpce", db.url, users=[4], rampup_s=1.0, duration_s=6.0, interval_s=3.0, seed=5,
                           results_url=f"sqlite:///{tmp_path}/results.db"), live=None)
    assert record.status == "completed" and not record.outcome.steps[0].problems
    assert record.honesty["match"], record.honesty
    txns = record.outcome.steps[0].summary.txns
    commits = {name: t.commits for name, t in txns.items()}
    total = sum(commits.values())
    customers = total - commits["trade_result"] - commits["market_feed"]
    assert total > 1000 and all(t.errors == 0 for t in txns.values()), {n: t.errors for n, t in txns.items()}
    for name in ("broker_volume", "customer_position", "market_watch", "security_detail", "trade_lookup",
                 "trade_order", "trade_status", "trade_update"):
        assert abs(commits[name] / customers - WEIGHTS[name] / 890) < 0.015, (name, commits)
    # Trade-Result from market orders and limit orders in the money (the others wait for
    # their price, up to 900 s): 8-10% of the mix; a Market-Feed per ten of them
    assert 0.07 < commits["trade_result"] / total < 0.11, commits
    assert abs(commits["market_feed"] - commits["trade_result"] / 10) <= 2 + commits["trade_result"] / 50, commits
    assert txns["trade_order"].rollbacks > 0  # the 1%: expected rollbacks, not errors
    results = check("tpce", db.url)
    assert {r.number for r in results if r.violations is None} == {10, 11}
    assert {r.number: r.violations for r in results if r.violations is not None and not r.passed} == {}


@slow_on("db", BACKENDS, "postgresql")  # a run: the quick lane runs TPC-C's through ODBC
def test_a_run_through_odbc_reconciles_and_passes_the_checks(db: Db, tmp_path: Path) -> None:
    """The same transactions through pyodbc (psqlODBC, MariaDB Connector/ODBC), the path
    SQL Server's would take: ``?`` markers, parameters typed by the ODBC driver."""
    import pyodbc
    from sqlalchemy.engine import make_url

    driver = {"postgresql": "PostgreSQL Unicode", "mysql": "MariaDB Unicode"}.get(db.target.dialect)
    if driver is None:
        pytest.skip("no ODBC path for SQLite here")
    if driver not in pyodbc.drivers():
        unavailable(f"ODBC driver {driver!r}", f"installed: {pyodbc.drivers()}")
    url = make_url(db.url)
    odbc = url.set(drivername=f"{url.get_backend_name()}+pyodbc", query={"driver": driver})
    record = run(RunConfig("tpce", odbc.render_as_string(hide_password=False), users=[2], rampup_s=0.5,
                           duration_s=3.0, interval_s=1.5, seed=6, results_url=f"sqlite:///{tmp_path}/results.db"),
                 live=None, observers=[])
    txns = record.outcome.steps[0].summary.txns
    assert record.status == "completed" and record.honesty["match"], record.honesty
    assert all(t.errors == 0 for t in txns.values()), {n: t.errors for n, t in txns.items()}
    assert txns["trade_order"].commits > 0 and txns["trade_result"].commits > 0
    results = check("tpce", db.url)
    assert {r.number: r.violations for r in results if r.violations is not None and not r.passed} == {}


# -- no database ------------------------------------------------------------------------------
def test_the_statements_are_built_for_every_dialect_and_sql_server_parses_them() -> None:
    import sqlglot

    from tpsbench.workloads.tpce.table import statements

    def texts(s: Any) -> list[str]:
        """Every statement of the table: its strings, and those of its tuples, in every
        transaction's statements."""
        values = [getattr(part, f.name) for part in astuple_shallow(s) for f in fields(part)]
        found = [v for v in values if isinstance(v, str) and v]
        return found + [t for v in values if isinstance(v, tuple) for t in v if isinstance(t, str)]

    def astuple_shallow(s: Any) -> list[Any]:
        return [getattr(s, f.name) for f in fields(s)]

    dialects = sql_dialects()
    assert set(dialects) == {"postgresql", "mysql", "sqlite", "mssql"}
    for dialect in dialects.values():
        for mark in ("?", "%s"):
            found = texts(statements(dialect, mark))
            other = "%s" if mark == "?" else "?"
            assert len(found) > 250 and not any(other in t for t in found)
            assert all(("%%" in t) == ("%" in t.replace("%s", "")) for t in found if mark == "%s")
    mssql = texts(statements(dialects["mssql"]))
    for text in mssql + [sql for _, sql in trade_cleanup.statements("2026-01-01 00:00:00")]:
        sqlglot.parse_one(text, read="tsql")
        assert " LIMIT " not in text and "FOR UPDATE" not in text
    assert sum("TOP 20 " in t for t in mssql) >= 4 and sum("WITH (UPDLOCK, ROWLOCK)" in t for t in mssql) >= 3
    assert "FOR UPDATE" not in str(vars(statements(dialects["sqlite"])))


def synthetic_world(customers: int = 1000) -> Any:
    """A universe of ``customers`` with three accounts each (one permitting a stranger),
    100 securities and 10,000 initial trades, for drawing inputs without a database."""
    from datetime import date, datetime

    from tpsbench.workloads.tpce.universe import Customer, Security, Universe

    people = tuple(Customer(c, f"T{c}", 1 + c % 3, f"F{c}", f"L{c}", (3 * c, 3 * c + 1, 3 * c + 2))
                   for c in range(1, customers + 1))
    return Universe(
        customers=people, permitted={3 * c: (("Other", "Person", f"P{c}"),) for c in range(1, customers + 1)},
        securities=tuple(Security(f"S{k:05d}", "COMMON", f"Co {k}", Decimal("25.00")) for k in range(100)),
        brokers=tuple(f"B{k}" for k in range(10)), sectors=("Tech",), industries=("Chips",), companies=(1, 500),
        trade_ids=(1, 10_000), trade_times=(datetime(2026, 1, 1, 9), datetime(2026, 1, 1, 17)),
        market_days=(date(2025, 12, 1), date(2026, 1, 1)), tax_ids=("N000", "D000"), exchanges=("NYSE",),
        owner={a: c - 1 for c in range(1, customers + 1) for a in (3 * c, 3 * c + 1, 3 * c + 2)})


def share(values: list[bool]) -> float:
    return sum(values) / len(values)


def test_the_deck_and_the_sub_mixes_follow_b2_with_skewed_customers_and_trades() -> None:
    from tpsbench.core.transactions import Deck, shuffled_copy
    from tpsbench.workloads.tpce import (
        broker_volume,
        customer_position,
        market_watch,
        security_detail,
        trade_order,
    )
    from tpsbench.workloads.tpce.mix import Draws, price_range
    from tpsbench.workloads.tpce.table import CUSTOMER_WEIGHTS, TABLE

    draw = Draws(3, 0, synthetic_world())
    deck = Deck(TABLE.cards(), shuffled_copy(draw.rng))
    dealt = Counter(deck.draw() for _ in range(8900))
    assert dealt == {name: 10 * n for name, n in CUSTOMER_WEIGHTS.items()} and sum(CUSTOMER_WEIGHTS.values()) == 890
    orders = [trade_order.inputs(draw, k) for k in range(20_000)]
    types = Counter(o.trade_type for o in orders)
    assert abs((types["TMB"] + types["TMS"]) / 20_000 - 0.60) < 0.015 and abs(types["TMB"] / types["TMS"] - 1) < 0.1
    limits = types["TLB"] + types["TLS"] + types["TSL"]
    assert abs(types["TLB"] / limits - 0.5) < 0.03 and abs(types["TSL"] / limits - 0.25) < 0.03
    assert abs(share([o.symbol == "" for o in orders]) - 0.40) < 0.015
    assert abs(share([o.is_lifo for o in orders]) - 0.35) < 0.015
    assert abs(share([o.is_margin for o in orders]) - 0.08) < 0.008
    assert abs(share([o.roll_it_back for o in orders]) - 0.01) < 0.003
    permitting = [o for o in orders if o.acct_id % 3 == 0]
    assert abs(share([o.exec_f_name == "Other" for o in permitting]) - 0.10) < 0.02
    assert {o.trade_qty for o in orders} == set(trade_order.QUANTITIES)
    low, high = price_range(Decimal("25.00"))
    assert all(low <= o.requested_price <= high for o in orders)
    positions = [customer_position.inputs(draw) for _ in range(4000)]
    assert abs(share([p.cust_id == 0 for p in positions]) - 0.5) < 0.03
    assert abs(share([p.get_history for p in positions]) - 0.5) < 0.03
    watches = Counter(market_watch.inputs(draw).kind for _ in range(10_000))
    assert [round(watches[k] / 10_000, 2) for k in range(3)] == pytest.approx([0.60, 0.05, 0.35], abs=0.015)
    details = [security_detail.inputs(draw) for _ in range(20_000)]
    assert abs(share([d.access_lob for d in details]) - 0.01) < 0.003
    assert {d.max_rows for d in details} == set(range(5, 21))
    frames = Counter(trade_lookup.inputs(draw).frame for _ in range(10_000))
    assert [frames[f] / 10_000 for f in (1, 2, 3, 4)] == pytest.approx([0.3, 0.3, 0.3, 0.1], abs=0.015)
    frames = Counter(trade_update.inputs(draw).frame for _ in range(10_000))
    assert [frames[f] / 10_000 for f in (1, 2, 3)] == pytest.approx([0.33, 0.33, 0.34], abs=0.015)
    assert all(20 >= len(broker_volume.inputs(draw).brokers) == 10 for _ in range(50))  # capped at the brokers
    # the skews: the busiest tenth of the customers gets far more than a tenth of the picks,
    # and the newest tenth of the initial trades nearly half of the look-ups
    picks = Counter(draw.customer().c_id for _ in range(50_000))
    assert sum(n for _, n in picks.most_common(100)) / 50_000 > 0.2 and len(picks) > 900
    ids = [draw.trade_id() for _ in range(50_000)]
    assert 0.42 < share([t > 9000 for t in ids]) < 0.51 and min(ids) < 500
    assert all(d.weekday() < 5 for d in (draw.market_day() for _ in range(500)))
