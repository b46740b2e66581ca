"""The TPC-C transaction mix, keying and think times (§5.2), and each user's random draws.

The mix is a deck of 100 cards (45 New-Order, 43 Payment, 4 each of Order-Status,
Delivery and Stock-Level) that every user shuffles on its own and deals to the end
before shuffling again. A deck rather than an independent draw per transaction keeps
every window of 100 transactions of one user exactly at the weights, so short runs meet
the §5.2.3 minimums (Payment >= 43%, the others >= 4%) instead of missing them by chance.
With ``delivery=deferred`` the terminals still deal Delivery cards but queue them
(deferred.py): the mix a step reports counts the Deliveries its executors committed,
which matches the cards dealt once they keep up, short of those queued at the step's end.

:class:`Draws` holds a user's random streams. The draws every transaction makes
(NURand values from :func:`columns.nurand`, the loader's own vectorised function; districts,
quantities, percentages) are drawn by numpy a thousand at a time, because one numpy call
costs several microseconds, and dealt by iterators in C; the rare ones use Python's
``random`` (well under a microsecond each).
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from functools import partial
from itertools import chain, islice, repeat
from typing import Any

import numpy as np

from tpsbench.core import columns
from tpsbench.workloads.tpcc import rand
from tpsbench.workloads.tpcc.loader import (
    CUSTOMERS_PER_DISTRICT,
    DISTRICTS_PER_WAREHOUSE,
    ITEMS,
    OL_CNT_MAX,
    OL_CNT_MIN,
)

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
#: values drawn per numpy call
POOL_SIZE = 1024
#: last names by number, as str (rand.LAST_NAMES holds bytes)
LAST_NAMES: tuple[str, ...] = tuple(name.decode() for name in rand.LAST_NAMES.tolist())


class Deck:
    """A shuffled deck of transaction names, dealt one card at a time.

    The deck is an endless iterator in C (one shuffled copy after another, shuffled by
    numpy), so a deal is one ``next()``: a deal and its share of the shuffle in Python
    cost some fifty bytecodes a transaction (bench/results/client_callgrind.txt).
    """

    __slots__ = ("_deal",)

    def __init__(self, gen: np.random.Generator, shares: Mapping[str, float] | None = None) -> None:
        """``shares``: each transaction's share of the mix (``--mix``, summing to 1), dealt
        as cards per 1,000; default WEIGHTS, the cards per 100 of the rules' mix."""
        counts = WEIGHTS if shares is None else {name: round(1000 * share) for name, share in shares.items()}
        cards = np.array([name for name, count in counts.items() for _ in range(count)], dtype=object)
        self._deal: Iterator[str] = chain.from_iterable(map(_shuffled, repeat(cards), repeat(gen)))

    def draw(self) -> str:
        """The next card; the deck is reshuffled whenever it runs out."""
        return next(self._deal)


def _shuffled(cards: np.ndarray, gen: np.random.Generator) -> list[str]:
    return cards[gen.permutation(len(cards))].tolist()


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


def stream(fill: Callable[[int], Any]) -> Iterator[int]:
    """Endless integers drawn ``POOL_SIZE`` at a time by ``fill(size)`` (a numpy array).

    Why: one numpy call costs several microseconds, so values are drawn by the chunk;
    and the chunks are chained by an iterator in C, so a value dealt is one ``next()``
    and a few are one ``islice``, with no Python frame. A chunk waits as an
    ``array('i')`` (4 bytes a value, not a Python int's 28): seven streams a user hold
    28 KB, 8.6 MB at 300 users.
    """
    return chain.from_iterable(map(_chunk, repeat(fill)))


def _chunk(fill: Callable[[int], Any]) -> array:
    return array("i", fill(POOL_SIZE).astype(np.int32).tobytes())


def take(values: Iterator[int], n: int) -> list[int]:
    """The next ``n`` values of ``values`` (a :func:`stream`)."""
    return list(islice(values, n))


class Draws:
    """One user's random streams: uniform integers, NURand values, last names.

    The draws every transaction makes are streams (:func:`stream`: ``next(draw.c_id)``);
    the rarer ones, and ranges that depend on the run, go through :meth:`uniform`.
    """

    def __init__(self, seed: int, user_id: int, scale: int, c_run: dict[str, int]) -> None:
        self.gen = gen = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([seed, 0x7C, user_id])))
        #: uniform draws
        self.rng = random.Random(int(gen.integers(1 << 62)))
        #: think times, apart so that the inputs drawn do not depend on whether think is on
        self.wait_rng = random.Random(int(gen.integers(1 << 62)))
        self.scale = scale
        self._bits = self.rng.getrandbits
        self.c_id = stream(partial(columns.nurand, gen, rand.A_C_ID, 1, CUSTOMERS_PER_DISTRICT, c_run["c_id"]))
        self.ol_i_id = stream(partial(columns.nurand, gen, rand.A_OL_I_ID, 1, ITEMS, c_run["ol_i_id"]))
        self.c_last = stream(partial(columns.nurand, gen, rand.A_C_LAST, 0, 999, c_run["c_last"]))
        #: uniform 1..10: districts, and New-Order's line quantities
        self.districts = stream(partial(gen.integers, 1, DISTRICTS_PER_WAREHOUSE + 1))
        self.quantities = stream(partial(gen.integers, 1, 11))
        #: uniform 1..100: the spec's percentages (1% rollback, 1% remote line, 15%, 60%)
        self.percents = stream(partial(gen.integers, 1, 101))
        #: uniform OL_CNT_MIN..OL_CNT_MAX: New-Order's number of lines
        self.line_counts = stream(partial(gen.integers, OL_CNT_MIN, OL_CNT_MAX + 1))

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
        if next(self.percents) <= 60:
            return None, LAST_NAMES[next(self.c_last)]
        return next(self.c_id), None

    def money(self, low_cents: int, high_cents: int) -> Decimal:
        """An amount uniform in whole cents, as an exact Decimal with two places."""
        return Decimal(self.uniform(low_cents, high_cents)).scaleb(-2)
