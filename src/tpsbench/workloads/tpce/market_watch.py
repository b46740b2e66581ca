"""Market-Watch (TPC-E, B2, read-only): how a list of securities moved since a day.

The list is a customer's watch list (60%), the securities of an industry's companies in
a company id range (5%), or an account's holdings (35%). One statement per kind sums,
over the list, the market capitalisation at the last price and at the chosen day's close
(last_trade, security.s_num_out, daily_market.dm_close); the result is the
capitalisation-weighted change in per cent. Symbols without a close that day count in
neither sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect, to_decimal
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import day

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

#: the three kinds of list, and their share in per cent
WATCH_LIST, INDUSTRY, HOLDINGS = 0, 1, 2
#: companies of the industry list's id range (EGen takes a range of the companies)
COMPANY_RANGE = 100


@dataclass(slots=True)
class MarketWatchInputs:
    kind: int
    #: the customer (watch list), the account (holdings), or the industry and company ids
    key: object
    first_co_id: int
    last_co_id: int
    #: the day whose close the change is measured from, as bound
    start_day: str


@dataclass(frozen=True, slots=True)
class MarketWatchSql:
    mw_change: tuple[str, ...]


def statements(d: SqlDialect) -> MarketWatchSql:
    lists = (
        "SELECT wi_s_symb AS symb FROM watch_item, watch_list WHERE wi_wl_id = wl_id AND wl_c_id = ?",
        ("SELECT s_symb AS symb FROM industry, company, security WHERE in_name = ? AND co_in_id = in_id"
         " AND co_id BETWEEN ? AND ? AND s_co_id = co_id"),
        "SELECT hs_s_symb AS symb FROM holding_summary WHERE hs_ca_id = ?",
    )
    return MarketWatchSql(
        mw_change=tuple(
            "SELECT COALESCE(SUM(s_num_out * lt_price), 0), COALESCE(SUM(s_num_out * dm_close), 0)"
            f" FROM ({source}) w JOIN last_trade ON lt_s_symb = w.symb JOIN security ON s_symb = w.symb"
            " JOIN daily_market ON dm_s_symb = w.symb AND dm_date = ?"
            for source in lists),
    )


def inputs(draw: Draws) -> MarketWatchInputs:
    world = draw.world
    start = day(draw.market_day())
    pick = draw.percent()
    if pick <= 60:
        return MarketWatchInputs(WATCH_LIST, draw.customer().c_id, 0, 0, start)
    if pick <= 65:
        low, high = world.companies
        first_co = draw.rng.randint(low, max(low, high - COMPANY_RANGE + 1))
        return MarketWatchInputs(INDUSTRY, draw.pick(world.industries), first_co, first_co + COMPANY_RANGE - 1,
                                 start)
    return MarketWatchInputs(HOLDINGS, draw.account(), 0, 0, start)


def drawn(user: FramesSession) -> MarketWatchInputs:
    """The inputs from the user's draws."""
    return inputs(user.draw)


def run(user: FramesSession, inp: MarketWatchInputs) -> float:
    """The capitalisation-weighted change of the list since the start day, in per cent."""
    link, s = user.link, user.sql.market_watch
    cur = link.cur
    if inp.kind == INDUSTRY:
        params: tuple = (inp.key, inp.first_co_id, inp.last_co_id, inp.start_day)
    else:
        params = (inp.key, inp.start_day)
    cur.execute(s.mw_change[inp.kind], params)
    now, then = cur.fetchone()
    old = to_decimal(then)
    return float(100 * (to_decimal(now) / old - 1)) if old else 0.0
