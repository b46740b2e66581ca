"""The tables whose size does not depend on the scale, and the rates the trades use.

STATUS_TYPE, TRADE_TYPE and EXCHANGE hold TPC-E's own codes; CHARGE (15 rows: trade
type x customer tier), COMMISSION_RATE (240: tier x trade type x exchange x 4 quantity
bands) and TAXRATE (320: 20 national and 300 divisional rates) hold closed-form
amounts, so that the trade loader computes the same charge, commission and tax as a
Trade-Result reading these rows, without reading them. SECTOR (12), INDUSTRY (102) and
ZIP_CODE (14,741) are synthetic names and codes. The four exchanges' addresses are
ADDRESS rows 1-4.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tpsbench.core.batch import Batch
from tpsbench.workloads.tpce import text
from tpsbench.workloads.tpce.layout import (
    EXCHANGE_ADDRESSES,
    KIND_FIXED,
    base26,
    decimal_text,
    stream,
)

STATUS_TYPES = (("CMPT", "Completed"), ("ACTV", "Active"), ("SBMT", "Submitted"), ("PNDG", "Pending"),
                ("CNCL", "Canceled"))
#: (id, name, is_sell, is_market); the order gives the codes TMB..TLB below
TRADE_TYPES = (("TMB", "Market-Buy", 0, 1), ("TMS", "Market-Sell", 1, 1), ("TSL", "Stop-Loss", 1, 0),
               ("TLS", "Limit-Sell", 1, 0), ("TLB", "Limit-Buy", 0, 0))
TMB, TMS, TSL, TLS, TLB = range(len(TRADE_TYPES))
TRADE_TYPE_IDS = np.array([t[0] for t in TRADE_TYPES], "S3")
TRADE_TYPE_NAMES = np.array([t[1] for t in TRADE_TYPES], "S12")
EXCHANGES = (("NYSE", "New York Stock Exchange"), ("NASDAQ", "NASDAQ Stock Market"),
             ("AMEX", "American Stock Exchange"), ("PCX", "Pacific Exchange"))
EXCHANGE_IDS = np.array([e[0] for e in EXCHANGES], "S6")
#: opening and closing time as HHMM: the loader's trading day
EX_OPEN, EX_CLOSE = 900, 1700
SECTORS, INDUSTRIES = 12, 102
NATIONAL_RATES, DIVISION_RATES = 20, 300
ZIP_CODES = 14_741
#: CHARGE in cents by trade type (TMB..TLB) and tier 1..3: limit orders cost more
CHARGE_CENTS = np.array([[1000, 800, 500], [1000, 800, 500], [1500, 1200, 800], [1500, 1200, 800],
                         [1500, 1200, 800]], np.int64)
#: COMMISSION_RATE's quantity bands (from, to); trades are for 100 to 800 shares
QTY_FROM = np.array([1, 200, 400, 800], np.int64)
QTY_TO = np.array([199, 399, 799, 100_000_000], np.int64)
_LIMIT_TYPE = np.array([0, 0, 1, 1, 1], np.int64)
_SECTOR, _INDUSTRY, _TAXRATE, _ZIP, _EXCHANGE = range(1, 6)


def commission_rate(tier: np.ndarray, trade_type: np.ndarray, exchange: np.ndarray, qty: np.ndarray) -> np.ndarray:
    """CR_RATE in hundredths of a percent (50 is 0.50%): lower for better tiers and
    larger quantities, higher for limit orders, a little lower on smaller exchanges."""
    band = np.searchsorted(QTY_FROM, qty, side="right") - 1
    return 50 - 10 * (np.asarray(tier, np.int64) - 1) - 5 * band + 5 * _LIMIT_TYPE[trade_type] - exchange


def tax_rate(national: np.ndarray, division: np.ndarray) -> np.ndarray:
    """The sum of a customer's two TX_RATEs in units of 10**-5: national 10-29%, divisional 0-9.99%."""
    return _national_rate(national) + _division_rate(division)


def _national_rate(k: np.ndarray) -> np.ndarray:
    return 10_000 + 1000 * np.asarray(k, np.int64)


def _division_rate(k: np.ndarray) -> np.ndarray:
    return (np.asarray(k, np.int64) * 337) % 10_000


def tax_ids(national: np.ndarray, division: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TX_IDs of national and divisional rate numbers: ``N000``.., ``D000``.."""
    return text.join(b"N", decimal_text(national, 3)), text.join(b"D", decimal_text(division, 3))


def zip_codes(k: np.ndarray) -> np.ndarray:
    """ZC_CODE of zip number k (0..ZIP_CODES-1): five digits, 10000 upwards in steps of 6."""
    return decimal_text(10_000 + 6 * np.asarray(k, np.int64), 5)


def generate(seed: int, symbols_per_exchange: np.ndarray) -> Iterator[Batch]:
    """The fixed tables; EX_NUM_SYMB is ``symbols_per_exchange`` (the market's count)."""
    yield Batch("status_type", {"st_id": np.array([s[0] for s in STATUS_TYPES], "S4"),
                                "st_name": np.array([s[1] for s in STATUS_TYPES], "S10")})
    yield Batch("trade_type", {"tt_id": TRADE_TYPE_IDS, "tt_name": TRADE_TYPE_NAMES,
                               "tt_is_sell": np.array([t[2] for t in TRADE_TYPES], np.int16),
                               "tt_is_mrkt": np.array([t[3] for t in TRADE_TYPES], np.int16)})
    n = len(EXCHANGES)
    rng = stream(seed, KIND_FIXED, _EXCHANGE)
    yield Batch("exchange", {
        "ex_id": EXCHANGE_IDS, "ex_name": np.array([e[1] for e in EXCHANGES], "S100"),
        "ex_num_symb": np.asarray(symbols_per_exchange, np.int32),
        "ex_open": np.full(n, EX_OPEN, np.int16), "ex_close": np.full(n, EX_CLOSE, np.int16),
        "ex_desc": text.prose(rng, n, 100), "ex_ad_id": np.arange(1, n + 1, dtype=np.int64),
    })
    yield Batch("address", address_columns(rng, np.arange(1, EXCHANGE_ADDRESSES + 1, dtype=np.int64)))
    sectors = base26(np.arange(SECTORS), 2)
    rng = stream(seed, KIND_FIXED, _SECTOR)
    yield Batch("sector", {"sc_id": sectors, "sc_name": text.join(b"Sector ", text.names(rng, SECTORS, 12))})
    industry = np.arange(INDUSTRIES)
    rng = stream(seed, KIND_FIXED, _INDUSTRY)
    yield Batch("industry", {"in_id": base26(industry, 2),
                             "in_name": text.join(b"Industry ", text.names(rng, INDUSTRIES, 16)),
                             "in_sc_id": sectors[industry * SECTORS // INDUSTRIES]})
    yield from _rates(seed)
    k = np.arange(ZIP_CODES)
    rng = stream(seed, KIND_FIXED, _ZIP)
    yield Batch("zip_code", {"zc_code": zip_codes(k), "zc_town": text.names(rng, ZIP_CODES, 16),
                             "zc_div": text.letters(rng, ZIP_CODES, 2)})


def _rates(seed: int) -> Iterator[Batch]:
    national, division = np.arange(NATIONAL_RATES), np.arange(DIVISION_RATES)
    rng = stream(seed, KIND_FIXED, _TAXRATE)
    n_ids, d_ids = tax_ids(national, division)
    yield Batch("taxrate", {
        "tx_id": np.concatenate([n_ids, d_ids]),
        "tx_name": np.concatenate([text.join(b"National tax ", text.names(rng, NATIONAL_RATES, 12)),
                                   text.join(b"Division tax ", text.names(rng, DIVISION_RATES, 12))]),
        "tx_rate": np.concatenate([_national_rate(national), _division_rate(division)]) / 1e5,
    })
    types, tiers = np.meshgrid(np.arange(len(TRADE_TYPES)), np.arange(1, 4), indexing="ij")
    yield Batch("charge", {"ch_tt_id": TRADE_TYPE_IDS[types.ravel()], "ch_c_tier": tiers.ravel().astype(np.int16),
                           "ch_chrg": CHARGE_CENTS.ravel() / 100})
    tier, tt, ex, band = (a.ravel() for a in np.meshgrid(np.arange(1, 4), np.arange(len(TRADE_TYPES)),
                                                          np.arange(len(EXCHANGES)), np.arange(len(QTY_FROM)),
                                                          indexing="ij"))
    yield Batch("commission_rate", {
        "cr_c_tier": tier.astype(np.int16), "cr_tt_id": TRADE_TYPE_IDS[tt], "cr_ex_id": EXCHANGE_IDS[ex],
        "cr_from_qty": QTY_FROM[band].astype(np.int32), "cr_to_qty": QTY_TO[band].astype(np.int32),
        "cr_rate": commission_rate(tier, tt, ex, QTY_FROM[band]) / 100,
    })


def address_columns(rng: np.random.Generator, ids: np.ndarray) -> dict[str, np.ndarray]:
    """ADDRESS rows for ``ids``: street, suite, a zip code of ZIP_CODE, and the country."""
    n = len(ids)
    return {
        "ad_id": ids,
        "ad_line1": text.join(text.digits(rng, n, 4), b" ", text.names(rng, n, 12), b" Street"),
        "ad_line2": text.join(b"Suite ", text.digits(rng, n, 3)),
        "ad_zc_code": zip_codes(rng.integers(0, ZIP_CODES, n)),
        "ad_ctry": np.where(rng.random(n) < 0.9, b"USA", b"CANADA"),
    }
