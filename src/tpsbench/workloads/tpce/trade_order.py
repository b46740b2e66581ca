"""Trade-Order (TPC-E, B2): a customer, or someone the account permits, places an order.

Frames, in one read-write transaction:

1. the account with its customer and broker (one join);
2. when the executor is not the owner, the executor's ACCOUNT_PERMISSION row (none: the
   order is refused, which EGen never asks for, so it counts as an error);
3. the security, by symbol or by company name and issue, its last price and the trade
   type; the account's holding summary and, where the order closes lots (a sell of a
   long position, a buy of a short one), those lots in LIFO or FIFO order for the tax
   estimate; the customer's tax rates when that gains; commission rate and charge; the
   account balance, and for a margin order the holdings' market value;
4. INSERT TRADE (status SBMT for a market order, PNDG for a limit order), for a limit
   order INSERT TRADE_REQUEST, and INSERT TRADE_HISTORY;
5. 1% of orders (roll_it_back) are rolled back here, after all of that work: an
   expected rollback, not an error, as TPC-C's New-Order rollback is;
6. commit; then the session hands the order to its worker's market exchange emulator
   (mee.py), which turns it into a Trade-Result.

The trade id is the driver's (TpceSession.next_trade_id): unique without a sequence or
auto-increment column, which SQL Server's tables here do not have.

Sub-mix (B2): market 60% / limit 40% (limit: buy 50%, else a sell that is a stop-loss
half of the time); buy 50% of market orders; by company name 40%; LIFO 35%; the owner
executes 90%; margin 8%; rollback 1%; quantity 100, 200, 400 or 800 shares (EGen's).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from tpsbench.core.procedures import requested_rollback
from tpsbench.core.sql import SqlDialect, to_decimal
from tpsbench.workloads.tpce import calls, lots
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import as_text, cents, stamp

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

QUANTITIES = (100, 200, 400, 800)
#: tpce_trade_order's parameters, as PostgreSQL types (calls.routine)
ROUTINE = ("BIGINT", "BIGINT", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
           "INTEGER", "INTEGER", "INTEGER", "NUMERIC", "INTEGER", "TIMESTAMP")
#: the SQLSTATE of PostgreSQL's tpce_trade_order for the requested rollback (frame 5)
ROLLBACK_SQLSTATE = "TPCE1"
#: TAX_STATUS values that pay tax on gains (the account's ca_tax_st)
TAXABLE = (1, 2)


@dataclass(slots=True)
class TradeOrderInputs:
    trade_id: int
    acct_id: int
    exec_f_name: str
    exec_l_name: str
    exec_tax_id: str
    #: the security: its symbol, or "" and its company's name and issue
    symbol: str
    co_name: str
    issue: str
    trade_type: str
    is_lifo: bool
    is_margin: bool
    roll_it_back: bool
    #: the limit price of a limit order (a market order trades at the last price)
    requested_price: Decimal
    trade_qty: int


@dataclass(slots=True)
class TradeOrderOutput:
    """The order as the market exchange emulator gets it, and what the frames found."""

    trade_id: int
    symbol: str
    trade_type: str
    qty: int
    #: the bid (limit) price, or the market price a market order was placed at
    price: Decimal
    is_market: bool
    is_sell: bool
    buy_value: Decimal
    sell_value: Decimal
    tax_amount: Decimal
    #: the balance, and for a margin order the holdings' market value too (frame 3)
    acct_assets: Decimal
    status: str


@dataclass(frozen=True, slots=True)
class TradeOrderSql:
    to_account: str
    to_permission: str
    to_by_symbol: str
    to_by_name: str
    to_market: str
    to_summary: str
    to_holdings: tuple[str, str]
    to_tax_rate: str
    to_rates: str
    to_assets: str
    to_trade: str
    to_request: str
    to_history: str
    highest_trade_id: str
    #: the stored procedure's call ("" where the dialect has none)
    call: str


def statements(d: SqlDialect) -> TradeOrderSql:
    holdings = ("SELECT h_t_id, h_qty, h_price FROM holding WHERE h_ca_id = ? AND h_s_symb = ?"
                " ORDER BY h_dts {order}, h_t_id {order}")
    return TradeOrderSql(
        to_account=(
            "SELECT ca_name, ca_b_id, ca_c_id, ca_tax_st, ca_bal, c_f_name, c_l_name, c_tier, c_tax_id, b_name"
            " FROM customer_account, customer, broker WHERE ca_id = ? AND c_id = ca_c_id AND b_id = ca_b_id"),
        to_permission=("SELECT ap_acl FROM account_permission WHERE ap_ca_id = ? AND ap_f_name = ?"
                       " AND ap_l_name = ? AND ap_tax_id = ?"),
        to_by_symbol=("SELECT s_co_id, s_ex_id, s_name, s_symb, co_name FROM security, company"
                      " WHERE s_symb = ? AND co_id = s_co_id"),
        to_by_name=("SELECT s_co_id, s_ex_id, s_name, s_symb, co_name FROM company, security"
                    " WHERE co_name = ? AND s_co_id = co_id AND s_issue = ?"),
        to_market=("SELECT lt_price, tt_is_mrkt, tt_is_sell FROM last_trade, trade_type"
                   " WHERE lt_s_symb = ? AND tt_id = ?"),
        to_summary="SELECT hs_qty FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?",
        #: (FIFO, LIFO): indexed by is_lifo
        to_holdings=(holdings.format(order="ASC"), holdings.format(order="DESC")),
        to_tax_rate=("SELECT SUM(tx_rate) FROM taxrate, customer_taxrate WHERE tx_id = cx_tx_id"
                     " AND cx_c_id = ?"),
        to_rates=("SELECT cr_rate, ch_chrg FROM commission_rate, charge WHERE cr_c_tier = ? AND cr_tt_id = ?"
                  " AND cr_ex_id = ? AND cr_from_qty <= ? AND cr_to_qty >= ? AND ch_c_tier = cr_c_tier"
                  " AND ch_tt_id = cr_tt_id"),
        to_assets=("SELECT SUM(hs_qty * lt_price) FROM holding_summary, last_trade WHERE hs_ca_id = ?"
                   " AND lt_s_symb = hs_s_symb"),
        to_trade=(
            "INSERT INTO trade (t_id, t_dts, t_st_id, t_tt_id, t_is_cash, t_s_symb, t_qty, t_bid_price, t_ca_id,"
            " t_exec_name, t_trade_price, t_chrg, t_comm, t_tax, t_lifo)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, 0, ?)"),
        to_request=("INSERT INTO trade_request (tr_t_id, tr_tt_id, tr_s_symb, tr_qty, tr_bid_price, tr_b_id)"
                    " VALUES (?, ?, ?, ?, ?, ?)"),
        to_history="INSERT INTO trade_history (th_t_id, th_dts, th_st_id) VALUES (?, ?, ?)",
        #: where a session's trade ids start (TpceSession.rebind)
        highest_trade_id="SELECT MAX(t_id) FROM trade",
        call=calls.routine(d, "trade_order", ROUTINE),
    )


def inputs(draw: Draws, trade_id: int) -> TradeOrderInputs:
    """The sub-mix of the module docstring, over a skewed customer's account."""
    world = draw.world
    acct_id = draw.account()
    owner = world.customers[world.owner[acct_id]]
    others = world.permitted.get(acct_id, ())
    if others and draw.percent() > 90:
        f_name, l_name, tax_id = draw.pick(others)
    else:
        f_name, l_name, tax_id = owner.f_name, owner.l_name, owner.tax_id
    security = draw.pick(world.securities)
    symbol = "" if draw.percent() <= 40 else security.symbol
    if draw.percent() <= 60:
        trade_type = "TMB" if draw.percent() <= 50 else "TMS"
    elif draw.percent() <= 50:
        trade_type = "TLB"
    else:
        trade_type = "TSL" if draw.percent() <= 50 else "TLS"
    return TradeOrderInputs(
        trade_id, acct_id, f_name, l_name, tax_id, symbol, security.co_name, security.issue, trade_type,
        is_lifo=draw.percent() <= 35, is_margin=draw.percent() <= 8, roll_it_back=draw.percent() == 1,
        requested_price=draw.limit_price(security), trade_qty=draw.pick(QUANTITIES))


def drawn(user: FramesSession) -> TradeOrderInputs:
    """The inputs from the user's draws, with its next trade id."""
    return inputs(user.draw, user.next_trade_id())


def run(user: FramesSession, inp: TradeOrderInputs) -> TradeOrderOutput | None:
    """The frames on the user's link, its transaction left open for the caller to commit; None
    after frame 5's rollback request (the caller rolls back)."""
    link, s = user.link, user.sql.trade_order
    cur = link.cur
    link.begin()
    # -- frame 1 ------------------------------------------------------------------------
    cur.execute(s.to_account, (inp.acct_id,))
    account = cur.fetchone()
    if account is None:
        raise LookupError(f"Trade-Order: no account {inp.acct_id}")
    _, b_id, c_id, tax_status, balance, f_name, l_name, tier, tax_id, _ = account
    # -- frame 2 ------------------------------------------------------------------------
    if (inp.exec_f_name, inp.exec_l_name, inp.exec_tax_id) != (f_name, l_name, tax_id):
        cur.execute(s.to_permission, (inp.acct_id, inp.exec_f_name, inp.exec_l_name, inp.exec_tax_id))
        if cur.fetchone() is None:
            raise LookupError(f"Trade-Order: {inp.exec_f_name} {inp.exec_l_name} may not trade on {inp.acct_id}")
    # -- frame 3 ------------------------------------------------------------------------
    if inp.symbol:
        cur.execute(s.to_by_symbol, (inp.symbol,))
    else:
        cur.execute(s.to_by_name, (inp.co_name, inp.issue))
    security = cur.fetchone()
    if security is None:
        raise LookupError(f"Trade-Order: no security {inp.symbol or (inp.co_name, inp.issue)}")
    _, ex_id, _, symbol, _ = security
    symbol = as_text(symbol)
    cur.execute(s.to_market, (symbol, inp.trade_type))
    market = cur.fetchone()
    if market is None:
        raise LookupError(f"Trade-Order: no last trade of {symbol} or no trade type {inp.trade_type}")
    is_market, is_sell = bool(market[1]), bool(market[2])
    price = to_decimal(market[0]) if is_market else inp.requested_price
    cur.execute(s.to_summary, (inp.acct_id, symbol))
    row = cur.fetchone()
    hs_qty = int(row[0]) if row is not None else 0
    buy_value = sell_value = tax_amount = Decimal(0)
    if (is_sell and hs_qty > 0) or (not is_sell and hs_qty < 0):
        cur.execute(s.to_holdings[inp.is_lifo], (inp.acct_id, symbol))
        held = [(int(t), int(q), to_decimal(p)) for t, q, p in cur.fetchall()]
        buy_value, sell_value = lots.take(held, inp.trade_qty, price, is_sell).values(is_sell)
    if sell_value > buy_value and int(tax_status) in TAXABLE:
        cur.execute(s.to_tax_rate, (c_id,))
        rate = cur.fetchone()[0]
        tax_amount = cents((sell_value - buy_value) * to_decimal(rate or 0))
    cur.execute(s.to_rates, (tier, inp.trade_type, ex_id, inp.trade_qty, inp.trade_qty))
    rates = cur.fetchone()
    if rates is None:
        raise LookupError(f"Trade-Order: no commission rate or charge for tier {tier}, {inp.trade_type}")
    comm_rate, charge = to_decimal(rates[0]), to_decimal(rates[1])
    acct_assets = to_decimal(balance)
    if inp.is_margin:
        cur.execute(s.to_assets, (inp.acct_id,))
        acct_assets += to_decimal(cur.fetchone()[0] or 0)
    status = "SBMT" if is_market else "PNDG"
    # -- frame 4 ------------------------------------------------------------------------
    comm = cents(comm_rate / 100 * inp.trade_qty * price)
    now = stamp(datetime.now(UTC))
    money = link.money
    cur.execute(s.to_trade, (
        inp.trade_id, now, status, inp.trade_type, int(not inp.is_margin), symbol, inp.trade_qty, money(price),
        inp.acct_id, f"{inp.exec_f_name} {inp.exec_l_name}", money(charge), money(comm), int(inp.is_lifo)))
    if not is_market:
        cur.execute(s.to_request, (inp.trade_id, inp.trade_type, symbol, inp.trade_qty, money(price), b_id))
    cur.execute(s.to_history, (inp.trade_id, now, status))
    # -- frame 5 ------------------------------------------------------------------------
    if inp.roll_it_back:
        return None
    return TradeOrderOutput(inp.trade_id, symbol, inp.trade_type, inp.trade_qty, price, is_market, is_sell,
                            buy_value, sell_value, tax_amount, acct_assets, status)


def call(user: FramesSession, inp: TradeOrderInputs) -> tuple[str, tuple]:
    """The whole transaction as one call of tpce_trade_order (procedures.py)."""
    s = user.sql.trade_order
    return s.call, (
        inp.trade_id, inp.acct_id, inp.exec_f_name, inp.exec_l_name, inp.exec_tax_id, inp.symbol, inp.co_name,
        inp.issue, inp.trade_type, int(inp.is_lifo), int(inp.is_margin), int(inp.roll_it_back), inp.requested_price,
        inp.trade_qty, calls.now())


def answer(user: FramesSession, inp: TradeOrderInputs, error: Exception | None) -> bool:
    """The order kept for the exchange; False for the requested rollback, which
    PostgreSQL's function raises (the server has rolled it back) and MySQL's procedure
    answers with NULLs (it has rolled back itself)."""
    if error is not None and requested_rollback(error, ROLLBACK_SQLSTATE):
        return False
    return calls.answered(user, inp, error, decoded)


def decoded(user: FramesSession, inp: TradeOrderInputs) -> TradeOrderOutput | None:
    """The order for the exchange, or None: MySQL's procedure rolled back as requested."""
    link = user.link
    symbol, price, is_market, is_sell, buy_value, sell_value, tax, assets, status = link.cur.fetchone()
    if symbol is None:
        return None
    return TradeOrderOutput(inp.trade_id, symbol, inp.trade_type, inp.trade_qty, to_decimal(price), bool(is_market),
                            bool(is_sell), to_decimal(buy_value), to_decimal(sell_value), to_decimal(tax),
                            to_decimal(assets), status)
