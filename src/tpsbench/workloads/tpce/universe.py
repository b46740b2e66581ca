"""What the emulated customers and the market know of a built TPC-E database.

EGen's customer emulator draws its inputs (customer and account ids, tax ids, executor
names, symbols, company names, broker and sector names, time ranges) from the same
generator that loaded the database. Here they are read from the database instead, once
per process and database (:func:`universe`), so that the run side depends on no detail
of the loader: any build whose tables follow the schema gives inputs that exist. At one
load unit that is some 15,000 small rows, read in well under a second; every session
of the process then shares the one copy, read-only.

The initial trades' id and time range come from the lowest and highest trade id (two
primary-key probes), not from MIN/MAX(t_dts), which no index answers.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.sql import to_decimal
from tpsbench.core.target import Target
from tpsbench.workloads.tpce.sql import as_text


@dataclass(frozen=True)
class Customer:
    c_id: int
    tax_id: str
    tier: int
    f_name: str
    l_name: str
    #: the customer's accounts, by id
    accounts: tuple[int, ...]


@dataclass(frozen=True)
class Security:
    symbol: str
    issue: str
    #: its company's name
    co_name: str
    #: LAST_TRADE's price when the process first read it: where the market's price
    #: curve of the symbol is centred (mee.py)
    price: Decimal


@dataclass(frozen=True)
class Universe:
    customers: tuple[Customer, ...]
    #: account id -> the people other than its owner permitted to trade on it, as
    #: (f_name, l_name, tax_id)
    permitted: dict[int, tuple[tuple[str, str, str], ...]]
    #: every security, by symbol
    securities: tuple[Security, ...]
    brokers: tuple[str, ...]
    sectors: tuple[str, ...]
    industries: tuple[str, ...]
    #: the lowest and highest company id
    companies: tuple[int, int]
    #: the initial trades: lowest and highest id, the first's and the last's time
    trade_ids: tuple[int, int]
    trade_times: tuple[datetime, datetime]
    #: the first and last day of DAILY_MARKET (of its first security)
    market_days: tuple[date, date]
    tax_ids: tuple[str, ...]
    exchanges: tuple[str, ...]
    #: account id -> its customer's index in customers
    owner: dict[int, int] = field(default_factory=dict)


_CACHE: dict[str, Universe] = {}
_LOCK = threading.Lock()


def universe(target: Target, conn: Any) -> Universe:
    """The universe of ``target``'s database, read through ``conn`` the first time this
    process asks (and the transaction ended), shared afterwards."""
    key = target.url.render_as_string(hide_password=False)
    with _LOCK:
        found = _CACHE.get(key)
        if found is None:
            found = _CACHE[key] = read(conn)
        return found


def read(conn: Any) -> Universe:
    """Read the universe through a DB-API connection (its transaction is ended)."""
    cur = conn.cursor()
    try:
        return _read(cur)
    finally:
        cur.close()
        conn.rollback()


def _rows(cur: Any, sql: str) -> list[tuple]:
    """Rows of a statement without parameters (the values it needs are in its text)."""
    cur.execute(sql)
    return [tuple(row) for row in cur.fetchall()]


def _read(cur: Any) -> Universe:
    accounts: dict[int, list[int]] = defaultdict(list)
    for ca_id, c_id in _rows(cur, "SELECT ca_id, ca_c_id FROM customer_account ORDER BY ca_id"):
        accounts[int(c_id)].append(int(ca_id))
    customers = tuple(
        Customer(int(c_id), as_text(tax), int(tier), as_text(f), as_text(lname), tuple(accounts.get(int(c_id), ())))
        for c_id, tax, tier, f, lname in _rows(
            cur, "SELECT c_id, c_tax_id, c_tier, c_f_name, c_l_name FROM customer ORDER BY c_id"))
    if not customers or not any(c.accounts for c in customers):
        raise TpsbenchError("TPC-E: the database has no customers or no accounts; rebuild it")
    owner = {ca: at for at, c in enumerate(customers) for ca in c.accounts}
    permitted: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
    for ca_id, f, lname, tax in _rows(
            cur, "SELECT ap_ca_id, ap_f_name, ap_l_name, ap_tax_id FROM account_permission, customer_account, customer"
                 " WHERE ca_id = ap_ca_id AND c_id = ca_c_id AND ap_tax_id <> c_tax_id ORDER BY ap_ca_id, ap_tax_id"):
        permitted[int(ca_id)].append((as_text(f), as_text(lname), as_text(tax)))
    low, high = _rows(cur, "SELECT MIN(t_id), MAX(t_id) FROM trade")[0]
    if low is None:
        raise TpsbenchError("TPC-E: the database has no trades; rebuild it")
    first = _rows(cur, f"SELECT t_dts FROM trade WHERE t_id = {int(low)}")[0][0]
    last = _rows(cur, f"SELECT t_dts FROM trade WHERE t_id = {int(high)}")[0][0]
    securities = tuple(Security(as_text(s), as_text(issue), as_text(name), to_decimal(price))
                       for s, issue, name, price in _rows(
        cur, "SELECT s_symb, s_issue, co_name, lt_price FROM security, company, last_trade"
             " WHERE co_id = s_co_id AND lt_s_symb = s_symb ORDER BY s_symb"))
    if not securities:
        raise TpsbenchError("TPC-E: the database has no securities with a last trade; rebuild it")
    days = _rows(cur, "SELECT MIN(dm_date), MAX(dm_date) FROM daily_market"
                      f" WHERE dm_s_symb = '{securities[0].symbol}'")[0]
    co_low, co_high = _rows(cur, "SELECT MIN(co_id), MAX(co_id) FROM company")[0]
    return Universe(
        customers=customers,
        permitted={ca: tuple(names) for ca, names in permitted.items()},
        securities=securities,
        brokers=tuple(as_text(b) for (b,) in _rows(cur, "SELECT b_name FROM broker ORDER BY b_id")),
        sectors=tuple(as_text(s) for (s,) in _rows(cur, "SELECT sc_name FROM sector ORDER BY sc_id")),
        industries=tuple(as_text(i) for (i,) in _rows(cur, "SELECT in_name FROM industry ORDER BY in_id")),
        companies=(int(co_low), int(co_high)),
        trade_ids=(int(low), int(high)),
        trade_times=(_moment(first), _moment(last)),
        market_days=(as_day(days[0]), as_day(days[1])),
        tax_ids=tuple(as_text(t) for (t,) in _rows(cur, "SELECT tx_id FROM taxrate ORDER BY tx_id")),
        exchanges=tuple(as_text(e) for (e,) in _rows(cur, "SELECT ex_id FROM exchange ORDER BY ex_id")),
        owner=owner,
    )


def _moment(value: object) -> datetime:
    """A timestamp as read: a datetime, or SQLite's text."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime.fromisoformat(str(value))


def as_day(value: object) -> date:
    """A DATE as read: a date (or datetime), or SQLite's text."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return datetime.fromisoformat(str(value)).date()
