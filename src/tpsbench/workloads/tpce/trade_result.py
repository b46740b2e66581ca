"""Trade-Result (TPC-E, B2): the market has executed an order; the brokerage books it.

Sent by the market exchange emulator (mee.py) only, with the trade id and the price it
traded at. The six frames in one read-write transaction, their reads gathered into
three statements and their writes into as few as the rows allow (about 10 round trips
where the frames' statements one by one take some 20; the Trade-Result is the mix's
heaviest transaction, and its executors have to keep up with the orders):

- locks: the trade and its account row, together (``FOR UPDATE`` on the join: the two
  rows, by primary key). Trade-Results of one account run one after the other, so two
  of them never walk the same lots or both insert the account's first holding summary
  of a symbol; only Trade-Result writes holdings, so this lock guards them, and they
  are read without locks, which takes no gap locks on MySQL (where two inserts into one
  gap would deadlock);
- frames 1, 3 and 4's reads, in one statement after the lock (so MySQL's snapshot,
  taken at the first plain read, sees the account's last Trade-Result): the trade
  type, the security, the customer's tier and commission rate, the holding summary of
  (account, symbol) and the customer's tax rate;
- frame 2: the lots a sell takes from (long) or a buy (short), LIFO or FIFO as the
  order said (lots.py); HOLDING_HISTORY rows for every lot touched and the one opened,
  in one INSERT; the lots closed deleted at once, the one left smaller updated, a new
  lot for what is left over; HOLDING_SUMMARY inserted, updated, or deleted when the
  position closes (after its lots: they refer to it);
- frames 3 and 5: the trade completed (CMPT, commission, price, time, and the tax where
  the trade gained and the account pays tax, ca_tax_st 1 or 2) in one UPDATE, its
  TRADE_HISTORY row, the broker's trade count and commission total;
- frame 6: the SETTLEMENT row, due two days later; for a cash trade the account
  balance and a CASH_TRANSACTION row. The balance is returned from the locked row's
  value and the settlement, rather than read back.

A trade that is not submitted (SBMT) is not booked: the emulator only sends those, so
one that is not is a failure, counted as an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect, money_sql, to_decimal
from tpsbench.workloads.tpce import calls, lots
from tpsbench.workloads.tpce.sql import MAX_TRADES, Link, as_text, cents, counted, day, marks, stamp
from tpsbench.workloads.tpce.trade_order import TAXABLE

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

#: a trade settles this long after it completed
SETTLEMENT_DAYS = 2
#: tpce_trade_result's parameters, as PostgreSQL types (calls.routine)
ROUTINE = ("BIGINT", "NUMERIC", "TIMESTAMP")


@dataclass(slots=True)
class TradeResultInputs:
    trade_id: int
    trade_price: Decimal


@dataclass(slots=True)
class TradeResultOutput:
    trade_id: int
    symbol: str
    qty: int
    price: Decimal
    acct_id: int
    acct_bal: Decimal
    #: the settlement amount: what the account received (negative: paid)
    se_amount: Decimal
    commission: Decimal
    tax: Decimal


@dataclass(frozen=True, slots=True)
class TradeResultSql:
    tr_lock: str
    tr_facts: str
    tr_summary_insert: str
    tr_summary_update: str
    tr_summary_delete: str
    tr_holdings: tuple[str, str]
    tr_lot_history_k: tuple[str | None, ...]
    tr_lot_delete_k: tuple[str | None, ...]
    tr_lot_update: str
    tr_lot_insert: str
    tr_complete: str
    tr_history: str
    tr_broker: str
    tr_settlement: str
    tr_balance: str
    tr_cash: str
    #: the stored procedure's call ("" where the dialect has none)
    call: str


def statements(d: SqlDialect) -> TradeResultSql:
    lock = d.table_lock
    holdings = ("SELECT h_t_id, h_qty, h_price FROM holding WHERE h_ca_id = ? AND h_s_symb = ?"
                " ORDER BY h_dts {order}, h_t_id {order}")
    return TradeResultSql(
        tr_lock=("SELECT t_ca_id, t_tt_id, t_s_symb, t_qty, t_chrg, t_lifo, t_is_cash, t_st_id, ca_b_id, ca_c_id,"
                 f" ca_tax_st, ca_bal FROM trade{lock}, customer_account{lock} WHERE t_id = ? AND ca_id = t_ca_id"
                 f"{d.row_lock}"),
        tr_facts=(
            "SELECT tt_name, tt_is_sell, s_name, cr_rate,"
            " (SELECT hs_qty FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?),"
            " (SELECT SUM(tx_rate) FROM taxrate, customer_taxrate WHERE tx_id = cx_tx_id AND cx_c_id = ?)"
            " FROM trade_type, security, customer, commission_rate WHERE tt_id = ? AND s_symb = ? AND c_id = ?"
            " AND cr_c_tier = c_tier AND cr_tt_id = tt_id AND cr_ex_id = s_ex_id AND cr_from_qty <= ?"
            " AND cr_to_qty >= ?"),
        tr_summary_insert="INSERT INTO holding_summary (hs_ca_id, hs_s_symb, hs_qty) VALUES (?, ?, ?)",
        tr_summary_update="UPDATE holding_summary SET hs_qty = hs_qty + ? WHERE hs_ca_id = ? AND hs_s_symb = ?",
        tr_summary_delete="DELETE FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?",
        #: (FIFO, LIFO): indexed by t_lifo
        tr_holdings=(holdings.format(order="ASC"), holdings.format(order="DESC")),
        tr_lot_history_k=counted(lambda k: (
            "INSERT INTO holding_history (hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty) VALUES "
            + ", ".join(["(?, ?, ?, ?)"] * k))),
        tr_lot_delete_k=counted(lambda k: f"DELETE FROM holding WHERE h_t_id IN ({marks(k)})"),
        tr_lot_update="UPDATE holding SET h_qty = ? WHERE h_t_id = ?",
        tr_lot_insert=("INSERT INTO holding (h_t_id, h_ca_id, h_s_symb, h_dts, h_price, h_qty)"
                       " VALUES (?, ?, ?, ?, ?, ?)"),
        tr_complete=("UPDATE trade SET t_comm = ?, t_dts = ?, t_st_id = 'CMPT', t_trade_price = ?, t_tax = ?"
                     " WHERE t_id = ?"),
        tr_history="INSERT INTO trade_history (th_t_id, th_dts, th_st_id) VALUES (?, ?, 'CMPT')",
        tr_broker=(f"UPDATE broker SET b_comm_total = {money_sql(d, 'b_comm_total + ?')},"
                   " b_num_trades = b_num_trades + 1 WHERE b_id = ?"),
        tr_settlement=("INSERT INTO settlement (se_t_id, se_cash_type, se_cash_due_date, se_amt)"
                       " VALUES (?, ?, ?, ?)"),
        tr_balance=f"UPDATE customer_account SET ca_bal = {money_sql(d, 'ca_bal + ?')} WHERE ca_id = ?",
        tr_cash="INSERT INTO cash_transaction (ct_t_id, ct_dts, ct_amt, ct_name) VALUES (?, ?, ?, ?)",
        call=calls.routine(d, "trade_result", ROUTINE),
    )


def dispatched(user: FramesSession) -> TradeResultInputs:
    """The inputs of the exchange's work the session runs: a market order trades at the
    market's price now."""
    work, exchange = user.work, user.exchange
    assert work is not None and exchange is not None, "a Trade-Result is the exchange's work"
    return TradeResultInputs(work.trade_id, work.price if work.price is not None else exchange.price(work.symbol))


def run(user: FramesSession, inp: TradeResultInputs) -> TradeResultOutput:
    """The frames on the user's link, its transaction left open for the caller to commit."""
    link, s = user.link, user.sql.trade_result
    cur, money, trade_id, price = link.cur, link.money, inp.trade_id, inp.trade_price
    link.begin()
    cur.execute(s.tr_lock, (trade_id,))
    trade = cur.fetchone()
    if trade is None:
        raise LookupError(f"Trade-Result: no trade {trade_id}")
    acct_id, tt_id, symbol, qty, charge, is_lifo, is_cash, status, b_id, c_id, tax_status, balance = trade
    if as_text(status) != "SBMT":
        raise LookupError(f"Trade-Result: trade {trade_id} is {status}, not submitted")
    symbol, qty = as_text(symbol), int(qty)
    cur.execute(s.tr_facts, (acct_id, symbol, c_id, tt_id, symbol, c_id, qty, qty))
    facts = cur.fetchone()
    if facts is None:
        raise LookupError(f"Trade-Result: no security, customer or commission rate for trade {trade_id}")
    tt_name, is_sell, s_name, comm_rate, hs_qty, tax_rate = facts
    is_sell = bool(is_sell)
    # -- frame 2 ------------------------------------------------------------------------
    now = datetime.now(UTC)
    when = stamp(now)
    taken = _holdings(link, s, trade_id, int(acct_id), symbol, qty, price, is_sell, bool(is_lifo),
                      None if hs_qty is None else int(hs_qty), when)
    # -- frames 3, 4 and 5 --------------------------------------------------------------
    buy_value, sell_value = taken.values(is_sell)
    tax = Decimal(0)
    if sell_value > buy_value and int(tax_status) in TAXABLE:
        tax = cents((sell_value - buy_value) * to_decimal(tax_rate or 0))
    commission = cents(to_decimal(comm_rate) / 100 * qty * price)
    cur.execute(s.tr_complete, (money(commission), when, money(price), money(tax), trade_id))
    cur.execute(s.tr_history, (trade_id, when))
    cur.execute(s.tr_broker, (money(commission), b_id))
    # -- frame 6 ------------------------------------------------------------------------
    value, costs = qty * price, to_decimal(charge) + commission
    se_amount = value - costs if is_sell else -(value + costs)
    if int(tax_status) == 1:
        se_amount -= tax
    due = day((now + timedelta(days=SETTLEMENT_DAYS)).date())
    cur.execute(s.tr_settlement, (trade_id, "Cash Account" if is_cash else "Margin", due, money(se_amount)))
    balance = to_decimal(balance)
    if is_cash:
        cur.execute(s.tr_balance, (money(se_amount), acct_id))
        cur.execute(s.tr_cash, (trade_id, when, money(se_amount), f"{tt_name} {qty} shares of {s_name}"[:100]))
        balance += se_amount
    return TradeResultOutput(trade_id, symbol, qty, price, int(acct_id), balance, se_amount, commission, tax)


def _holdings(link: Link, s: TradeResultSql, trade_id: int, acct_id: int, symbol: str, qty: int, price: Decimal,
              is_sell: bool, is_lifo: bool, hs_qty: int | None, when: str) -> lots.Taken:
    """Frame 2 (module docstring); ``hs_qty`` None: the account holds none of the symbol."""
    cur = link.cur
    held = hs_qty or 0
    signed = -qty if is_sell else qty
    closes = hs_qty is not None and held + signed == 0
    if hs_qty is None:
        cur.execute(s.tr_summary_insert, (acct_id, symbol, signed))
    elif not closes:
        cur.execute(s.tr_summary_update, (signed, acct_id, symbol))
    found: list[lots.Lot] = []
    if (is_sell and held > 0) or (not is_sell and held < 0):
        cur.execute(s.tr_holdings[is_lifo], (acct_id, symbol))
        found = [(int(t), int(q), to_decimal(p)) for t, q, p in cur.fetchall()]
    taken = lots.take(found, qty, price, is_sell)
    history = [(h_t_id, trade_id, before, after) for h_t_id, before, after in taken.changes]
    if taken.left:
        history.append((trade_id, trade_id, 0, taken.left))
    for at in range(0, len(history), MAX_TRADES):
        chunk = history[at:at + MAX_TRADES]
        cur.execute(s.tr_lot_history_k[len(chunk)], [value for row in chunk for value in row])
    closed = [h_t_id for h_t_id, _, after in taken.changes if not after]
    for at in range(0, len(closed), MAX_TRADES):
        ids = closed[at:at + MAX_TRADES]
        cur.execute(s.tr_lot_delete_k[len(ids)], ids)
    for h_t_id, _, after in taken.changes:
        if after:  # at most one lot is left smaller: the last one taken from
            cur.execute(s.tr_lot_update, (after, h_t_id))
    if taken.left:
        cur.execute(s.tr_lot_insert, (trade_id, acct_id, symbol, when, link.money(price), taken.left))
    elif closes:
        cur.execute(s.tr_summary_delete, (acct_id, symbol))
    return taken


def call(user: FramesSession, inp: TradeResultInputs) -> tuple[str, tuple]:
    """The whole transaction as one call of tpce_trade_result (procedures.py)."""
    s = user.sql.trade_result
    return s.call, (inp.trade_id, inp.trade_price, calls.now())


def answer(user: FramesSession, inp: TradeResultInputs, error: Exception | None) -> bool:
    return calls.answered(user, inp, error, decoded)


def decoded(user: FramesSession, inp: TradeResultInputs) -> TradeResultOutput:
    link = user.link
    symbol, qty, acct_id, balance, se_amount, commission, tax = link.cur.fetchone()
    return TradeResultOutput(inp.trade_id, symbol, int(qty), inp.trade_price, int(acct_id), to_decimal(balance),
                             to_decimal(se_amount), to_decimal(commission), to_decimal(tax))
