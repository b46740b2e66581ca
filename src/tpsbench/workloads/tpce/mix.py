"""The TPC-E customer emulator's mix and each user's random draws.

The emulated customers (the users) run the mix of the brief's B2 without Trade-Result
and Market-Feed, which come from the market exchange emulator (mee.py) alone: per 1000
transactions of the whole mix 49 Broker-Volume, 130 Customer-Position, 180 Market-Watch,
140 Security-Detail, 80 Trade-Lookup, 101 Trade-Order, 190 Trade-Status and 20
Trade-Update, i.e. a deck of 890 cards that each user shuffles on its own and deals to
the end (every window of 890 of one user's transactions is exactly at the weights, as
TPC-C's deck is). Trade-Result (100) and Market-Feed (10) then emerge from the orders
the Trade-Orders place.

Non-uniform selection (EGen skews customers, accounts and trade ids; its exact
functions are not reproduced, the brief allows dropping exact RNG): a customer is
NURand-skewed over the customers in id order (TPC-C's A for C_ID, 1023, scaled to the
number of customers), an account is uniform among that customer's, so hot customers
make hot accounts; a trade id of the initial trades is skewed toward the newest
(u cubed from the top: the newest tenth of the ids gets some 46% of the look-ups).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from itertools import chain, repeat
from typing import TypeVar

from tpsbench.core.parse import parse_mix
from tpsbench.workloads.tpce.sql import cents
from tpsbench.workloads.tpce.universe import Customer, Security, Universe

#: every transaction of the run, in report order (B2's table)
TRANSACTIONS = ("broker_volume", "customer_position", "market_feed", "market_watch", "security_detail",
                "trade_lookup", "trade_order", "trade_result", "trade_status", "trade_update", "data_maintenance")
#: B2's weights per 1000 of the whole mix
WEIGHTS = {"broker_volume": 49, "customer_position": 130, "market_feed": 10, "market_watch": 180,
           "security_detail": 140, "trade_lookup": 80, "trade_order": 101, "trade_result": 100,
           "trade_status": 190, "trade_update": 20}
#: what the market exchange emulator sends, not the customers
FROM_MARKET = ("trade_result", "market_feed")
#: the users' deck: the weights without the market's
CUSTOMER_WEIGHTS = {name: n for name, n in WEIGHTS.items() if name not in FROM_MARKET}
#: how far the market moves a price either way of its centre, as a fraction (EGen's
#: curve swings between 20 and 30 dollars, +-20%; the loader's 900 s wave some +-4%)
PRICE_SWING = Decimal("0.05")

T = TypeVar("T")


def mix_shares(options: Mapping[str, str]) -> dict[str, float] | None:
    """The users' mix --mix asks for (None: the rule's), or a one-line error; Trade-Result
    and Market-Feed are the market's, and follow from the Trade-Orders."""
    text = options.get("mix", "")
    return parse_mix(text, tuple(CUSTOMER_WEIGHTS)) if text else None


class Deck:
    """The users' transactions, dealt from a shuffled deck of 890 cards (module docstring)."""

    __slots__ = ("_deal",)

    def __init__(self, rng: random.Random, shares: Mapping[str, float] | None = None) -> None:
        """``shares``: --mix, each user transaction's share (summing to 1), dealt as cards
        per 1,000; default CUSTOMER_WEIGHTS, the rule's."""
        counts = CUSTOMER_WEIGHTS if shares is None else {name: round(1000 * share) for name, share in shares.items()}
        cards = [name for name, n in counts.items() for _ in range(n)]
        self._deal: Iterator[str] = chain.from_iterable(map(_shuffled, repeat(cards), repeat(rng)))

    def draw(self) -> str:
        return next(self._deal)


def _shuffled(cards: list[str], rng: random.Random) -> list[str]:
    out = cards[:]
    rng.shuffle(out)
    return out


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
