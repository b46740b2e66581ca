"""The shape of a TPC-E build: load units, id ranges, trading days, random streams.

Everything here is arithmetic on a load unit's number (0-based), so that every task and
the row counter agree on ids without passing anything around:

- customers ``lu*1000+1 .. lu*1000+1000``; a customer's accounts ``(c_id-1)*10 + k + 1``
  for its k-th account (at most 10), so account ids are unique and each customer's lie
  together;
- brokers ``lu*10+1 ..``, companies ``lu*500+1 ..``, news items ``lu*1000+1 ..``;
- securities ``lu*685 .. lu*685+684`` (0-based global index), symbol = that index in
  six base-26 letters (``AAAAAA``, ``AAAAAB`` ...): same length, unique, in index order,
  so DAILY_MARKET loads in primary-key order;
- addresses 1-4 for the exchanges, then 1,500 per load unit (its customers', then its
  companies');
- trades: load unit ``lu`` owns the ids ``lu*T+1 .. (lu+1)*T`` for its T =
  trade_days x 57,600 trades, in submission order, so the ids of all initial trades are
  1..N with no gaps and new trades can follow the highest.

Random streams are ``SeedSequence([seed, kind, *key, table, *sub])``: one per task kind,
load unit, table and (for the trades) day and column, so any table's draws can be
replayed without the others, in any process (that is how expected.py counts rows
without generating them, and how the trade task learns the customers' tiers).
"""

from __future__ import annotations

import numpy as np

from tpsbench.core.columns import load_timestamp
from tpsbench.core.errors import TpsbenchError

CUSTOMERS_PER_LU = 1000
BROKERS_PER_LU = CUSTOMERS_PER_LU // 100
COMPANIES_PER_LU = 500
SECURITIES_PER_LU = 685
MAX_ACCOUNTS_PER_CUSTOMER = 10
ADDRESSES_PER_LU = CUSTOMERS_PER_LU + COMPANIES_PER_LU
EXCHANGE_ADDRESSES = 4
#: TPC-E's scale factor: customers per nominal tpsE
CUSTOMERS_PER_TPSE = 500
#: a trading day is 8 hours, 09:00 to 17:00
DAY_OPEN_S, DAY_SECONDS = 9 * 3600, 8 * 3600
#: the rule's initial trades: trade_days * 8 h * 3600 s * 1000 customers / SF per load unit
TRADES_PER_DAY = DAY_SECONDS * CUSTOMERS_PER_LU // CUSTOMERS_PER_TPSE
DEFAULT_TRADE_DAYS, MAX_TRADE_DAYS = 300, 10_000
#: DAILY_MARKET: 5 years of 261 business days per security
DEFAULT_MARKET_DAYS, MAX_MARKET_DAYS = 1305, 10_000
#: rows per generated batch of the per-security and per-customer tables
CHUNK_ROWS = 50_000

#: the 33 tables in create order: the fixed and dimension tables, the market, the
#: customers, the brokers and their trades (drop order is the reverse)
TABLES = (
    "status_type", "trade_type", "exchange", "sector", "industry", "zip_code", "address", "taxrate", "charge",
    "commission_rate", "company", "company_competitor", "security", "daily_market", "financial", "last_trade",
    "news_item", "news_xref", "customer", "customer_account", "customer_taxrate", "account_permission", "broker",
    "watch_list", "watch_item", "trade", "trade_history", "trade_request", "settlement", "cash_transaction",
    "holding", "holding_history", "holding_summary",
)

#: the first SeedSequence word after the seed: the kind of task a stream belongs to
KIND_FIXED, KIND_MARKET, KIND_CUSTOMERS, KIND_TRADES = 1, 2, 3, 4


def stream(seed: int, kind: int, *words: int) -> np.random.Generator:
    """An independent generator for one (seed, kind, key..., table, sub...) path."""
    if seed < 0:
        raise ValueError("the seed must be a non-negative integer")
    return np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([seed, kind, *words])))


def load_units(customers: int) -> int:
    """The load units of a build of ``customers``; a one-line error unless a positive
    multiple of 1,000 (TPC-E scales by whole load units)."""
    if customers < CUSTOMERS_PER_LU or customers % CUSTOMERS_PER_LU:
        raise TpsbenchError(f"tpce scales in load units of {CUSTOMERS_PER_LU:,} customers: "
                            f"use 1000, 2000, 5000 ..., not {customers:,}")
    return customers // CUSTOMERS_PER_LU


def day_count(name: str, text: str, most: int) -> int:
    """A build option counting days: a whole number 1..most, or a one-line error."""
    try:
        days = int(text)
    except ValueError:
        days = 0
    if not 1 <= days <= most:
        raise TpsbenchError(f"tpce option {name} must be a whole number of days from 1 to {most:,}, got {text!r}")
    return days


def trades_per_lu(trade_days: int) -> int:
    return trade_days * TRADES_PER_DAY


def first_trade_id(lu: int, trade_days: int) -> int:
    """The lowest trade id of load unit ``lu`` (its range is trades_per_lu ids long)."""
    return lu * trades_per_lu(trade_days) + 1


def customer_ids(lu: int) -> np.ndarray:
    return np.arange(lu * CUSTOMERS_PER_LU + 1, (lu + 1) * CUSTOMERS_PER_LU + 1, dtype=np.int64)


def account_ids(c_id: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The id of the k-th (0-based) account of customer ``c_id``."""
    return (c_id - 1) * MAX_ACCOUNTS_PER_CUSTOMER + k + 1


def address_ids(lu: int, local: np.ndarray) -> np.ndarray:
    """Address ids of load unit ``lu``: ``local`` 0..999 its customers', 1000..1499 its companies'."""
    return EXCHANGE_ADDRESSES + lu * ADDRESSES_PER_LU + local + 1


def symbols(index: np.ndarray) -> np.ndarray:
    """S_SYMB of global security indices: six base-26 capital letters, in index order."""
    return base26(np.asarray(index, dtype=np.int64), 6)


def base26(values: np.ndarray, width: int) -> np.ndarray:
    """Non-negative integers as ``width`` capital letters (most significant first)."""
    if values.size and values.max() >= 26**width:
        raise ValueError(f"{values.max()} does not fit in {width} base-26 letters")
    places = 26 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    digits = (values[:, None] // places) % 26 + ord("A")
    return np.ascontiguousarray(digits, dtype=np.uint8).view(f"S{width}").reshape(len(values))


def decimal_text(values: np.ndarray, width: int) -> np.ndarray:
    """Non-negative integers as ``width`` decimal digits, zero-padded."""
    places = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    digits = (np.asarray(values, dtype=np.int64)[:, None] // places) % 10 + ord("0")
    return np.ascontiguousarray(digits, dtype=np.uint8).view(f"S{width}").reshape(len(values))


def cents_text(cents: np.ndarray) -> np.ndarray:
    """Non-negative cents as exact decimal text (``1234.56``), for sums too large for a
    float column to print exactly (BROKER.B_COMM_TOTAL runs into the billions of cents)."""
    cents = np.asarray(cents, np.int64)
    if cents.size and cents.min() < 0:
        raise ValueError("cents_text takes non-negative amounts")
    dollars = cents // 100
    width = len(str(int(dollars.max()))) if dollars.size else 1
    whole = np.char.lstrip(decimal_text(dollars, width), b"0")
    whole = np.where(whole == b"", b"0", whole)
    return np.char.add(np.char.add(whole, b"."), decimal_text(cents % 100, 2))


def business_days(load_time: str, count: int) -> np.ndarray:
    """The ``count`` business days (Monday to Friday) before the load date, oldest first:
    the initial trades' days, and DAILY_MARKET's."""
    today = load_timestamp(load_time).astype("datetime64[D]")
    return np.busday_offset(today, -np.arange(count, 0, -1), roll="forward")


def epoch_seconds(days: np.ndarray, second_of_day: int) -> np.ndarray:
    """Seconds since 1970 (int64) of the given time of each day."""
    return days.astype("datetime64[s]").astype(np.int64) + second_of_day


def stamps(seconds: np.ndarray) -> np.ndarray:
    """Epoch seconds as the ``datetime64[s]`` a timestamp column takes."""
    return np.asarray(seconds, dtype=np.int64).astype("datetime64[s]")


def dates(seconds_or_days: np.ndarray) -> np.ndarray:
    """A DATE column's text, ``YYYY-MM-DD`` (batches carry dates as strings)."""
    values = np.asarray(seconds_or_days)
    if values.dtype.kind != "M":
        values = stamps(values)
    return values.astype("datetime64[D]").astype("S10")
