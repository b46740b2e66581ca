"""The loader's lot walk of the initial trades: which completed trade buys, which sells
which lot (Trade-Result walks lots its own way, in lots.py).

Every (account, security) pair trades one quantity throughout the initial trades, so
every buy opens one lot of that size and every sell closes one whole lot: the first
still open for a FIFO account, the last for a LIFO one (T_LIFO is the account's).
Nothing goes short: the pair's position in lots after its k-th completed trade is
``|S_k|``, S a simple random walk of the trades' ±1 steps, which is exactly the chain
"buy when flat, else buy or sell with even odds". A trade buys where ``|S|`` grows.

That makes the walk vectorisable a day at a time, with only counters and the open lots
carried from day to day. A sell and the lot it closes share a key: FIFO, the pair and
the lot's rank (the k-th sell closes the k-th buy); LIFO, the pair and the lot's level
(the position it raised the pair to; the sell that next lowers the pair from that level
closes it, and buys and sells at one level alternate). Sorted by (key, completion), each
of a day's sells follows the lot it closes, or closes the open lot of its key carried
from an earlier day. The row counter (expected.py) needs none of it: a pair ends with
``|sum of its steps|`` open lots.
"""

from __future__ import annotations

import numpy as np


class Book:
    """The positions and open lots of one load unit's pairs, walked a day at a time."""

    def __init__(self, lifo: np.ndarray) -> None:
        pairs = len(lifo)
        #: per pair: LIFO (else FIFO), the walk S, buys and sells so far
        self.lifo = lifo
        self.walk = np.zeros(pairs, np.int64)
        self.buys = np.zeros(pairs, np.int64)
        self.sells = np.zeros(pairs, np.int64)
        #: the open lots, sorted by key: key, opening trade id, price (cents), time (epoch s)
        self.key = np.zeros(0, np.int64)
        self.t_id = np.zeros(0, np.int64)
        self.price = np.zeros(0, np.int64)
        self.dts = np.zeros(0, np.int64)

    def settle(self, pair: np.ndarray, step: np.ndarray, t_id: np.ndarray, price: np.ndarray,
               dts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Walk a day's completed trades, given in completion order. Returns per trade
        whether it buys and, for a sell, the id and price of the lot it closes (0 for buys)."""
        by_pair = np.argsort(pair, kind="stable")
        p, st = pair[by_pair], step[by_pair].astype(np.int64)
        before = self.walk[p] + _prefix(p, st)
        after = before + st
        buy = np.abs(after) > np.abs(before)
        rank = np.where(buy, self.buys[p] + _prefix(p, buy.astype(np.int64)),
                        self.sells[p] + _prefix(p, (~buy).astype(np.int64)))
        level = np.where(buy, np.abs(after), np.abs(before))
        key = (p << 32) | np.where(self.lifo[p], level, rank)
        pairs = len(self.walk)
        self.walk += np.bincount(p, weights=st, minlength=pairs).astype(np.int64)
        self.buys += np.bincount(p, weights=buy, minlength=pairs).astype(np.int64)
        self.sells += np.bincount(p, weights=~buy, minlength=pairs).astype(np.int64)

        order = np.lexsort((by_pair, key))
        k, b, trade = key[order], buy[order], by_pair[order]
        same_prev = np.r_[False, k[1:] == k[:-1]]
        assert not (same_prev[1:] & (b[1:] == b[:-1])).any(), "buys and sells of one key must alternate"
        closes_new = ~b & same_prev
        closes_old = ~b & ~same_prev
        lot_t_id = np.zeros(len(k), np.int64)
        lot_price = np.zeros(len(k), np.int64)
        opener = trade[np.flatnonzero(closes_new) - 1]
        lot_t_id[closes_new], lot_price[closes_new] = t_id[opener], price[opener]
        at = np.searchsorted(self.key, k[closes_old])
        assert (self.key[np.minimum(at, len(self.key) - 1)] == k[closes_old]).all(), "a sell without a lot"
        lot_t_id[closes_old], lot_price[closes_old] = self.t_id[at], self.price[at]
        still_open = b & ~np.r_[same_prev[1:], False]
        self._replace(at, k[still_open], trade[still_open], t_id, price, dts)

        out_buy, out_t_id, out_price = (np.empty_like(a) for a in (b, lot_t_id, lot_price))
        out_buy[trade], out_t_id[trade], out_price[trade] = b, lot_t_id, lot_price
        return out_buy, out_t_id, out_price

    def open_lots(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The lots still open: pair, opening trade id, price (cents), time (epoch s)."""
        return self.key >> 32, self.t_id, self.price, self.dts

    def _replace(self, closed: np.ndarray, keys: np.ndarray, trade: np.ndarray, t_id: np.ndarray,
                 price: np.ndarray, dts: np.ndarray) -> None:
        """Drop the closed lots (their positions) and add the day's still open ones."""
        keep = np.ones(len(self.key), bool)
        keep[closed] = False
        old = self.key[keep]
        at = np.searchsorted(old, keys)
        self.key = np.insert(old, at, keys)
        self.t_id = np.insert(self.t_id[keep], at, t_id[trade])
        self.price = np.insert(self.price[keep], at, price[trade])
        self.dts = np.insert(self.dts[keep], at, dts[trade])


def _prefix(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Exclusive running sums of ``values`` within runs of equal ``groups`` (sorted)."""
    total = np.cumsum(values) - values
    start = np.r_[True, groups[1:] != groups[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(len(groups)), 0))
    return total - total[first]
