"""The holding lots a trade takes from: shared by Trade-Order (its tax estimate) and
Trade-Result (which changes them), so that both walk the lots by the same rule.

A sell takes from the account's long lots of the symbol and a buy from its short ones,
newest first (LIFO) or oldest first (FIFO), until the trade's quantity is covered; what
is left over opens a new lot the other way (a short sale, or a long buy). Lots are
given as (h_t_id, h_qty, h_price) in the order they are taken. (The loader's initial
trades follow a simpler rule of their own, walk.py.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

#: one holding lot as read: (h_t_id, h_qty, h_price)
Lot = tuple[int, int, Decimal]


@dataclass(slots=True)
class Taken:
    """What a trade does to the lots: per lot touched (h_t_id, h_qty before, after),
    the quantity left over for a new lot (signed: positive long), and the value at the
    lots' prices (``held``) and at the trade's (``traded``) of the quantity covered."""

    changes: list[tuple[int, int, int]]
    left: int
    held: Decimal
    traded: Decimal

    def values(self, is_sell: bool) -> tuple[Decimal, Decimal]:
        """(buy_value, sell_value) as the frames name them: a sell sold at the trade's
        price what was bought at the lots'; a buy covering shorts the other way round."""
        return (self.held, self.traded) if is_sell else (self.traded, self.held)


def take(lots: Sequence[Lot], qty: int, price: Decimal, is_sell: bool) -> Taken:
    """Walk ``lots`` (long lots for a sell, short ones for a buy) for ``qty`` shares
    traded at ``price``."""
    needed = qty
    changes: list[tuple[int, int, int]] = []
    held = traded = Decimal(0)
    for h_t_id, h_qty, h_price in lots:
        if not needed:
            break
        size = abs(h_qty)
        part = min(size, needed)
        after = (size - part) * (1 if h_qty > 0 else -1)
        changes.append((h_t_id, h_qty, after))
        held += part * h_price
        traded += part * price
        needed -= part
    return Taken(changes, -needed if is_sell else needed, held, traded)
