"""Each TPC-E user's random draws (the mix they deal is the table's, table.py).

Non-uniform selection (EGen skews customers, accounts and trade ids; its exact
functions are not reproduced, the brief allows dropping exact RNG): a customer is
NURand-skewed over the customers in id order (TPC-C's A for C_ID, 1023, scaled to the
number of customers), an account is uniform among that customer's, so hot customers
make hot accounts; a trade id of the initial trades is skewed toward the newest
(u cubed from the top: the newest tenth of the ids gets some 46% of the look-ups).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TypeVar

from tpsbench.workloads.tpce.sql import cents
from tpsbench.workloads.tpce.universe import Customer, Security, Universe

#: how far the market moves a price either way of its centre, as a fraction (EGen's
#: curve swings between 20 and 30 dollars, +-20%; the loader's 900 s wave some +-4%)
PRICE_SWING = Decimal("0.05")

T = TypeVar("T")


class Draws:
    """One user's random inputs over the database's :class:`Universe`."""

    def __init__(self, seed: int, user_id: int, world: Universe) -> None:
        self.rng = random.Random(f"tpce/{seed}/{user_id}")
        self.world = world
        n = len(world.customers)
        #: NURand's A for the customers: 1023 per 3000, at least 1 (module docstring)
        self._a = max(1, (1 << max(1, (n // 3).bit_length())) - 1)
        self._c = self.rng.randint(0, self._a)
        low, high = world.trade_times
        self._span_s = max(1, int((high - low).total_seconds()))

    def percent(self) -> int:
        """Uniform 1..100, for the sub-mixes' percentages."""
        return self.rng.randint(1, 100)

    def customer(self) -> Customer:
        """A customer, NURand-skewed over the customers (one with an account)."""
        customers, rng = self.world.customers, self.rng
        n = len(customers)
        while True:
            at = (((rng.randint(0, self._a) | rng.randint(0, n - 1)) + self._c) % n)
            if customers[at].accounts:
                return customers[at]

    def account(self, customer: Customer | None = None) -> int:
        """An account of ``customer`` (a skewed one if None), uniform among its accounts."""
        accounts = (customer or self.customer()).accounts
        return accounts[self.rng.randrange(len(accounts))]

    def trade_id(self) -> int:
        """An initial trade's id, skewed toward the newest (module docstring)."""
        low, high = self.world.trade_ids
        return high - int((high - low) * self.rng.random() ** 3)

    def trade_ids(self, n: int) -> list[int]:
        """``n`` distinct ids (fewer where the initial trades are fewer), in id order."""
        low, high = self.world.trade_ids
        want = min(n, high - low + 1)
        found: set[int] = set()
        while len(found) < want:
            found.add(self.trade_id())
        return sorted(found)

    def moment(self) -> datetime:
        """A time uniform over the initial trades' span."""
        return self.world.trade_times[0] + timedelta(seconds=self.rng.randrange(self._span_s))

    def market_day(self, last_offset: int = 0) -> date:
        """A business day (Monday to Friday: DAILY_MARKET's days) of the market history,
        at least ``last_offset`` days before its last."""
        first, last = self.world.market_days
        chosen = first + timedelta(days=self.rng.randrange(max(1, (last - first).days + 1 - last_offset)))
        return chosen - timedelta(days=max(0, chosen.weekday() - 4))

    def symbol(self) -> str:
        return self.pick(self.world.securities).symbol

    def pick(self, items: Sequence[T]) -> T:
        return items[self.rng.randrange(len(items))]

    def limit_price(self, security: Security) -> Decimal:
        """A limit price, uniform in cents over the range the market moves the security's
        price in (mee.PriceCurve), so that the order is in the money half of the time and
        triggers within one period otherwise, as EGen's limit prices over its price range do."""
        low, high = price_range(security.price)
        return Decimal(self.rng.randint(int(low * 100), int(high * 100))).scaleb(-2)


def price_range(centre: Decimal) -> tuple[Decimal, Decimal]:
    """The lowest and highest price the market gives a security centred on ``centre``."""
    return cents(centre * (1 - PRICE_SWING)), cents(centre * (1 + PRICE_SWING))
