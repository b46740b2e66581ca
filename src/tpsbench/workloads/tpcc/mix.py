"""The TPC-C transaction mix, keying and think times (§5.2), and each user's random draws.

The mix is a deck of 100 cards (45 New-Order, 43 Payment, 4 each of Order-Status,
Delivery and Stock-Level) that every user shuffles on its own and deals to the end
before shuffling again. A deck rather than an independent draw per transaction keeps
every window of 100 transactions of one user exactly at the weights, so short runs meet
the §5.2.3 minimums (Payment >= 43%, the others >= 4%) instead of missing them by chance.

:class:`Draws` holds a user's random streams. Uniform draws use Python's ``random``
(well under a microsecond each); NURand values come from :func:`rand.nurand`, the
loader's own vectorised function, drawn a few thousand at a time, because one numpy
call costs several microseconds and a New-Order needs a dozen NURand values.
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from typing import Any

import numpy as np

from tpsbench.workloads.tpcc import rand
from tpsbench.workloads.tpcc.loader import CUSTOMERS_PER_DISTRICT, DISTRICTS_PER_WAREHOUSE, ITEMS

#: transaction names, in report order
TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
#: cards per 100 (the BenchBase/HammerDB weights that meet the §5.2.3 minimums)
WEIGHTS = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}
#: §5.2.5.7 minimum keying times, seconds
KEYING_S = {"new_order": 18.0, "payment": 3.0, "order_status": 2.0, "delivery": 2.0, "stock_level": 2.0}
#: §5.2.5.4 minimum mean think times, seconds
THINK_MEAN_S = {"new_order": 12.0, "payment": 12.0, "order_status": 10.0, "delivery": 5.0, "stock_level": 5.0}
#: §5.2.5.4: a think time may be truncated at ten times its mean
THINK_CAP = 10.0
#: NURand draws fetched per numpy call
POOL_SIZE = 4096
#: last names by number, as str (rand.LAST_NAMES holds bytes)
LAST_NAMES: tuple[str, ...] = tuple(name.decode() for name in rand.LAST_NAMES.tolist())


class Deck:
    """A shuffled deck of transaction names, dealt one card at a time."""

    __slots__ = ("_cards", "_next", "_rng")

    def __init__(self, rng: random.Random, weights: dict[str, int] = WEIGHTS) -> None:
        self._cards = [name for name, count in weights.items() for _ in range(count)]
        self._rng = rng
        self._next = len(self._cards)

    def draw(self) -> str:
        """The next card; the deck is reshuffled whenever it runs out."""
        if self._next == len(self._cards):
            self._rng.shuffle(self._cards)
            self._next = 0
        card = self._cards[self._next]
        self._next += 1
        return card


def keying_time(name: str, think: bool) -> float:
    """§5.2.5.7 keying time of ``name`` in seconds; 0 when think times are off."""
    return KEYING_S[name] if think else 0.0


def think_time(name: str, rng: random.Random, think: bool) -> float:
    """§5.2.5.4 think time ``-ln(r) * mean`` with r uniform in (0, 1], capped at 10 x mean."""
    if not think:
        return 0.0
    mean = THINK_MEAN_S[name]
    return min(-math.log(1.0 - rng.random()) * mean, THINK_CAP * mean)


def run_constants(seed: int, load: dict[str, int]) -> dict[str, int]:
    """The C-run constants of a run, the same for every user (§2.1.6: one C per field).

    Derived from the run seed alone, so that every worker process agrees without
    communicating; C_LAST obeys the §2.1.6.1 gap to the stored C-load.
    """
    missing = {"c_last", "c_id", "ol_i_id"} - set(load)
    if missing:
        raise ValueError(f"C-load constants missing from the build's metadata: {', '.join(sorted(missing))}")
    gen = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([seed, 0xC0])))
    return rand.run_constants(gen, load)


class _Pool:
    """Integers drawn ``POOL_SIZE`` at a time by ``fill(size)`` (a numpy array), dealt
    one or a few at a time: one numpy call costs several microseconds, a value dealt
    from the pool a fraction of one.

    The values wait in an ``array('i')`` (4 bytes each) rather than a list of Python ints
    (36 bytes each): four pools a user, 300 users a step, that is 170 MB less.
    """

    __slots__ = ("_fill", "_next", "_values")

    def __init__(self, fill: Callable[[int], Any]) -> None:
        self._fill = fill
        self._values = array("i")
        self._next = 0

    def _refill(self, n: int) -> None:
        fresh = array("i", self._fill(POOL_SIZE).astype(np.int32).tobytes())
        self._values = self._values[self._next:] + fresh
        self._next = 0

    def take(self, n: int) -> list[int]:
        if self._next + n > len(self._values):
            self._refill(n)
        start = self._next
        self._next = start + n
        return self._values[start:start + n].tolist()

    def one(self) -> int:
        if self._next >= len(self._values):
            self._refill(1)
        value = self._values[self._next]
        self._next += 1
        return value


class Draws:
    """One user's random streams: uniform integers, NURand values, last names."""

    def __init__(self, seed: int, user_id: int, scale: int, c_run: dict[str, int]) -> None:
        gen = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([seed, 0x7C, user_id])))
        #: uniform draws and deck shuffles
        self.rng = random.Random(int(gen.integers(1 << 62)))
        #: think times, apart so that the inputs drawn do not depend on whether think is on
        self.wait_rng = random.Random(int(gen.integers(1 << 62)))
        self.scale = scale
        self._bits = self.rng.getrandbits
        self.c_id = _Pool(partial(rand.nurand, gen, rand.A_C_ID, 1, CUSTOMERS_PER_DISTRICT, c_run["c_id"]))
        self.ol_i_id = _Pool(partial(rand.nurand, gen, rand.A_OL_I_ID, 1, ITEMS, c_run["ol_i_id"]))
        self.c_last = _Pool(partial(rand.nurand, gen, rand.A_C_LAST, 0, 999, c_run["c_last"]))
        #: uniform in 0..999, one per New-Order line: its tens (0..99) pick a remote
        #: supplier (0: 1%), its last digit the quantity (0..9 -> 1..10); independent
        #: and uniform, for one value dealt where a draw each would cost twice as much
        self.line = _Pool(partial(gen.integers, 0, 1000))

    def uniform(self, x: int, y: int) -> int:
        """``random(x, y)``, both ends inclusive: the value ``rng.randint(x, y)`` draws.

        This is CPython's randint (``_randbelow_with_getrandbits``: k = n.bit_length()
        random bits, drawn again while >= n) without randrange's argument handling, which
        is most of its cost; a New-Order draws some 35 of these.
        """
        n = y - x + 1
        if n <= 0:
            raise ValueError(f"empty range for uniform({x}, {y})")
        k = n.bit_length()
        r = self._bits(k)
        while r >= n:
            r = self._bits(k)
        return x + r

    def district(self) -> int:
        return self.uniform(1, DISTRICTS_PER_WAREHOUSE)

    def warehouse(self) -> int:
        return self.uniform(1, self.scale)

    def other_warehouse(self, w_id: int) -> int:
        """A warehouse other than ``w_id``, uniform; ``w_id`` itself when there is only one."""
        if self.scale == 1:
            return w_id
        other = self.uniform(1, self.scale - 1)
        return other + 1 if other >= w_id else other

    def customer(self) -> tuple[int | None, str | None]:
        """§2.5.1.2 / §2.6.1.2: (None, C_LAST) 60% of the time, else (C_ID, None)."""
        if self.uniform(1, 100) <= 60:
            return None, LAST_NAMES[self.c_last.one()]
        return self.c_id.one(), None

    def money(self, low_cents: int, high_cents: int) -> Decimal:
        """An amount uniform in whole cents, as an exact Decimal with two places."""
        return Decimal(self.uniform(low_cents, high_cents)).scaleb(-2)
