"""What the initial trades of one load unit are made of, drawn the same way by the trade
task (trades.py) and the row counter (expected.py).

Each account trades 6-18 securities of its load unit (its pairs), each pair one
quantity of 100 to 800 shares, and is LIFO with probability 0.35. A day has
trades_per_day trades (57,600 per load unit) submitted at uniform seconds of its eight
hours; a trade's account is drawn with weight 1, 2, 3 for its customer's tier 1, 2, 3,
shared among that customer's accounts (tier-3 customers trade three times as much as
tier-1 ones, whatever their number of accounts), its pair uniformly among the account's.
40% are limit orders, which trigger after a uniform 0-900 s; every order then completes
after min(exponential(1 s), 5 s), as the brief's market emulator does; 92% are cash.

Each column of a day has a stream of its own, so the counter draws only the columns that
decide the row counts, and the times only for the last day, the one day whose close
leaves trades incomplete (earlier days' late limit orders complete after the close,
before the next day opens).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tpsbench.workloads.tpce.customers import Accounts
from tpsbench.workloads.tpce.layout import (
    DAY_SECONDS,
    KIND_TRADES,
    SECURITIES_PER_LU,
    TRADES_PER_DAY,
    stream,
)

SECURITIES_PER_ACCOUNT = (6, 18)
LOTS_OF_100 = (1, 8)
TIER_ACTIVITY = np.array([0.0, 1.0, 2.0, 3.0])
LIFO_SHARE, LIMIT_SHARE, CASH_SHARE, STOP_LOSS_SHARE = 0.35, 0.40, 0.92, 0.50
MARKET_DELAY_MEAN_S, MARKET_DELAY_MAX_S, LIMIT_DELAY_MAX_S = 1.0, 5.0, 900
#: how far from the market a limit order left pending is, in percent
PENDING_OFFSET_PCT = (5, 15)
_PROFILE, _PAIRS, _DAY = 1, 2, 3
_ACCOUNT, _SLOT, _LIMIT, _CASH, _STEP, _TIME, _DELAY, _SIDE, _STOP, _OFFSET = range(1, 11)


@dataclass(frozen=True)
class Profile:
    """How one load unit's accounts trade: account weights and pairs."""

    #: cumulative selection probability per account (ends with 1.0)
    cdf: np.ndarray
    #: per account: its first pair and number of pairs
    start: np.ndarray
    size: np.ndarray
    #: per account: T_LIFO; per pair: its account, security (local index), quantity
    lifo: np.ndarray | None = None
    pair_account: np.ndarray | None = None
    pair_security: np.ndarray | None = None
    pair_qty: np.ndarray | None = None

    @property
    def pairs(self) -> int:
        return int(self.size.sum())


def profile(seed: int, lu: int, acc: Accounts, full: bool = True) -> Profile:
    """The load unit's trading profile; ``full=False``: only what the row count needs."""
    n = len(acc.ca_id)
    size = stream(seed, KIND_TRADES, lu, _PROFILE).integers(SECURITIES_PER_ACCOUNT[0], SECURITIES_PER_ACCOUNT[1] + 1, n)
    weight = TIER_ACTIVITY[acc.tier[acc.owner]] / acc.count[acc.owner]
    cdf = np.cumsum(weight)
    cdf /= cdf[-1]
    start = np.cumsum(size) - size
    if not full:
        return Profile(cdf, start, size)
    rng = stream(seed, KIND_TRADES, lu, _PAIRS)
    # distinct securities per account: the first `size` of a random order of all
    widest = SECURITIES_PER_ACCOUNT[1]
    chosen = np.argsort(rng.random((n, SECURITIES_PER_LU)), axis=1, kind="stable")[:, :widest]
    pair_security = chosen[np.arange(widest) < size[:, None]]
    qty = 100 * rng.integers(LOTS_OF_100[0], LOTS_OF_100[1] + 1, len(pair_security))
    return Profile(cdf, start, size, lifo=rng.random(n) < LIFO_SHARE, pair_account=np.repeat(np.arange(n), size),
                   pair_security=pair_security, pair_qty=qty)


@dataclass(frozen=True)
class Day:
    """One day's trades in submission (trade id) order."""

    account: np.ndarray
    pair: np.ndarray
    limit: np.ndarray
    cash: np.ndarray
    #: the trade's step of its pair's walk (walk.py), used where it completes
    step: np.ndarray


def day(seed: int, lu: int, number: int, prof: Profile) -> Day:
    """Day ``number`` (0-based) of load unit ``lu``: the columns that decide row counts."""
    n = TRADES_PER_DAY
    account = _inverse_cdf(prof.cdf, _column(seed, lu, number, _ACCOUNT).random(n))
    return Day(
        account=account,
        pair=prof.start[account] + _column(seed, lu, number, _SLOT).integers(0, prof.size[account]),
        limit=_column(seed, lu, number, _LIMIT).random(n) < LIMIT_SHARE,
        cash=_column(seed, lu, number, _CASH).random(n) < CASH_SHARE,
        step=_column(seed, lu, number, _STEP).integers(0, 2, n).astype(np.int8) * 2 - 1,
    )


@dataclass(frozen=True)
class Times:
    """Seconds after the day's opening: submitted, triggered (limit orders; = submitted
    for market orders), completed."""

    t0: np.ndarray
    t1: np.ndarray
    t2: np.ndarray


def times(seed: int, lu: int, number: int, limit: np.ndarray) -> Times:
    n = TRADES_PER_DAY
    t0 = np.sort(_column(seed, lu, number, _TIME).integers(0, DAY_SECONDS, n))
    rng = _column(seed, lu, number, _DELAY)
    market = np.minimum(rng.exponential(MARKET_DELAY_MEAN_S, n), MARKET_DELAY_MAX_S).astype(np.int64)
    t1 = t0 + np.where(limit, rng.integers(0, LIMIT_DELAY_MAX_S + 1, n), 0)
    return Times(t0, t1, t1 + market)


def completed(t: Times, last_day: bool) -> tuple[np.ndarray, np.ndarray]:
    """Which trades completed and which limit orders triggered before the initial
    trades end (the last day's close); every one of an earlier day."""
    if not last_day:
        return np.ones(len(t.t0), bool), np.ones(len(t.t0), bool)
    return t.t2 < DAY_SECONDS, t.t1 < DAY_SECONDS


@dataclass(frozen=True)
class Choices:
    """What only the generator needs: the side of an incomplete order (its walk decides a
    completed one's), stop-loss for a limit sell, a pending order's distance in percent."""

    sell: np.ndarray
    stop: np.ndarray
    offset_pct: np.ndarray


def choices(seed: int, lu: int, number: int) -> Choices:
    n = TRADES_PER_DAY
    return Choices(
        sell=_column(seed, lu, number, _SIDE).random(n) < 0.5,
        stop=_column(seed, lu, number, _STOP).random(n) < STOP_LOSS_SHARE,
        offset_pct=_column(seed, lu, number, _OFFSET).integers(PENDING_OFFSET_PCT[0], PENDING_OFFSET_PCT[1] + 1, n),
    )


def _inverse_cdf(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The index each of ``u`` falls on in ``cdf``: searched in sorted order, which is
    several times faster than searching random keys (a day's draws: 1-2 ms, not 10)."""
    order = np.argsort(u)
    index = np.empty(len(u), np.int64)
    index[order] = np.searchsorted(cdf, u[order], side="right")
    return index


def _column(seed: int, lu: int, number: int, column: int) -> np.random.Generator:
    return stream(seed, KIND_TRADES, lu, _DAY, number, column)
