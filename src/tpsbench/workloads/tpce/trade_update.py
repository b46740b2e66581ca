"""Trade-Update (TPC-E, B2): Trade-Lookup's frames 1-3, each changing what it reads.

One frame per call (sub-mix 33/33/34), at most 20 trades, every one of them updated
(max_updates 20), each change toggling so that a second update undoes the first:

1. 20 given trades: ``t_exec_name`` gets " X " for its spaces, or loses them;
2. an account's trades from a time on: SETTLEMENT's ``se_cash_type`` swaps between
   "Cash Account" and "Cash" (cash trades) or "Margin Account" and "Margin";
3. a symbol's trades in a time range: the CASH_TRANSACTION name of the cash ones swaps
   between "... shares of ..." and "... Shares of ...".

The new values are worked out here from what the frame read, one UPDATE per row in
trade id order (so that two Trade-Updates lock shared rows in the same order), then
the frame's remaining reads run as Trade-Lookup's (trade_lookup.details).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce import trade_lookup
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.trade_lookup import TradeLookupInputs, TradeLookupOutput

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

#: frames 1-3 by percentage (cumulative)
FRAME_BOUNDS = (33, 66, 100)
CASH_TYPES = {"Cash Account": "Cash", "Cash": "Cash Account", "Margin Account": "Margin", "Margin": "Margin Account"}


@dataclass(frozen=True, slots=True)
class TradeUpdateSql:
    tu_exec_name: str
    tu_cash_type: str
    tu_cash_name: str


def statements(d: SqlDialect) -> TradeUpdateSql:
    return TradeUpdateSql(
        tu_exec_name="UPDATE trade SET t_exec_name = ? WHERE t_id = ?",
        tu_cash_type="UPDATE settlement SET se_cash_type = ? WHERE se_t_id = ?",
        tu_cash_name="UPDATE cash_transaction SET ct_name = ? WHERE ct_t_id = ?",
    )


def inputs(draw: Draws) -> TradeLookupInputs:
    return trade_lookup.inputs(draw, FRAME_BOUNDS)


def drawn(user: FramesSession) -> TradeLookupInputs:
    """The inputs from the user's draws."""
    return inputs(user.draw)


def run(user: FramesSession, inp: TradeLookupInputs) -> TradeLookupOutput:
    """The frame and its updates on the user's link, the transaction left open for the caller."""
    link, s, lookup = user.link, user.sql.trade_update, user.sql.trade_lookup
    cur = link.cur
    link.begin()
    out = TradeLookupOutput(inp.frame, trade_lookup.trades(cur, lookup, inp))
    if inp.frame == 1:
        for t_id, _, exec_name, *_ in sorted(out.trades):
            cur.execute(s.tu_exec_name, (toggled_name(exec_name), t_id))
        trade_lookup.details(cur, lookup, out)
        return out
    trade_lookup.details(cur, lookup, out)
    if inp.frame == 2:
        for t_id in sorted(out.settlements):
            cash_type = out.settlements[t_id][2]
            cur.execute(s.tu_cash_type, (CASH_TYPES.get(cash_type.strip(), "Cash Account"), t_id))
    else:
        for t_id in sorted(out.settlements):
            ct_name = out.settlements[t_id][5]
            if ct_name is not None:
                cur.execute(s.tu_cash_name, (toggled_shares(ct_name), t_id))
    return out


def toggled_name(name: str) -> str:
    """Frame 1's change: " X " back to " ", else every " " to " X "."""
    return name.replace(" X ", " ") if " X " in name else name.replace(" ", " X ")


def toggled_shares(name: str) -> str:
    """Frame 3's change: " shares of " to " Shares of " and back (case matters)."""
    if " shares of " in name:
        return name.replace(" shares of ", " Shares of ")
    return name.replace(" Shares of ", " shares of ")


def call(user: FramesSession, inp: TradeLookupInputs) -> tuple[str, tuple]:
    """The whole transaction as one call of tpce_trade_lookup, asked to change what it reads."""
    return trade_lookup.call(user, inp, 1)
