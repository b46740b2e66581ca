"""Trade-Status (TPC-E, B2, read-only): an account's 50 latest trades and who owns it.

One frame, two statements: the account's trades newest first with their status, type,
security and exchange names (LIMIT 50; the (t_ca_id, t_dts) index reads them in order),
and the customer's and broker's names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import limit, top

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

#: trades shown
MAX_TRADES = 50


@dataclass(slots=True)
class TradeStatusInputs:
    acct_id: int


@dataclass(slots=True)
class TradeStatusOutput:
    #: (t_id, t_dts, st_name, tt_name, t_s_symb, t_qty, t_exec_name, t_chrg, s_name, ex_name), newest first
    trades: list[tuple]
    c_l_name: str
    c_f_name: str
    b_name: str


@dataclass(frozen=True, slots=True)
class TradeStatusSql:
    ts_trades: str
    ts_names: str


def statements(d: SqlDialect) -> TradeStatusSql:
    return TradeStatusSql(
        ts_trades=(
            f"SELECT {top(d, MAX_TRADES)}t_id, t_dts, st_name, tt_name, t_s_symb, t_qty, t_exec_name, t_chrg,"
            " s_name, ex_name FROM trade, status_type, trade_type, security, exchange"
            " WHERE t_ca_id = ? AND st_id = t_st_id AND tt_id = t_tt_id AND s_symb = t_s_symb AND ex_id = s_ex_id"
            f" ORDER BY t_dts DESC{limit(d, MAX_TRADES)}"),
        ts_names=("SELECT c_l_name, c_f_name, b_name FROM customer_account, customer, broker"
                  " WHERE ca_id = ? AND c_id = ca_c_id AND b_id = ca_b_id"),
    )


def inputs(draw: Draws) -> TradeStatusInputs:
    return TradeStatusInputs(draw.account())


def drawn(user: FramesSession) -> TradeStatusInputs:
    """The inputs from the user's draws."""
    return inputs(user.draw)


def run(user: FramesSession, inp: TradeStatusInputs) -> TradeStatusOutput:
    link, s = user.link, user.sql.trade_status
    cur = link.cur
    cur.execute(s.ts_trades, (inp.acct_id,))
    trades = [tuple(row) for row in cur.fetchall()]
    cur.execute(s.ts_names, (inp.acct_id,))
    names = cur.fetchone()
    if names is None:
        raise LookupError(f"Trade-Status: no account {inp.acct_id}")
    return TradeStatusOutput(trades, *names)
