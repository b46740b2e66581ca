"""One load unit's market: its 500 companies and 685 securities, their prices and history.

The task ``LoadTask("market", (lu,))`` loads COMPANY, the companies' ADDRESS rows,
COMPANY_COMPETITOR (3 per company), SECURITY, FINANCIAL (20 quarters per company),
NEWS_ITEM and NEWS_XREF (2 per company) and DAILY_MARKET (market_days business days per
security, before the load date). Securities 0-499 of a load unit are its companies'
common stock, 500-684 a preferred issue of every other company from the first.

Prices are a closed form of time, so that everything priced agrees without sharing
state: a security's price in cents at second t is ``base + fast + slow``, two triangle
waves, one with a period of 900 s (the brief's MEE curve) and an amplitude of 0.50 to
1.50 dollars, one with a period of 20 to 200 days and 5 to 15 dollars, on a base of 15
to 25 dollars. Integer arithmetic only, so every machine computes the same cents.
DAILY_MARKET's close is the price at 17:00, its high and low the fast wave's top and
bottom that day; the initial trades' prices (trades.py) and LAST_TRADE come from the
same function, and SECURITY's 52-week high and low from DAILY_MARKET's last 261 days.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tpsbench.core.batch import Batch
from tpsbench.core.workload import LoadParams
from tpsbench.workloads.tpce import text
from tpsbench.workloads.tpce.fixed import (
    EXCHANGE_IDS,
    EXCHANGES,
    INDUSTRIES,
    address_columns,
)
from tpsbench.workloads.tpce.layout import (
    CHUNK_ROWS,
    COMPANIES_PER_LU,
    CUSTOMERS_PER_LU,
    DAY_OPEN_S,
    DAY_SECONDS,
    KIND_MARKET,
    SECURITIES_PER_LU,
    address_ids,
    base26,
    business_days,
    dates,
    epoch_seconds,
    stamps,
    stream,
    symbols,
)

FAST_PERIOD_S = 900
DAY_S = 86_400
#: SECURITY's 52 weeks, in business days
YEAR_DAYS = 261
COMPETITORS = 3
QUARTERS = 20
NEWS_PER_COMPANY = 2
#: NEWS_ITEM.NI_ITEM lengths: small, so that builds stay fast
NEWS_BYTES = (500, 2000)
RATINGS = (b"AAA", b"AA+", b"AA", b"AA-", b"A+", b"A", b"A-", b"BBB+", b"BBB", b"BBB-", b"BB+", b"BB", b"BB-",
           b"B+", b"B", b"B-", b"CCC", b"CC", b"C", b"D")
_PRICES, _EXCHANGE, _COMPANY, _COMPETITOR, _SECURITY, _FINANCIAL, _NEWS, _DAILY = range(1, 9)


@dataclass(frozen=True)
class Securities:
    """One load unit's securities (local index 0..684) and their price curves."""

    symbol: np.ndarray
    co_id: np.ndarray
    exchange: np.ndarray
    base: np.ndarray
    fast_amp: np.ndarray
    fast_shift: np.ndarray
    slow_amp: np.ndarray
    slow_period: np.ndarray
    slow_shift: np.ndarray

    def price(self, i: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Price in cents of securities ``i`` at epoch seconds ``t`` (int64 arrays)."""
        fast, slow = self._waves(i, t)
        return self.base[i] + fast + slow

    def day_range(self, i: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The low and high in cents on the day of second ``t``: the fast wave's bottom and
        top on the slow wave's value at ``t``."""
        low = self.base[i] + self._waves(i, t)[1]
        return low, low + self.fast_amp[i]

    def _waves(self, i: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fast = (t + self.fast_shift[i]) % FAST_PERIOD_S
        period = self.slow_period[i]
        slow = (t + self.slow_shift[i]) % period
        return (self.fast_amp[i] * np.abs(2 * fast - FAST_PERIOD_S) // FAST_PERIOD_S,
                self.slow_amp[i] * np.abs(2 * slow - period) // period)


def securities(seed: int, lu: int) -> Securities:
    """The securities of load unit ``lu``, from streams of their own (cheap: 685 rows)."""
    n, companies = SECURITIES_PER_LU, COMPANIES_PER_LU
    local = np.arange(n)
    company = np.where(local < companies, local, 2 * (local - companies))
    rng = stream(seed, KIND_MARKET, lu, _PRICES)
    period = rng.integers(20, 201, n) * DAY_S
    return Securities(
        symbol=symbols(lu * n + local),
        co_id=lu * companies + company + 1,
        exchange=stream(seed, KIND_MARKET, lu, _EXCHANGE).integers(0, len(EXCHANGES), n),
        base=rng.integers(1500, 2501, n),
        fast_amp=rng.integers(50, 151, n),
        fast_shift=rng.integers(0, FAST_PERIOD_S, n),
        slow_amp=rng.integers(500, 1501, n),
        slow_period=period,
        slow_shift=rng.integers(0, period),
    )


def symbols_per_exchange(seed: int, lus: int) -> np.ndarray:
    """EX_NUM_SYMB: securities per exchange over every load unit."""
    counts = np.zeros(len(EXCHANGES), np.int64)
    for lu in range(lus):
        counts += np.bincount(stream(seed, KIND_MARKET, lu, _EXCHANGE).integers(0, len(EXCHANGES), SECURITIES_PER_LU),
                              minlength=len(EXCHANGES))
    return counts


def generate(lu: int, params: LoadParams, market_days: int) -> Iterator[Batch]:
    seed, sec = params.seed, securities(params.seed, lu)
    days = business_days(params.load_time, market_days)
    yield from _companies(seed, lu, days[-1])
    yield _security(seed, lu, sec, days)
    yield from _daily_market(seed, lu, sec, days)


def _companies(seed: int, lu: int, last_day: np.datetime64) -> Iterator[Batch]:
    n = COMPANIES_PER_LU
    co_id = lu * n + np.arange(1, n + 1, dtype=np.int64)
    rng = stream(seed, KIND_MARKET, lu, _COMPANY)
    ad_id = address_ids(lu, CUSTOMERS_PER_LU + np.arange(n))
    yield Batch("company", {
        "co_id": co_id,
        "co_st_id": np.full(n, b"ACTV", "S4"),
        # unique: the id in letters after a random word (Trade-Order finds companies by name)
        "co_name": text.join(text.names(rng, n, 12), b" ", base26(co_id, 5), b" Inc."),
        "co_in_id": base26(rng.integers(0, INDUSTRIES, n), 2),
        "co_sp_rate": text.pick(RATINGS, rng.integers(0, len(RATINGS), n)),
        "co_ceo": text.join(text.names(rng, n, 8), b" ", text.names(rng, n, 12)),
        "co_ad_id": ad_id,
        "co_desc": text.prose(rng, n, 100),
        "co_open_date": dates(np.datetime64("1800-01-01") + rng.integers(0, 73_000, n)),
    })
    yield Batch("address", address_columns(rng, ad_id))
    rng = stream(seed, KIND_MARKET, lu, _COMPETITOR)
    # three different competitors from three thirds of the offsets 1..499: never itself
    bounds = np.linspace(1, n, COMPETITORS + 1).astype(np.int64)
    offsets = np.stack([rng.integers(bounds[k], bounds[k + 1], n) for k in range(COMPETITORS)], axis=1)
    yield Batch("company_competitor", {
        "cp_co_id": np.repeat(co_id, COMPETITORS),
        "cp_comp_co_id": (lu * n + (np.arange(n)[:, None] + offsets) % n + 1).ravel(),
        "cp_in_id": base26(rng.integers(0, INDUSTRIES, n * COMPETITORS), 2),
    })
    yield _financial(seed, lu, co_id, last_day)
    yield from _news(seed, lu, co_id, last_day)


def _financial(seed: int, lu: int, co_id: np.ndarray, last_day: np.datetime64) -> Batch:
    """Five years of quarters per company, ending with the year before the load's; the
    aggregates in whole dollars (integers: too large for a float column to print exactly)."""
    m = len(co_id) * QUARTERS
    rng = stream(seed, KIND_MARKET, lu, _FINANCIAL)
    first_year = last_day.astype("datetime64[Y]").astype(np.int64) + 1970 - QUARTERS // 4
    quarter = np.tile(np.arange(QUARTERS), len(co_id))
    year, qtr = first_year + quarter // 4, quarter % 4 + 1
    start = (year - 1970).astype("datetime64[Y]").astype("datetime64[M]") + (qtr - 1) * 3
    revenue = rng.integers(10**6, 10**9, m)
    earnings = revenue * rng.integers(-10, 30, m) // 100
    basic = rng.integers(10**6, 10**9, m)
    assets = rng.integers(10**6, 10**10, m)
    return Batch("financial", {
        "fi_co_id": np.repeat(co_id, QUARTERS),
        "fi_year": year.astype(np.int16),
        "fi_qtr": qtr.astype(np.int16),
        "fi_qtr_start_date": dates(start.astype("datetime64[D]")),
        "fi_revenue": revenue,
        "fi_net_earn": earnings,
        "fi_basic_eps": (earnings * 100 // basic) / 100,
        "fi_dilut_eps": (earnings * 100 // (basic + basic // 10)) / 100,
        "fi_margin": (earnings * 10_000 // revenue) / 100,
        "fi_inventory": rng.integers(10**5, 10**8, m),
        "fi_assets": assets,
        "fi_liability": assets * rng.integers(10, 90, m) // 100,
        "fi_out_basic": basic,
        "fi_out_dilut": basic + basic // 10,
    })


def _news(seed: int, lu: int, co_id: np.ndarray, last_day: np.datetime64) -> Iterator[Batch]:
    m = len(co_id) * NEWS_PER_COMPANY
    ni_id = lu * m + np.arange(1, m + 1, dtype=np.int64)
    rng = stream(seed, KIND_MARKET, lu, _NEWS)
    latest = epoch_seconds(np.array([last_day]), DAY_OPEN_S + DAY_SECONDS)[0]
    yield Batch("news_item", {
        "ni_id": ni_id,
        "ni_headline": text.prose(rng, m, 60),
        "ni_summary": text.prose(rng, m, 200),
        "ni_item": text.prose_varying(rng, m, *NEWS_BYTES),
        "ni_dts": stamps(latest - rng.integers(0, 5 * 365 * DAY_S, m)),
        "ni_source": text.join(text.names(rng, m, 10), b" News"),
        "ni_author": text.join(text.names(rng, m, 8), b" ", text.names(rng, m, 12)),
    })
    yield Batch("news_xref", {"nx_ni_id": ni_id, "nx_co_id": np.repeat(co_id, NEWS_PER_COMPANY)})


def _security(seed: int, lu: int, sec: Securities, days: np.ndarray) -> Batch:
    n = SECURITIES_PER_LU
    local = np.arange(n)
    rng = stream(seed, KIND_MARKET, lu, _SECURITY)
    year = days[-YEAR_DAYS:]
    low, high = sec.day_range(local[:, None], epoch_seconds(year, DAY_OPEN_S + DAY_SECONDS)[None, :])
    start = np.datetime64("1990-01-01") + rng.integers(0, 7300, n)
    issue = np.where(local < COMPANIES_PER_LU, b"COMMON", b"PREF_A")
    return Batch("security", {
        "s_symb": sec.symbol,
        "s_issue": issue,
        "s_st_id": np.full(n, b"ACTV", "S4"),
        "s_name": text.join(text.names(rng, n, 12), b" ", base26(sec.co_id, 5), b" ", issue),
        "s_ex_id": EXCHANGE_IDS[sec.exchange],
        "s_co_id": sec.co_id,
        "s_num_out": rng.integers(10**7, 10**10, n),
        "s_start_date": dates(start),
        "s_exch_date": dates(start + rng.integers(0, 365, n)),
        "s_pe": rng.integers(100, 12_000, n) / 100,
        "s_52wk_high": high.max(axis=1) / 100,
        "s_52wk_high_date": dates(year[high.argmax(axis=1)]),
        "s_52wk_low": low.min(axis=1) / 100,
        "s_52wk_low_date": dates(year[low.argmin(axis=1)]),
        "s_dividend": rng.integers(0, 1000, n) / 100,
        "s_yield": rng.integers(0, 2000, n) / 100,
    })


def _daily_market(seed: int, lu: int, sec: Securities, days: np.ndarray) -> Iterator[Batch]:
    """market_days rows per security, in primary-key order (symbol, date), chunk by chunk."""
    per_chunk = max(1, CHUNK_ROWS // len(days))
    day_text = dates(days)
    close_s = epoch_seconds(days, DAY_OPEN_S + DAY_SECONDS)
    for chunk, lo in enumerate(range(0, SECURITIES_PER_LU, per_chunk)):
        local = np.arange(lo, min(lo + per_chunk, SECURITIES_PER_LU))
        i, t = np.repeat(local, len(days)), np.tile(close_s, len(local))
        low, high = sec.day_range(i, t)
        rng = stream(seed, KIND_MARKET, lu, _DAILY, chunk)
        yield Batch("daily_market", {
            "dm_date": np.tile(day_text, len(local)),
            "dm_s_symb": sec.symbol[i],
            "dm_close": sec.price(i, t) / 100,
            "dm_high": high / 100,
            "dm_low": low / 100,
            "dm_vol": rng.integers(1_000, 1_000_000, len(i)),
        })
