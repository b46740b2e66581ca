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
from typing import TYPE_CHECKING, Any

from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce import calls
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import (
    MAX_TRADES,
    counted,
    limit,
    marks,
    stamp,
    top,
)

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

#: status changes kept per trade
HISTORY_ROWS = 3
#: frames 1-4 by percentage: the first whose bound the draw is within
FRAME_BOUNDS = (30, 60, 90, 100)
#: tpce_trade_lookup's parameters, as PostgreSQL types (calls.routine): Trade-Update calls it too
ROUTINE = ("INTEGER", "INTEGER", "BIGINT[]", "BIGINT", "VARCHAR", "TIMESTAMP", "TIMESTAMP")
#: the columns of tpce_trade_lookup's answer that hold each frame's trades, as its statement reads them
ANSWER_TRADES = {1: (0, 1, 2, 3, 4, 5), 2: (0, 1, 2, 3, 5), 3: (0, 6, 2, 3, 5, 7, 8, 9, 10, 11), 4: (0,)}
ANSWER_SETTLEMENTS, ANSWER_HISTORY, ANSWER_HOLDING_HISTORY = range(12, 19), range(19, 22), range(22, 26)


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


@dataclass(frozen=True, slots=True)
class TradeLookupSql:
    tl_trades_k: tuple[str | None, ...]
    tl_by_account: str
    tl_by_symbol: str
    tl_settlements_k: tuple[str | None, ...]
    tl_history_k: tuple[str | None, ...]
    tl_first: str
    tl_holding_history: str
    #: the stored procedure's call ("" where the dialect has none)
    call: str


def statements(d: SqlDialect) -> TradeLookupSql:
    n = MAX_TRADES
    return TradeLookupSql(
        tl_trades_k=counted(lambda k: (
            "SELECT t_id, t_bid_price, t_exec_name, t_is_cash, tt_is_mrkt, t_trade_price FROM trade, trade_type"
            f" WHERE t_id IN ({marks(k)}) AND tt_id = t_tt_id ORDER BY t_id")),
        tl_by_account=(
            f"SELECT {top(d, n)}t_id, t_bid_price, t_exec_name, t_is_cash, t_trade_price FROM trade"
            f" WHERE t_ca_id = ? AND t_dts >= ? AND t_dts <= ? ORDER BY t_dts, t_id{limit(d, n)}"),
        tl_by_symbol=(
            f"SELECT {top(d, n)}t_id, t_ca_id, t_exec_name, t_is_cash, t_trade_price, t_qty, t_dts, t_tt_id,"
            " tt_name, s_name FROM trade, trade_type, security WHERE t_s_symb = ? AND t_dts >= ? AND t_dts <= ?"
            f" AND tt_id = t_tt_id AND s_symb = t_s_symb ORDER BY t_dts, t_id{limit(d, n)}"),
        tl_settlements_k=counted(lambda k: (
            "SELECT se_t_id, se_amt, se_cash_due_date, se_cash_type, ct_amt, ct_dts, ct_name"
            f" FROM settlement LEFT JOIN cash_transaction ON ct_t_id = se_t_id WHERE se_t_id IN ({marks(k)})")),
        tl_history_k=counted(lambda k: (
            f"SELECT th_t_id, th_dts, th_st_id FROM trade_history WHERE th_t_id IN ({marks(k)})"
            " ORDER BY th_t_id, th_dts")),
        tl_first=(f"SELECT {top(d, 1)}t_id FROM trade WHERE t_ca_id = ? AND t_dts >= ?"
                  f" ORDER BY t_dts, t_id{limit(d, 1)}"),
        tl_holding_history=(
            f"SELECT {top(d, n)}hh_h_t_id, hh_t_id, hh_before_qty, hh_after_qty FROM holding_history"
            " WHERE hh_h_t_id IN (SELECT hh_h_t_id FROM holding_history WHERE hh_t_id = ?)"
            f" ORDER BY hh_h_t_id, hh_t_id{limit(d, n)}"),
        call=calls.routine(d, "trade_lookup", ROUTINE),
    )


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


def drawn(user: FramesSession) -> TradeLookupInputs:
    """The inputs from the user's draws."""
    return inputs(user.draw)


def run(user: FramesSession, inp: TradeLookupInputs) -> TradeLookupOutput:
    link, s = user.link, user.sql.trade_lookup
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


def trades(cur: Any, s: TradeLookupSql, inp: TradeLookupInputs) -> list[tuple]:
    """Frames 1-3's trades (their first column is t_id)."""
    if inp.frame == 1:
        cur.execute(s.tl_trades_k[len(inp.trade_ids)], inp.trade_ids)
    elif inp.frame == 2:
        cur.execute(s.tl_by_account, (inp.acct_id, inp.start_dts, inp.end_dts))
    else:
        cur.execute(s.tl_by_symbol, (inp.symbol, inp.start_dts, inp.end_dts))
    return [tuple(row) for row in cur.fetchall()]


def details(cur: Any, s: TradeLookupSql, out: TradeLookupOutput) -> None:
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


def call(user: FramesSession, inp: TradeLookupInputs, update: int = 0) -> tuple[str, tuple]:
    """The whole transaction as one call of tpce_trade_lookup (procedures.py); ``update``
    1: Trade-Update's changes as well. Times a frame does not use go as NULL."""
    link, s = user.link, user.sql.trade_lookup
    return s.call, (update, inp.frame, calls.as_list(link, inp.trade_ids), inp.acct_id, inp.symbol,
                    inp.start_dts or None, inp.end_dts or None)


def answer(user: FramesSession, inp: TradeLookupInputs, error: Exception | None) -> bool:
    return calls.answered(user, inp, error, decoded)


def decoded(user: FramesSession, inp: TradeLookupInputs) -> TradeLookupOutput:
    """The call's answer, Trade-Lookup's and Trade-Update's alike."""
    link = user.link
    trades: calls.Part = (ANSWER_TRADES[inp.frame], True)
    if inp.frame == 4:
        rows, holding = calls.parts(link, (trades, (ANSWER_HOLDING_HISTORY, True)), True)
        return TradeLookupOutput(4, rows, holding_history=holding)
    rows, settlements, history = calls.parts(
        link, (trades, (ANSWER_SETTLEMENTS, True), (ANSWER_HISTORY, True)), True)
    out = TradeLookupOutput(inp.frame, rows)
    fill(out, settlements, history)
    return out
