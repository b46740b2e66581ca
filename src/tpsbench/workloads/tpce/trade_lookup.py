"""Trade-Lookup (TPC-E, B2, read-only): trades and their settlement, cash and history.

One of four frames per call (sub-mix 30/30/30/10), each returning at most 20 trades:

1. 20 given trade ids (skewed toward the newest initial trades), with their type;
2. an account's trades from a time on, to the end of the initial trades, oldest first;
3. a symbol's trades in the same kind of range, with the trade type's and security's
   names (Trade-Update's frame 3 reads this too);
4. an account's first trade from a time on, and the HOLDING_HISTORY of the lots that
   trade touched (at most 20 rows).

Frames 1-3 then read the trades' SETTLEMENT (with CASH_TRANSACTION where they have
one) in one statement and their TRADE_HISTORY in another, keeping the first three
status changes of each trade: two statements for the 20 trades where the spec's
frame reads three per trade. Trade-Update (trade_update.py) runs these same statements.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import (
    MAX_TRADES,
    Link,
    Statements,
    counted,
    limit,
    marks,
    stamp,
    top,
)

#: status changes kept per trade
HISTORY_ROWS = 3
#: frames 1-4 by percentage: the first whose bound the draw is within
FRAME_BOUNDS = (30, 60, 90, 100)


@dataclass(slots=True)
class TradeLookupInputs:
    frame: int
    trade_ids: list[int]
    acct_id: int
    symbol: str
    start_dts: str
    end_dts: str


@dataclass(slots=True)
class TradeLookupOutput:
    frame: int
    #: the trades as their frame's first statement reads them
    trades: list[tuple]
    #: t_id -> (se_amt, se_cash_due_date, se_cash_type, ct_amt, ct_dts, ct_name)
    settlements: dict[int, tuple] = field(default_factory=dict)
    #: t_id -> its first status changes, as (th_dts, th_st_id)
    history: dict[int, list[tuple]] = field(default_factory=dict)
    #: frame 4: (hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty)
    holding_history: list[tuple] = field(default_factory=list)


def statements(d: SqlDialect) -> dict[str, Any]:
    n = MAX_TRADES
    return {
        "tl_trades_k": counted(lambda k: (
            "SELECT t_id, t_bid_price, t_exec_name, t_is_cash, tt_is_mrkt, t_trade_price FROM trade, trade_type"
            f" WHERE t_id IN ({marks(k)}) AND tt_id = t_tt_id ORDER BY t_id")),
        "tl_by_account": (
            f"SELECT {top(d, n)}t_id, t_bid_price, t_exec_name, t_is_cash, t_trade_price FROM trade"
            f" WHERE t_ca_id = ? AND t_dts >= ? AND t_dts <= ? ORDER BY t_dts, t_id{limit(d, n)}"),
        "tl_by_symbol": (
            f"SELECT {top(d, n)}t_id, t_ca_id, t_exec_name, t_is_cash, t_trade_price, t_qty, t_dts, t_tt_id,"
            " tt_name, s_name FROM trade, trade_type, security WHERE t_s_symb = ? AND t_dts >= ? AND t_dts <= ?"
            f" AND tt_id = t_tt_id AND s_symb = t_s_symb ORDER BY t_dts, t_id{limit(d, n)}"),
        "tl_settlements_k": counted(lambda k: (
            "SELECT se_t_id, se_amt, se_cash_due_date, se_cash_type, ct_amt, ct_dts, ct_name"
            f" FROM settlement LEFT JOIN cash_transaction ON ct_t_id = se_t_id WHERE se_t_id IN ({marks(k)})")),
        "tl_history_k": counted(lambda k: (
            f"SELECT th_t_id, th_dts, th_st_id FROM trade_history WHERE th_t_id IN ({marks(k)})"
            " ORDER BY th_t_id, th_dts")),
        "tl_first": (f"SELECT {top(d, 1)}t_id FROM trade WHERE t_ca_id = ? AND t_dts >= ?"
                     f" ORDER BY t_dts, t_id{limit(d, 1)}"),
        "tl_holding_history": (
            f"SELECT {top(d, n)}hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty FROM holding_history"
            " WHERE hh_h_t_id IN (SELECT hh_h_t_id FROM holding_history WHERE hh_t_id = ?)"
            f" ORDER BY hh_h_t_id, hh_t_id{limit(d, n)}"),
    }


def inputs(draw: Draws, bounds: tuple[int, ...] = FRAME_BOUNDS) -> TradeLookupInputs:
    """A frame by ``bounds`` (cumulative percentages) and its inputs; Trade-Update draws
    its three frames the same way, with bounds of its own."""
    pick = draw.percent()
    frame = next(number for number, bound in enumerate(bounds, 1) if pick <= bound)
    end = stamp(draw.world.trade_times[1])
    if frame == 1:
        return TradeLookupInputs(1, draw.trade_ids(MAX_TRADES), 0, "", "", "")
    start = stamp(draw.moment())
    if frame == 3:
        return TradeLookupInputs(3, [], 0, draw.symbol(), start, end)
    return TradeLookupInputs(frame, [], draw.account(), "", start, end)


def execute(link: Link, s: Statements, inp: TradeLookupInputs) -> TradeLookupOutput:
    cur = link.cur
    if inp.frame == 4:
        cur.execute(s.tl_first, (inp.acct_id, inp.start_dts))
        first = cur.fetchone()
        out = TradeLookupOutput(4, [tuple(first)] if first else [])
        if first is not None:
            cur.execute(s.tl_holding_history, (first[0],))
            out.holding_history = [tuple(row) for row in cur.fetchall()]
        return out
    out = TradeLookupOutput(inp.frame, trades(cur, s, inp))
    details(cur, s, out)
    return out


def trades(cur: Any, s: Statements, inp: TradeLookupInputs) -> list[tuple]:
    """Frames 1-3's trades (their first column is t_id)."""
    if inp.frame == 1:
        cur.execute(s.tl_trades_k[len(inp.trade_ids)], inp.trade_ids)
    elif inp.frame == 2:
        cur.execute(s.tl_by_account, (inp.acct_id, inp.start_dts, inp.end_dts))
    else:
        cur.execute(s.tl_by_symbol, (inp.symbol, inp.start_dts, inp.end_dts))
    return [tuple(row) for row in cur.fetchall()]


def details(cur: Any, s: Statements, out: TradeLookupOutput) -> None:
    """The settlements, cash transactions and first status changes of ``out.trades``."""
    ids = [row[0] for row in out.trades]
    if not ids:
        return
    cur.execute(s.tl_settlements_k[len(ids)], ids)
    settlements = cur.fetchall()
    cur.execute(s.tl_history_k[len(ids)], ids)
    fill(out, settlements, cur.fetchall())


def fill(out: TradeLookupOutput, settlements: Iterable[Sequence[Any]], history: Iterable[Sequence[Any]]) -> None:
    """``out``'s settlements and first status changes from the rows of the two statements
    of :func:`details` (a stored procedure's answer gives the same rows)."""
    out.settlements = {row[0]: tuple(row[1:]) for row in settlements}
    for t_id, dts, st_id in history:
        changes = out.history.setdefault(t_id, [])
        if len(changes) < HISTORY_ROWS:
            changes.append((dts, st_id))
