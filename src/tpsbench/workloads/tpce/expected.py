"""Exact row counts of a TPC-E build, from the streams that decide them.

Counts of the fixed and per-company tables are constants; the others are replayed from
the few streams that decide them, as the loader draws them: accounts, permissions and
watch items per customer, and for the trades each day's account, pair, order type,
cash flag and walk step (activity.py), with the times of the last day only. Holdings
come out without walking a lot: a pair ends with as many open lots as the absolute sum
of its completed trades' steps (walk.py). That costs a few milliseconds per load unit
and trade day, a small part of generating the trades (and none of loading them), so a
build can show exact progress from the start.
"""

from __future__ import annotations

import numpy as np

from tpsbench.workloads.tpce import activity, customers, fixed, market
from tpsbench.workloads.tpce.layout import (
    ADDRESSES_PER_LU,
    BROKERS_PER_LU,
    COMPANIES_PER_LU,
    CUSTOMERS_PER_LU,
    EXCHANGE_ADDRESSES,
    SECURITIES_PER_LU,
    TABLES,
    TRADES_PER_DAY,
)

#: rows of the fixed tables
FIXED = {
    "status_type": len(fixed.STATUS_TYPES), "trade_type": len(fixed.TRADE_TYPES), "exchange": len(fixed.EXCHANGES),
    "sector": fixed.SECTORS, "industry": fixed.INDUSTRIES, "zip_code": fixed.ZIP_CODES,
    "taxrate": fixed.NATIONAL_RATES + fixed.DIVISION_RATES, "charge": int(fixed.CHARGE_CENTS.size),
    "commission_rate": 3 * len(fixed.TRADE_TYPES) * len(fixed.EXCHANGES) * len(fixed.QTY_FROM),
}


def expected_rows(lus: int, seed: int, trade_days: int, market_days: int) -> dict[str, int]:
    rows = dict.fromkeys(TABLES, 0)
    rows.update(FIXED)
    rows["address"] = EXCHANGE_ADDRESSES + lus * ADDRESSES_PER_LU
    per_lu = {
        "customer": CUSTOMERS_PER_LU, "customer_taxrate": 2 * CUSTOMERS_PER_LU, "watch_list": CUSTOMERS_PER_LU,
        "broker": BROKERS_PER_LU, "company": COMPANIES_PER_LU,
        "company_competitor": market.COMPETITORS * COMPANIES_PER_LU,
        "financial": market.QUARTERS * COMPANIES_PER_LU, "news_item": market.NEWS_PER_COMPANY * COMPANIES_PER_LU,
        "news_xref": market.NEWS_PER_COMPANY * COMPANIES_PER_LU, "security": SECURITIES_PER_LU,
        "last_trade": SECURITIES_PER_LU, "daily_market": SECURITIES_PER_LU * market_days,
        "trade": TRADES_PER_DAY * trade_days,
    }
    for lu in range(lus):
        for table, count in (*per_lu.items(), *customer_rows(seed, lu).items(),
                             *trade_rows(seed, lu, trade_days).items()):
            rows[table] += count
    return rows


def customer_rows(seed: int, lu: int) -> dict[str, int]:
    acc = customers.accounts(seed, lu)
    return {"customer_account": len(acc.ca_id),
            "account_permission": int(customers.permission_counts(seed, lu, len(acc.ca_id)).sum()),
            "watch_item": int(customers.watch_counts(seed, lu).sum())}


def trade_rows(seed: int, lu: int, trade_days: int) -> dict[str, int]:
    """The rows a load unit's trades leave, but TRADE's own (trades_per_day a day)."""
    prof = activity.profile(seed, lu, customers.accounts(seed, lu), full=False)
    walk = np.zeros(prof.pairs, np.int64)
    done_count = cash = history = waiting = 0
    for number in range(trade_days):
        d = activity.day(seed, lu, number, prof)
        last = number == trade_days - 1
        if last:
            done, triggered = activity.completed(activity.times(seed, lu, number, d.limit), last)
        else:
            done = triggered = np.ones(len(d.pair), bool)
        walk += np.bincount(d.pair[done], weights=d.step[done], minlength=prof.pairs).astype(np.int64)
        done_count += int(done.sum())
        cash += int((done & d.cash).sum())
        history += len(d.pair) + int((triggered & d.limit).sum()) + int(done.sum())
        waiting += int((d.limit & ~triggered).sum())
    return {"trade_history": history, "settlement": done_count, "cash_transaction": cash,
            "holding_history": done_count, "holding": int(np.abs(walk).sum()),
            "holding_summary": int(np.count_nonzero(walk)), "trade_request": waiting}

