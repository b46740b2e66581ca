"""TPC-E as stored procedures: one call, one round trip, for each transaction that has several.

Why: the client-SQL frames cost the driver a round trip per statement (a Trade-Result
about ten, a Trade-Update frame 1 twenty-four), and on a small machine every one of
them takes CPU from the database it measures, as TPC-C's did (its procedures.py). With
the run option ``procedures`` on (``auto``: wherever the database has them, PostgreSQL
and MySQL/MariaDB) these are one call of a routine of ``schemas/<db>.sql`` (after
``-- procedures``), installed before the first step. Measured on PostgreSQL, 8 users on
2 cores: 4.9 round trips per transaction became 1.2 and the driver's CPU fell by about a
third, while the server's CPU per transaction stayed about the same (its functions cost
what the round trips did), so TPS gained what the driver gave back, 6% on average over
five 20-second pairs. The transactions sent as calls:

- Trade-Order, Trade-Result and Market-Feed, the writers;
- Trade-Update and Trade-Lookup, one routine for both (``tpce_trade_lookup``, its first
  argument says whether to change what it reads: Trade-Update is Trade-Lookup's frames
  1-3 with changes);
- Security-Detail and Customer-Position.

Broker-Volume and Market-Watch are one statement each and Trade-Status two, all
read-only: they stay client SQL, sent in autocommit like the calls (no BEGIN, no
COMMIT). So do Data-Maintenance (once a minute) and Trade-Cleanup (once a run).

Each routine does what its frames do (the same rows read and written, locks taken in
the same order; the SQL files say where a database makes that differ), one call being
one transaction on a connection in autocommit mode (sql.Link's ``autocommit``):

- a PostgreSQL function runs as one implicit transaction; Trade-Order's 1% requested
  rollback raises SQLSTATE ``TPCE1`` after the order's inserts, the server rolls it all
  back, and the call counts as the expected rollback it is;
- a MySQL/MariaDB procedure opens and commits its own transaction, rolls back on any
  error before passing it on, and rolls the requested rollback back itself, answering
  with a row of NULLs.

Inputs are drawn as for client SQL (the transaction modules' ``inputs``), so a seed gives
the same transactions either way; the time a transaction stamps on its rows is the
driver's (UTC, to the second), as on the client path. Answers decode into the same
output dataclasses: Trade-Order's goes to the market exchange emulator, Trade-Result's
gives it the ticker entry, Market-Feed's triggered orders go back to it (mee.py).

An answer's parts: a PostgreSQL function answers one row, a part of many rows as one
array per column (the driver zips them into rows); a MySQL procedure answers one result
set per part. Lists go in as PostgreSQL arrays or as JSON arrays (MySQL has no array
parameters: its procedures read them with JSON_EXTRACT and JSON_TABLE).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from tpsbench.core.procedures import call_statement, requested_rollback, wants_procedures
from tpsbench.core.sql import SqlDialect, to_decimal
from tpsbench.core.target import Target, error_codes, error_message
from tpsbench.workloads.tpce import market_feed, trade_lookup
from tpsbench.workloads.tpce.customer_position import CustomerPositionInputs, CustomerPositionOutput
from tpsbench.workloads.tpce.market_feed import MarketFeedInputs, Triggered
from tpsbench.workloads.tpce.security_detail import SecurityDetailInputs, SecurityDetailOutput
from tpsbench.workloads.tpce.sql import Statements, stamp
from tpsbench.workloads.tpce.trade_lookup import TradeLookupInputs, TradeLookupOutput
from tpsbench.workloads.tpce.trade_order import TradeOrderInputs, TradeOrderOutput
from tpsbench.workloads.tpce.trade_result import TradeResultInputs, TradeResultOutput

#: the SQLSTATE of PostgreSQL's tpce_trade_order for the requested rollback (frame 5)
ROLLBACK_SQLSTATE = "TPCE1"
#: how a routine refuses where the frames raise LookupError: PostgreSQL's RAISE EXCEPTION
#: (SQLSTATE P0001), MySQL's SIGNAL SQLSTATE '45000' (error 1644)
REFUSED_SQLSTATE, REFUSED_CODE = "P0001", 1644

#: each routine's parameters, as PostgreSQL types (a function is found by them, so the
#: call casts each); MySQL's procedures take as many, lists as JSON text
ROUTINES: dict[str, tuple[str, ...]] = {
    "trade_order": ("BIGINT", "BIGINT", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
                    "VARCHAR", "INTEGER", "INTEGER", "INTEGER", "NUMERIC", "INTEGER", "TIMESTAMP"),
    "trade_result": ("BIGINT", "NUMERIC", "TIMESTAMP"),
    "market_feed": ("VARCHAR[]", "NUMERIC[]", "INTEGER[]", "NUMERIC[]", "NUMERIC[]", "TIMESTAMP"),
    "trade_lookup": ("INTEGER", "INTEGER", "BIGINT[]", "BIGINT", "VARCHAR", "TIMESTAMP", "TIMESTAMP"),
    "security_detail": ("VARCHAR", "INTEGER", "DATE", "INTEGER"),
    "customer_position": ("BIGINT", "VARCHAR", "INTEGER", "INTEGER"),
}

#: one part of an answer: the columns of the PostgreSQL function's row that hold it, and
#: whether it has many rows (an array per column) or one (a value per column)
Part = tuple[Sequence[int], bool]


def statements(d: SqlDialect) -> dict[str, str]:
    """The call of each routine (``call_<routine>``); none where the dialect calls none."""
    if not d.call:
        return {}
    return {f"call_{name}": call_statement(d, f"tpce_{name}", types) for name, types in ROUTINES.items()}


def available(target: Target) -> bool:
    """True where the schema file has the routines (PostgreSQL, MySQL/MariaDB) and the
    driver reads their answers (not through ODBC: pyodbc gives arrays as text)."""
    return bool(target.sql.call) and target.routine_answers


def uses_procedures(options: dict[str, str], target: Target) -> bool:
    """Whether a run with ``options`` calls the routines on ``target`` (a one-line error
    for a bad value, or for ``on`` where there are none)."""
    where = target.sql.name if target.routine_answers else f"{target.sql.name} through {target.driver}"
    return wants_procedures("TPC-E", options, available(target), where)


def call(cur: Any, s: Statements, name: str, inputs: Any) -> Any:
    """``name`` as one call on ``cur`` (autocommit): its output, or None for Trade-Order's
    requested rollback (done by the server or the procedure). A routine's own refusal (a
    row missing, an executor not permitted) is raised as the LookupError the frames raise;
    other failures as the driver raised them. Either way the server or the procedure has
    rolled back already."""
    request, answer = CALLS[name]
    sql, params = request(s, inputs)
    try:
        cur.execute(sql, params)
    except Exception as exc:
        if name == "trade_order" and requested_rollback(exc, ROLLBACK_SQLSTATE):
            return None
        state, code = error_codes(exc)
        if state == REFUSED_SQLSTATE or code == REFUSED_CODE:
            raise LookupError(error_message(exc)) from exc
        raise
    return answer(cur, s, inputs)


def _result_sets(s: Statements) -> bool:
    """MySQL's way (its procedures end their own transactions): an answer of result sets,
    lists as JSON. PostgreSQL's: one row, lists as arrays."""
    return s.dialect.routines_end_transactions


def _list(s: Statements, values: Sequence[Any]) -> str:
    """A list as one text argument: a JSON array (numbers other than ints as text, read
    exactly into DECIMAL), or a PostgreSQL array literal."""
    if _result_sets(s):
        return json.dumps([v if type(v) is int else str(v) for v in values])
    return "{" + ",".join(json.dumps(v) if type(v) is str else str(v) for v in values) + "}"


def _now() -> str:
    """The time a transaction stamps on its rows, as the client path's frames take it."""
    return stamp(datetime.now(UTC))


def _parts(cur: Any, s: Statements, parts: Sequence[Part], drain: bool) -> list[list[tuple]]:
    """The answer's parts as lists of rows (module docstring). ``drain``: the procedure
    answers before its COMMIT, so MySQL's status, which carries a failed COMMIT, is read
    now; answers sent after the COMMIT leave it to the next command (mysqlclient.py)."""
    if not _result_sets(s):
        (row,) = cur.fetchall()
        return [list(zip(*(row[i] or () for i in columns))) if many else [tuple(row[i] for i in columns)]
                for columns, many in parts]
    step = getattr(cur, "next_result_set", None) or cur.nextset
    found = [[tuple(r) for r in cur.fetchall()]]
    for _ in parts[1:]:
        if not step():
            raise LookupError(f"the procedure answered {len(found)} of {len(parts)} result sets")
        found.append([tuple(r) for r in cur.fetchall()])
    while drain and step():
        pass
    return found


# -- the writers ----------------------------------------------------------------------------
def _trade_order_request(s: Statements, inp: TradeOrderInputs) -> tuple[str, tuple]:
    return s.call_trade_order, (
        inp.trade_id, inp.acct_id, inp.exec_f_name, inp.exec_l_name, inp.exec_tax_id, inp.symbol, inp.co_name,
        inp.issue, inp.trade_type, int(inp.is_lifo), int(inp.is_margin), int(inp.roll_it_back), inp.requested_price,
        inp.trade_qty, _now())


def _trade_order_answer(cur: Any, s: Statements, inp: TradeOrderInputs) -> TradeOrderOutput | None:
    """The order for the exchange, or None: MySQL's procedure rolled back as requested."""
    symbol, price, is_market, is_sell, buy_value, sell_value, tax, assets, status = cur.fetchone()
    if symbol is None:
        return None
    return TradeOrderOutput(inp.trade_id, symbol, inp.trade_type, inp.trade_qty, to_decimal(price), bool(is_market),
                            bool(is_sell), to_decimal(buy_value), to_decimal(sell_value), to_decimal(tax),
                            to_decimal(assets), status)


def _trade_result_request(s: Statements, inp: TradeResultInputs) -> tuple[str, tuple]:
    return s.call_trade_result, (inp.trade_id, inp.trade_price, _now())


def _trade_result_answer(cur: Any, s: Statements, inp: TradeResultInputs) -> TradeResultOutput:
    symbol, qty, acct_id, balance, se_amount, commission, tax = cur.fetchone()
    return TradeResultOutput(inp.trade_id, symbol, int(qty), inp.trade_price, int(acct_id), to_decimal(balance),
                             to_decimal(se_amount), to_decimal(commission), to_decimal(tax))


def _market_feed_request(s: Statements, inp: MarketFeedInputs) -> tuple[str, tuple]:
    """Per symbol, in symbol order as the frame has them: its last price, its volume,
    its lowest and its highest price, one list each."""
    ordered = market_feed.per_symbol(inp.entries)
    columns = zip(*(values for _, values in ordered))
    return s.call_market_feed, (_list(s, [symbol for symbol, _ in ordered]), *(_list(s, c) for c in columns), _now())


def _market_feed_answer(cur: Any, s: Statements, inp: MarketFeedInputs) -> list[Triggered]:
    return market_feed.triggered(_parts(cur, s, ((range(5), True),), False)[0])


# -- Trade-Lookup and Trade-Update -----------------------------------------------------------
#: the columns of tpce_trade_lookup's answer that hold each frame's trades, as its statement reads them
_TRADES = {1: (0, 1, 2, 3, 4, 5), 2: (0, 1, 2, 3, 5), 3: (0, 6, 2, 3, 5, 7, 8, 9, 10, 11), 4: (0,)}
_SETTLEMENTS, _HISTORY, _HOLDING_HISTORY = range(12, 19), range(19, 22), range(22, 26)


def _trade_lookup_request(s: Statements, inp: TradeLookupInputs, update: int = 0) -> tuple[str, tuple]:
    """``update`` 1: Trade-Update's changes as well. Times a frame does not use go as NULL."""
    return s.call_trade_lookup, (update, inp.frame, _list(s, inp.trade_ids), inp.acct_id, inp.symbol,
                                 inp.start_dts or None, inp.end_dts or None)


def _trade_update_request(s: Statements, inp: TradeLookupInputs) -> tuple[str, tuple]:
    return _trade_lookup_request(s, inp, 1)


def _trade_lookup_answer(cur: Any, s: Statements, inp: TradeLookupInputs) -> TradeLookupOutput:
    trades: Part = (_TRADES[inp.frame], True)
    if inp.frame == 4:
        rows, holding = _parts(cur, s, (trades, (_HOLDING_HISTORY, True)), True)
        return TradeLookupOutput(4, rows, holding_history=holding)
    rows, settlements, history = _parts(cur, s, (trades, (_SETTLEMENTS, True), (_HISTORY, True)), True)
    out = TradeLookupOutput(inp.frame, rows)
    trade_lookup.fill(out, settlements, history)
    return out


# -- the other readers -----------------------------------------------------------------------
def _security_detail_request(s: Statements, inp: SecurityDetailInputs) -> tuple[str, tuple]:
    return s.call_security_detail, (inp.symbol, inp.max_rows, inp.start_day, int(inp.access_lob))


def _security_detail_answer(cur: Any, s: Statements, inp: SecurityDetailInputs) -> SecurityDetailOutput:
    """The security, competitors, financials, days, last trade and news; the news text
    (the first news column) only where the call asked for it."""
    news = range(58 if inp.access_lob else 59, 64)
    parts: tuple[Part, ...] = ((range(35), False), (range(35, 37), True), (range(37, 50), True),
                               (range(50, 55), True), (range(55, 58), False), (news, True))
    security, competitors, financials, days, last_trade, items = _parts(cur, s, parts, True)
    return SecurityDetailOutput(security[0], competitors, financials, days, last_trade[0], items)


def _customer_position_request(s: Statements, inp: CustomerPositionInputs) -> tuple[str, tuple]:
    return s.call_customer_position, (inp.cust_id, inp.tax_id, int(inp.get_history), inp.acct_index)


def _customer_position_answer(cur: Any, s: Statements, inp: CustomerPositionInputs) -> CustomerPositionOutput:
    parts: tuple[Part, ...] = ((range(23), False), (range(23, 26), True), (range(26, 31), True))
    customer, accounts, history = _parts(cur, s, parts, True)
    return CustomerPositionOutput(customer[0], accounts, history)


#: per transaction sent as a call: (its statement and parameters from the inputs, its
#: output from the call's answer on the cursor)
CALLS: dict[str, tuple[Callable[[Statements, Any], tuple[str, tuple]], Callable[[Any, Statements, Any], Any]]] = {
    "trade_order": (_trade_order_request, _trade_order_answer),
    "trade_result": (_trade_result_request, _trade_result_answer),
    "market_feed": (_market_feed_request, _market_feed_answer),
    "trade_update": (_trade_update_request, _trade_lookup_answer),
    "trade_lookup": (_trade_lookup_request, _trade_lookup_answer),
    "security_detail": (_security_detail_request, _security_detail_answer),
    "customer_position": (_customer_position_request, _customer_position_answer),
}
