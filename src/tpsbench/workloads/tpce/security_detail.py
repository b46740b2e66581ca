"""Security-Detail (TPC-E, B2, read-only): everything about one security.

One frame of six statements: the security with its company, the company's and the
exchange's addresses and zip codes, and the exchange (one join); three competitors with
their industry; the company's 20 first financial quarters; 5 to 20 days of
DAILY_MARKET from a start day; the last trade; two news items, with the news text (the
LOB) in 1% of the calls and without it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce import calls
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import counted, day, limit, top

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

MIN_DAYS, MAX_DAYS = 5, 20
COMPETITORS, QUARTERS, NEWS = 3, 20, 2
#: tpce_security_detail's parameters, as PostgreSQL types (calls.routine)
ROUTINE = ("VARCHAR", "INTEGER", "DATE", "INTEGER")


@dataclass(slots=True)
class SecurityDetailInputs:
    symbol: str
    max_rows: int
    start_day: str
    access_lob: bool


@dataclass(slots=True)
class SecurityDetailOutput:
    security: tuple
    competitors: list[tuple]
    financials: list[tuple]
    days: list[tuple]
    last_trade: tuple
    news: list[tuple]


@dataclass(frozen=True, slots=True)
class SecurityDetailSql:
    sd_security: str
    sd_competitors: str
    sd_financials: str
    sd_days_k: tuple[str | None, ...]
    sd_last_trade: str
    sd_news: tuple[str, ...]
    #: the stored procedure's call ("" where the dialect has none)
    call: str


def statements(d: SqlDialect) -> SecurityDetailSql:
    news = ("SELECT {top}{columns} FROM news_xref, news_item WHERE ni_id = nx_ni_id AND nx_co_id = ?"
            " ORDER BY ni_dts DESC, ni_id{limit}")
    news_columns = "ni_dts, ni_source, ni_author, ni_headline, ni_summary"
    return SecurityDetailSql(
        sd_security=(
            "SELECT s_name, co_id, co_name, co_sp_rate, co_ceo, co_desc, co_open_date, co_st_id,"
            " ca.ad_line1, ca.ad_line2, zca.zc_town, zca.zc_div, ca.ad_zc_code, ca.ad_ctry, s_num_out,"
            " s_start_date, s_exch_date, s_pe, s_52wk_high, s_52wk_high_date, s_52wk_low, s_52wk_low_date,"
            " s_dividend, s_yield, zea.zc_div, ea.ad_ctry, ea.ad_line1, ea.ad_line2, zea.zc_town, ea.ad_zc_code,"
            " ex_close, ex_desc, ex_name, ex_num_symb, ex_open"
            " FROM security, company, address ca, address ea, zip_code zca, zip_code zea, exchange"
            " WHERE s_symb = ? AND co_id = s_co_id AND ca.ad_id = co_ad_id AND ea.ad_id = ex_ad_id"
            " AND ex_id = s_ex_id AND zca.zc_code = ca.ad_zc_code AND zea.zc_code = ea.ad_zc_code"),
        sd_competitors=(
            f"SELECT {top(d, COMPETITORS)}co_name, in_name FROM company_competitor, company, industry"
            f" WHERE cp_co_id = ? AND co_id = cp_comp_co_id AND in_id = cp_in_id"
            f" ORDER BY cp_comp_co_id{limit(d, COMPETITORS)}"),
        sd_financials=(
            f"SELECT {top(d, QUARTERS)}fi_year, fi_qtr, fi_qtr_start_date, fi_revenue, fi_net_earn, fi_basic_eps,"
            " fi_dilut_eps, fi_margin, fi_inventory, fi_assets, fi_liability, fi_out_basic, fi_out_dilut"
            f" FROM financial WHERE fi_co_id = ? ORDER BY fi_year, fi_qtr{limit(d, QUARTERS)}"),
        sd_days_k=counted(lambda n: (
            f"SELECT {top(d, n)}dm_date, dm_close, dm_high, dm_low, dm_vol FROM daily_market"
            f" WHERE dm_s_symb = ? AND dm_date >= ? ORDER BY dm_date{limit(d, n)}"), MAX_DAYS),
        sd_last_trade="SELECT lt_price, lt_open_price, lt_vol FROM last_trade WHERE lt_s_symb = ?",
        #: (without the news text, with it)
        sd_news=tuple(news.format(top=top(d, NEWS), limit=limit(d, NEWS), columns=columns)
                         for columns in (news_columns, "ni_item, " + news_columns)),
        call=calls.routine(d, "security_detail", ROUTINE),
    )


def inputs(draw: Draws) -> SecurityDetailInputs:
    max_rows = draw.rng.randint(MIN_DAYS, MAX_DAYS)
    return SecurityDetailInputs(draw.symbol(), max_rows, day(draw.market_day(max_rows)), draw.percent() == 1)


def drawn(user: FramesSession) -> SecurityDetailInputs:
    """The inputs from the user's draws."""
    return inputs(user.draw)


def run(user: FramesSession, inp: SecurityDetailInputs) -> SecurityDetailOutput:
    link, s = user.link, user.sql.security_detail
    cur = link.cur
    cur.execute(s.sd_security, (inp.symbol,))
    security = cur.fetchone()
    if security is None:
        raise LookupError(f"Security-Detail: no security {inp.symbol}")
    co_id = security[1]
    out = []
    for sql, params in ((s.sd_competitors, (co_id,)), (s.sd_financials, (co_id,)),
                        (s.sd_days_k[inp.max_rows], (inp.symbol, inp.start_day))):
        cur.execute(sql, params)
        out.append([tuple(row) for row in cur.fetchall()])
    cur.execute(s.sd_last_trade, (inp.symbol,))
    last_trade = tuple(cur.fetchone())
    cur.execute(s.sd_news[inp.access_lob], (co_id,))
    news = [tuple(row) for row in cur.fetchall()]
    return SecurityDetailOutput(tuple(security), out[0], out[1], out[2], last_trade, news)


def call(user: FramesSession, inp: SecurityDetailInputs) -> tuple[str, tuple]:
    """The whole transaction as one call of tpce_security_detail (procedures.py)."""
    s = user.sql.security_detail
    return s.call, (inp.symbol, inp.max_rows, inp.start_day, int(inp.access_lob))


def answer(user: FramesSession, inp: SecurityDetailInputs, error: Exception | None) -> bool:
    return calls.answered(user, inp, error, decoded)


def decoded(user: FramesSession, inp: SecurityDetailInputs) -> SecurityDetailOutput:
    """The security, competitors, financials, days, last trade and news; the news text
    (the first news column) only where the call asked for it."""
    link = user.link
    news = range(58 if inp.access_lob else 59, 64)
    parts: tuple[calls.Part, ...] = ((range(35), False), (range(35, 37), True), (range(37, 50), True),
                                     (range(50, 55), True), (range(55, 58), False), (news, True))
    security, competitors, financials, days, last_trade, items = calls.parts(link, parts, True)
    return SecurityDetailOutput(security[0], competitors, financials, days, last_trade[0], items)
