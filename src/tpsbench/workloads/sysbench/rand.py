"""sysbench's random distributions (its ``--rand-type``), scalar for sessions and vectorised for loads.

sysbench draws every id, k value and table number through a handful of distributions over
an integer range [a, b]. Their shape decides how hot the hottest rows are, so a
"sysbench-compatible" run must draw the same way; the generator under them need not be the
same (sysbench uses xoroshiro128+, we use Python's and numpy's), only the mapping from a
uniform double in [0, 1) to an integer, which follows sysbench's behaviour:

* uniform:  ``a + trunc(u * (b - a + 1))``
* gaussian: the mean of ``spec_iter`` uniforms, scaled to the range (a bell around the middle)
* special:  ``spec_res`` % of the draws fall, uniformly, on a window of ``spec_pct`` % of the
  values around the middle of the range; the rest follow the gaussian shape over the whole
  range. One uniform decides which, and is reused for the position inside the window, so
  (as in sysbench) only the upper ``spec_res`` % of that window is actually reached.
* pareto:   ``a + trunc((b - a + 1) * u ** (log h / log(1 - h)))``, most draws near ``a``
* zipfian:  P(a + m - 1) proportional to 1 / m ** exp, drawn by rejection-inversion
  (Hörmann and Derflinger, 1996); sysbench 1.1 added it, 1.0 does not have it.

sysbench 1.0's default ``--rand-type`` is ``special`` (1.1 changed it to uniform): the
default here is 1.0's, because 1.0 is what Debian ships and what we compare against.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tpsbench.core.errors import TpsbenchError

RAND_TYPES = ("uniform", "gaussian", "special", "pareto", "zipfian")
DEFAULT_RAND_TYPE = "special"
#: sysbench's value templates: '#' is a random digit, '@' a random lower-case letter
C_TEMPLATE = "-".join(["#" * 11] * 10)  # 119 characters
PAD_TEMPLATE = "-".join(["#" * 11] * 5)  # 59 characters


@dataclass(frozen=True)
class RandParams:
    """``--rand-type`` and its parameters, with sysbench's defaults."""

    rand_type: str = DEFAULT_RAND_TYPE
    spec_iter: int = 12
    spec_pct: float = 1.0
    spec_res: float = 75.0
    pareto_h: float = 0.2
    zipf_exp: float = 0.8

    def __post_init__(self) -> None:
        if self.rand_type not in RAND_TYPES:
            raise TpsbenchError(f"--rand-type must be one of {', '.join(RAND_TYPES)}, got {self.rand_type!r}")
        if not 1 <= self.spec_iter <= 1000:
            raise TpsbenchError(f"--rand-spec-iter must be from 1 to 1,000, got {self.spec_iter}")
        if not 0 <= self.spec_pct <= 100 or not 0 <= self.spec_res <= 100:
            raise TpsbenchError("--rand-spec-pct and --rand-spec-res must be percentages (0..100)")
        if not 0 < self.pareto_h < 1:
            raise TpsbenchError(f"--rand-pareto-h must be between 0 and 1, got {self.pareto_h}")
        if not 0 <= self.zipf_exp < math.inf:  # NaN fails it too
            raise TpsbenchError(f"--rand-zipfian-exp must be a number >= 0, got {self.zipf_exp}")

    @property
    def res_mult(self) -> float:
        """How much the special distribution widens the range: 100 / (100 - res)."""
        return math.inf if self.spec_res >= 100 else 100.0 / (100.0 - self.spec_res)

    @property
    def pareto_power(self) -> float:
        return math.log(self.pareto_h) / math.log(1.0 - self.pareto_h)


class SbRand:
    """One user's random stream: ``default(a, b)`` is the ``--rand-type`` distribution.

    Everything is plain Python floats on a :class:`random.Random`: one draw costs well under
    a microsecond, which numpy's per-call overhead could not beat for single values.
    """

    def __init__(self, rng: random.Random, params: RandParams = RandParams()) -> None:
        self.rng = rng
        self.params = params
        self._r = rng.random
        self._iter_mult = 1.0 / params.spec_iter
        # special()'s constants, read once here rather than through properties per draw
        self._iters = range(params.spec_iter)
        self._res_mult = params.res_mult
        self._pct = params.spec_pct
        self._zipf = _ZipfConstants(params.zipf_exp)
        self.default: Callable[[int, int], int] = getattr(self, params.rand_type)

    def uniform(self, a: int, b: int) -> int:
        return a + int(self._r() * (b - a + 1))

    def gaussian(self, a: int, b: int) -> int:
        r, t = self._r, b - a + 1
        total = 0.0
        for _ in range(self.params.spec_iter):
            total += r() * t
        return a + int(total * self._iter_mult)

    def special(self, a: int, b: int) -> int:
        r = self._r
        t = b - a
        u = r()
        if u * (t * self._res_mult) < t:  # the (100 - res) % that follow the bell shape
            total = 0.0
            for _ in self._iters:
                total += r()
            return int(a + total * t * self._iter_mult)
        pct = self._pct
        return a + int(u * (t * pct / 100.0 + 1) + t / 2 - t * pct / 200.0)

    def pareto(self, a: int, b: int) -> int:
        return a + int((b - a + 1) * self._r() ** self.params.pareto_power)

    def zipfian(self, a: int, b: int) -> int:
        return a + self._zipf.draw(b - a + 1, self._r) - 1

    def string(self, template: str) -> str:
        """A value of a sysbench template: '#' a digit, '@' a letter, anything else kept."""
        if template == C_TEMPLATE:
            return self.digit_groups(10)
        if template == PAD_TEMPLATE:
            return self.digit_groups(5)
        r = self._r
        out = []
        for ch in template:
            if ch == "#":
                out.append(chr(48 + int(r() * 10)))
            elif ch == "@":
                out.append(chr(97 + int(r() * 26)))
            else:
                out.append(ch)
        return "".join(out)

    def digit_groups(self, groups: int) -> str:
        """``groups`` groups of 11 uniform digits joined by '-': c (10 groups) or pad (5).

        One big random integer gives all the digits at once (each digit of a uniform number
        below 10**n, zero-padded, is uniform and independent), about 15x faster than a draw
        per character.
        """
        digits = str(self.rng.randrange(10 ** (11 * groups))).zfill(11 * groups)
        return "-".join([digits[i:i + 11] for i in range(0, 11 * groups, 11)])


# -- zipfian by rejection-inversion ---------------------------------------------------------
def _log1p_over_x(x: float) -> float:
    """log(1 + x) / x, with its Taylor series near 0 where the quotient loses precision."""
    if abs(x) > 1e-8:
        return math.log1p(x) / x
    return 1 - x * (0.5 - x * (1 / 3 - 0.25 * x))


def _expm1_over_x(x: float) -> float:
    """(exp(x) - 1) / x, with its Taylor series near 0."""
    if abs(x) > 1e-8:
        return math.expm1(x) / x
    return 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x))


def _hat_integral(x: float, e: float) -> float:
    """H(x) = (x**(1 - e) - 1) / (1 - e), or log(x) for e == 1: the integral of x**-e."""
    log_x = math.log(x)
    return _expm1_over_x((1 - e) * log_x) * log_x


def _hat_integral_inverse(y: float, e: float) -> float:
    t = max(y * (1 - e), -1.0)  # rounding can push it just below the domain
    return math.exp(_log1p_over_x(t) * y)


def _hat(x: float, e: float) -> float:
    return math.exp(-e * math.log(x))


class _ZipfConstants:
    """The per-exponent constants of the sampler, computed once per stream."""

    __slots__ = ("e", "h_x1", "s")

    def __init__(self, e: float) -> None:
        self.e = e
        self.s = 2 - _hat_integral_inverse(_hat_integral(2.5, e) - _hat(2, e), e)
        self.h_x1 = _hat_integral(1.5, e) - 1

    def draw(self, n: int, r: Callable[[], float]) -> int:
        """A value in [1, n] with P(m) proportional to m ** -e."""
        e = self.e
        h_n = _hat_integral(n + 0.5, e)
        while True:
            u = h_n + r() * (self.h_x1 - h_n)
            x = _hat_integral_inverse(u, e)
            k = min(max(int(x + 0.5), 1), n)
            # the cheap test accepts most draws; the exact one decides the rest
            if k - x <= self.s or u >= _hat_integral(k + 0.5, e) - _hat(k, e):
                return k


# -- vectorised, for loading ----------------------------------------------------------------
def draw_many(rng: np.random.Generator, params: RandParams, a: int, b: int, n: int) -> np.ndarray:
    """``n`` draws of ``params.rand_type`` over [a, b] as int64: what sysbench's prepare
    uses for the k column, computed a whole chunk at a time."""
    kind = params.rand_type
    if kind == "uniform":
        return (a + rng.random(n) * (b - a + 1)).astype(np.int64)
    if kind == "gaussian":
        t = b - a + 1
        return a + (rng.random((n, params.spec_iter)).sum(axis=1) * t / params.spec_iter).astype(np.int64)
    if kind == "special":
        t = b - a
        u = rng.random(n)
        bell = u * (t * params.res_mult) < t
        out = np.empty(n, dtype=np.int64)
        sums = rng.random((int(bell.sum()), params.spec_iter)).sum(axis=1)
        out[bell] = (a + sums * t / params.spec_iter).astype(np.int64)
        window = t * params.spec_pct / 100.0
        out[~bell] = a + (u[~bell] * (window + 1) + t / 2 - t * params.spec_pct / 200.0).astype(np.int64)
        return out
    if kind == "pareto":
        return a + ((b - a + 1) * rng.random(n) ** params.pareto_power).astype(np.int64)
    # zipfian: rejection-inversion, redrawing only the rejected positions
    z = _ZipfConstants(params.zipf_exp)
    e, size = z.e, b - a + 1
    h_n = _hat_integral(size + 0.5, e)
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        u = h_n + rng.random(todo.size) * (z.h_x1 - h_n)
        w = np.maximum(u * (1 - e), -1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(np.abs(w) > 1e-8, np.log1p(w) / w, 1 - w * (0.5 - w * (1 / 3 - 0.25 * w)))
        x = np.exp(ratio * u)
        k = np.clip((x + 0.5).astype(np.int64), 1, size)
        kf = k.astype(np.float64)
        lk = np.log(kf + 0.5)
        q = (1 - e) * lk
        with np.errstate(divide="ignore", invalid="ignore"):
            h_k = np.where(np.abs(q) > 1e-8, np.expm1(q) / q, 1 + q * 0.5 * (1 + q / 3 * (1 + 0.25 * q))) * lk
        ok = (kf - x <= z.s) | (u >= h_k - np.exp(-e * np.log(kf)))
        out[todo[ok]] = a + k[ok] - 1
        todo = todo[~ok]
    return out


def digit_groups_many(rng: np.random.Generator, groups: int, n: int) -> np.ndarray:
    """``n`` values of ``groups`` x 11 random digits joined by '-', as a numpy ``S`` array."""
    width = 12 * groups - 1
    chars = np.full((n, width), ord("-"), dtype=np.uint8)
    digits = rng.integers(48, 58, size=(n, 11 * groups), dtype=np.uint8)
    keep = np.array([i for i in range(width) if (i + 1) % 12], dtype=np.int64)
    chars[:, keep] = digits
    return chars.view(f"S{width}").reshape(n)
