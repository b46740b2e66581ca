"""One load unit's customers: CUSTOMER, their ADDRESS rows, CUSTOMER_ACCOUNT,
ACCOUNT_PERMISSION, CUSTOMER_TAXRATE, WATCH_LIST and WATCH_ITEM (``LoadTask("customers", (lu,))``).

Tiers are 1, 2, 3 for 20%, 60%, 20% of the customers; a customer of tier 1, 2, 3 has
1-4, 2-8, 5-10 accounts (about 5,000 per load unit), each with a broker of the load
unit drawn uniformly, a tax status 0-2 and a balance of 10,000 to 100,000 dollars. An
account has 1-4 ACCOUNT_PERMISSION rows: its owner's (ACL ``0000``, the owner's tax id
and name) and up to three other people's. A customer has one national and one
divisional tax rate (CUSTOMER_TAXRATE) and one watch list of 50-150 different
securities drawn uniformly from every load unit's.

Tax ids are unique by construction: a customer's is a fixed bijection of its id on ten
digits, another permitted person's is ``P`` and the same bijection of (account, row).
The accounts, names and tax rates come from streams of their own, which the trade task
(trades.py) replays for the tiers, brokers, executor names and tax rates of its trades.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tpsbench.core.batch import Batch
from tpsbench.core.workload import LoadParams
from tpsbench.workloads.tpce import text
from tpsbench.workloads.tpce.fixed import (
    DIVISION_RATES,
    NATIONAL_RATES,
    address_columns,
    tax_ids,
)
from tpsbench.workloads.tpce.layout import (
    BROKERS_PER_LU,
    CUSTOMERS_PER_LU,
    KIND_CUSTOMERS,
    SECURITIES_PER_LU,
    account_ids,
    address_ids,
    base26,
    customer_ids,
    dates,
    decimal_text,
    stream,
    symbols,
)

#: tier shares (cumulative) and each tier's accounts per customer
TIER_CUMULATIVE = (0.2, 0.8)
ACCOUNTS_PER_TIER = ((1, 4), (2, 8), (5, 10))
PERMISSIONS_PER_ACCOUNT = (1, 4)
WATCH_ITEMS = (50, 150)
OTHER_ACLS = (b"0001", b"0011", b"0111")
DOMAINS = (b"example.com", b"example.net", b"example.org")
_TIER, _ACCOUNTS, _BROKER, _NAMES, _TAX, _CUSTOMER, _ACCOUNT, _PERM_COUNT, _PERM, _WATCH_COUNT, _WATCH, \
    _BROKER_NAMES = range(1, 13)


@dataclass(frozen=True)
class Accounts:
    """One load unit's customers (per customer) and accounts (per account)."""

    c_id: np.ndarray
    tier: np.ndarray
    #: accounts per customer
    count: np.ndarray
    ca_id: np.ndarray
    #: the owning customer's index in c_id
    owner: np.ndarray
    b_id: np.ndarray
    tax_st: np.ndarray


def accounts(seed: int, lu: int) -> Accounts:
    n = CUSTOMERS_PER_LU
    c_id = customer_ids(lu)
    tier = 1 + np.searchsorted(TIER_CUMULATIVE, stream(seed, KIND_CUSTOMERS, lu, _TIER).random(n), side="right")
    low, high = (np.array(bound)[tier - 1] for bound in zip(*ACCOUNTS_PER_TIER))
    count = stream(seed, KIND_CUSTOMERS, lu, _ACCOUNTS).integers(low, high + 1)
    owner = np.repeat(np.arange(n), count)
    k = np.arange(len(owner)) - np.repeat(np.cumsum(count) - count, count)
    rng = stream(seed, KIND_CUSTOMERS, lu, _BROKER)
    return Accounts(
        c_id=c_id, tier=tier.astype(np.int16), count=count, ca_id=account_ids(c_id[owner], k), owner=owner,
        b_id=lu * BROKERS_PER_LU + rng.integers(0, BROKERS_PER_LU, len(owner)) + 1,
        tax_st=rng.integers(0, 3, len(owner)).astype(np.int16),
    )


def names(seed: int, lu: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First (8 letters), last (12) and middle (1) names of the load unit's customers."""
    rng = stream(seed, KIND_CUSTOMERS, lu, _NAMES)
    n = CUSTOMERS_PER_LU
    return text.names(rng, n, 8), text.names(rng, n, 12), text.letters(rng, n, 1)


def tax_rates(seed: int, lu: int) -> tuple[np.ndarray, np.ndarray]:
    """Each customer's national and divisional rate number (TAXRATE's N and D rows)."""
    rng = stream(seed, KIND_CUSTOMERS, lu, _TAX)
    return rng.integers(0, NATIONAL_RATES, CUSTOMERS_PER_LU), rng.integers(0, DIVISION_RATES, CUSTOMERS_PER_LU)


def broker_names(seed: int, lu: int) -> np.ndarray:
    """B_NAME of the load unit's brokers: a name and the broker id in letters (unique)."""
    rng = stream(seed, KIND_CUSTOMERS, lu, _BROKER_NAMES)
    b_id = lu * BROKERS_PER_LU + np.arange(1, BROKERS_PER_LU + 1)
    return text.join(text.names(rng, BROKERS_PER_LU, 8), b" ", text.names(rng, BROKERS_PER_LU, 12), b" ",
                     base26(b_id, 5))


def tax_id_text(x: np.ndarray) -> np.ndarray:
    """Ten digits, a bijection of x on 0..10**10-1 (the multiplier is prime to 10)."""
    return decimal_text((np.asarray(x, np.int64) * 7_919_993 + 1_234_567) % 10**10, 10)


def permission_counts(seed: int, lu: int, n_accounts: int) -> np.ndarray:
    return stream(seed, KIND_CUSTOMERS, lu, _PERM_COUNT).integers(PERMISSIONS_PER_ACCOUNT[0],
                                                                   PERMISSIONS_PER_ACCOUNT[1] + 1, n_accounts)


def watch_counts(seed: int, lu: int) -> np.ndarray:
    return stream(seed, KIND_CUSTOMERS, lu, _WATCH_COUNT).integers(WATCH_ITEMS[0], WATCH_ITEMS[1] + 1,
                                                                    CUSTOMERS_PER_LU)


def generate(lu: int, params: LoadParams, lus: int) -> Iterator[Batch]:
    seed = params.seed
    acc = accounts(seed, lu)
    first, last, middle = names(seed, lu)
    yield from _customers(seed, lu, acc, first, last, middle)
    yield from _accounts(seed, lu, acc, first, last)
    national, division = tax_rates(seed, lu)
    n_ids, d_ids = tax_ids(national, division)
    yield Batch("customer_taxrate", {"cx_tx_id": np.stack([n_ids, d_ids], axis=1).ravel(),
                                     "cx_c_id": np.repeat(acc.c_id, 2)})
    yield Batch("watch_list", {"wl_id": acc.c_id, "wl_c_id": acc.c_id})
    owner, security = _distinct(stream(seed, KIND_CUSTOMERS, lu, _WATCH), watch_counts(seed, lu),
                                lus * SECURITIES_PER_LU)
    yield Batch("watch_item", {"wi_wl_id": acc.c_id[owner], "wi_s_symb": symbols(security)})


def _customers(seed: int, lu: int, acc: Accounts, first: np.ndarray, last: np.ndarray,
               middle: np.ndarray) -> Iterator[Batch]:
    n = CUSTOMERS_PER_LU
    rng = stream(seed, KIND_CUSTOMERS, lu, _CUSTOMER)
    ad_id = address_ids(lu, np.arange(n))
    phones: dict[str, np.ndarray] = {}
    for k in (1, 2, 3):
        phones |= {f"c_ctry_{k}": np.full(n, b"1", "S1"), f"c_area_{k}": text.digits(rng, n, 3),
                   f"c_local_{k}": text.digits(rng, n, 7), f"c_ext_{k}": text.digits(rng, n, 3)}
    email = text.join(np.char.lower(first), b".", np.char.lower(last), b"@")
    yield Batch("customer", {
        "c_id": acc.c_id,
        "c_tax_id": tax_id_text(acc.c_id),
        "c_st_id": np.full(n, b"ACTV", "S4"),
        "c_l_name": last,
        "c_f_name": first,
        "c_m_name": middle,
        "c_gndr": np.where(rng.random(n) < 0.5, b"M", b"F"),
        "c_tier": acc.tier,
        "c_dob": dates(np.datetime64("1930-01-01") + rng.integers(0, 27_000, n)),
        "c_ad_id": ad_id,
        **phones,
        "c_email_1": text.join(email, text.pick(DOMAINS, rng.integers(0, len(DOMAINS), n))),
        "c_email_2": text.join(email, text.pick(DOMAINS, rng.integers(0, len(DOMAINS), n))),
    })
    yield Batch("address", address_columns(rng, ad_id))


def _accounts(seed: int, lu: int, acc: Accounts, first: np.ndarray, last: np.ndarray) -> Iterator[Batch]:
    m = len(acc.ca_id)
    rng = stream(seed, KIND_CUSTOMERS, lu, _ACCOUNT)
    yield Batch("customer_account", {
        "ca_id": acc.ca_id,
        "ca_b_id": acc.b_id,
        "ca_c_id": acc.c_id[acc.owner],
        "ca_name": text.join(text.names(rng, m, 10), b" ", text.names(rng, m, 10), b" account"),
        "ca_tax_st": acc.tax_st,
        "ca_bal": rng.integers(1_000_000, 10_000_001, m) / 100,
    })
    count = permission_counts(seed, lu, m)
    account = np.repeat(np.arange(m), count)
    row = np.arange(len(account)) - np.repeat(np.cumsum(count) - count, count)
    owner = row == 0
    rng = stream(seed, KIND_CUSTOMERS, lu, _PERM)
    rows = len(account)
    customer = acc.owner[account]
    yield Batch("account_permission", {
        "ap_ca_id": acc.ca_id[account],
        "ap_acl": np.where(owner, b"0000", text.pick(OTHER_ACLS, rng.integers(0, len(OTHER_ACLS), rows))),
        "ap_tax_id": np.where(owner, tax_id_text(acc.c_id[customer]),
                              text.join(b"P", tax_id_text(acc.ca_id[account] * 4 + row))),
        "ap_l_name": np.where(owner, last[customer], text.names(rng, rows, 12)),
        "ap_f_name": np.where(owner, first[customer], text.names(rng, rows, 8)),
    })


def _distinct(rng: np.random.Generator, counts: np.ndarray, universe: int) -> tuple[np.ndarray, np.ndarray]:
    """For list i, counts[i] different values uniform in 0..universe-1, as (list, value)
    pairs sorted by list and value: draw, then draw again where a list repeats a value."""
    owner = np.repeat(np.arange(len(counts)), counts)
    values = rng.integers(0, universe, len(owner))
    while True:
        order = np.lexsort((values, owner))
        values = values[order]
        repeated = np.r_[False, values[1:] == values[:-1]] & np.r_[False, owner[1:] == owner[:-1]]
        if not repeated.any():
            return owner, values
        values[repeated] = rng.integers(0, universe, int(repeated.sum()))
