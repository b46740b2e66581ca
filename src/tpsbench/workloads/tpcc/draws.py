"""Each TPC-C user's random draws, and the run's C constants (the mix and the rules'
waits are the transaction table's, table.py).

:class:`Draws` holds a user's random streams. The draws every transaction makes
(NURand values from :func:`columns.nurand`, the loader's own vectorised function; districts,
quantities, percentages) are drawn by numpy a thousand at a time, because one numpy call
costs several microseconds, and dealt by iterators in C; the rare ones use Python's
``random`` (well under a microsecond each). A user that waits between its transactions
(keying or think times: some 20 s a transaction) draws a few values a minute, so it draws
a few transactions' worth at a time instead (:func:`pool_size`): full pools would sit in
its memory for hours, seven streams of them, at thousands of users. The values drawn
follow the seed and the pool size, so a run with waits deals other (equally distributed)
inputs than one without.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable, Iterator
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

#: values drawn per numpy call by a user that does not wait between transactions (pool_size)
POOL_SIZE = 1024
#: last names by number, as str (rand.LAST_NAMES holds bytes)
LAST_NAMES: tuple[str, ...] = tuple(name.decode() for name in rand.LAST_NAMES.tolist())


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


def pool_size(waits: bool) -> int:
    """Values drawn per numpy call: POOL_SIZE, or for a user that ``waits`` between its
    transactions a few transactions' worth of the stream drawn most (New-Order's items:
    at most OL_CNT_MAX a transaction), which it still draws only every few minutes."""
    return 4 * OL_CNT_MAX if waits else POOL_SIZE


def stream(fill: Callable[[int], Any], size: int = POOL_SIZE) -> Iterator[int]:
    """Endless integers drawn ``size`` at a time by ``fill(size)`` (a numpy array).

    Why: one numpy call costs several microseconds, so values are drawn by the chunk;
    and the chunks are chained by an iterator in C, so a value dealt is one ``next()``
    and a few are one ``islice``, with no Python frame. A chunk waits as an
    ``array('i')`` (4 bytes a value, not a Python int's 28), which keeps a sleeping
    user's pools small.
    """
    return chain.from_iterable(map(_chunk, repeat(fill), repeat(size)))


def _chunk(fill: Callable[[int], Any], size: int) -> array:
    return array("i", fill(size).astype(np.int32).tobytes())


def take(values: Iterator[int], n: int) -> list[int]:
    """The next ``n`` values of ``values`` (a :func:`stream`)."""
    return list(islice(values, n))


class Draws:
    """One user's random streams: uniform integers, NURand values, last names.

    The draws every transaction makes are streams (:func:`stream`: ``next(draw.c_id)``);
    the rarer ones, and ranges that depend on the run, go through :meth:`uniform`.
    """

    def __init__(self, seed: int, user_id: int, scale: int, c_run: dict[str, int], size: int = POOL_SIZE) -> None:
        self.gen = gen = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([seed, 0x7C, user_id])))
        #: uniform draws
        self.rng = random.Random(int(gen.integers(1 << 62)))
        #: think times, apart so that drawing them takes no values from the inputs' streams
        self.wait_rng = random.Random(int(gen.integers(1 << 62)))
        self.scale = scale
        self._bits = self.rng.getrandbits
        self.c_id = stream(partial(columns.nurand, gen, rand.A_C_ID, 1, CUSTOMERS_PER_DISTRICT, c_run["c_id"]), size)
        self.ol_i_id = stream(partial(columns.nurand, gen, rand.A_OL_I_ID, 1, ITEMS, c_run["ol_i_id"]), size)
        self.c_last = stream(partial(columns.nurand, gen, rand.A_C_LAST, 0, 999, c_run["c_last"]), size)
        #: uniform 1..10: districts, and New-Order's line quantities
        self.districts = stream(partial(gen.integers, 1, DISTRICTS_PER_WAREHOUSE + 1), size)
        self.quantities = stream(partial(gen.integers, 1, 11), size)
        #: uniform 1..100: the spec's percentages (1% rollback, 1% remote line, 15%, 60%)
        self.percents = stream(partial(gen.integers, 1, 101), size)
        #: uniform OL_CNT_MIN..OL_CNT_MAX: New-Order's number of lines
        self.line_counts = stream(partial(gen.integers, OL_CNT_MIN, OL_CNT_MAX + 1), size)

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
