"""Keying times, think times and interarrival times, as Benchmark Factory sets them.

Why: a load is more than its user count. Benchmark Factory's users choose, per test, no
delay, a fixed or random keying and think time around each transaction, or a fixed or
random interarrival time per user; TPC-C's rules set their own (clause 5.2.5: keying
times per transaction, think times negative exponential around a mean, capped at ten
times it). These are the engine's options for every workload, spelt alike:

    off                      no wait
    spec                     the workload's own rule (TPC-C's clause 5.2.5)
    fixed:2s                 always 2 s
    uniform:1s..3s           uniform between 1 s and 3 s
    negexp:2s[,cap=10x]      negative exponential of mean 2 s, cut at 10 x the mean

A session draws its waits from its own random stream (the run's seed and its user), so
a repeated run waits the same. The waits are the engine's: they come before
(keying) or after (think) a transaction and are never part of its latency.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import parse_duration

#: the options every workload takes for them, through RunContext.options
KEYING, THINK, INTERARRIVAL = "keying", "think", "interarrival"
ENGINE_OPTIONS = frozenset({KEYING, THINK, INTERARRIVAL})
KINDS = ("off", "spec", "fixed", "uniform", "negexp")
#: a negative exponential is cut at this many times its mean unless told otherwise (TPC-C's rule)
DEFAULT_CAP = 10.0
#: the shortest mean gap --interarrival takes: a user's timed wait here wakes up to a
#: tenth of it late (bench/host_timing.py, results/host_timing.txt), and that lateness
#: counts in every latency measured from the schedule
MIN_GAP_S = 0.001
_SPELLING = "off, spec, fixed:2s, uniform:1s..3s or negexp:2s[,cap=10x]"
_FORM = re.compile(r"^(?P<kind>[a-z]+)(?::(?P<args>.*))?$")


@dataclass(frozen=True)
class Delay:
    """One wait's distribution, in seconds: ``low`` and ``high`` for uniform, ``mean``
    and ``cap`` (a multiple of the mean) for negexp, ``mean`` alone for fixed."""

    kind: str = "off"
    mean: float = 0.0
    low: float = 0.0
    high: float = 0.0
    cap: float = DEFAULT_CAP

    @property
    def waits(self) -> bool:
        """Whether it ever waits at all (spec: whatever the workload says)."""
        return self.kind == "spec" or self.kind != "off" and (self.mean > 0 or self.high > 0)

    def draw(self, rng: random.Random) -> float:
        """One wait in seconds (0.0 for off and spec: spec is the session's to draw)."""
        if self.kind == "fixed":
            return self.mean
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high)
        if self.kind == "negexp":
            return min(-math.log(1.0 - rng.random()) * self.mean, self.cap * self.mean)
        return 0.0

    def __str__(self) -> str:
        if self.kind == "fixed":
            return f"fixed:{self.mean:g}s"
        if self.kind == "uniform":
            return f"uniform:{self.low:g}s..{self.high:g}s"
        if self.kind == "negexp":
            return f"negexp:{self.mean:g}s,cap={self.cap:g}x"
        return self.kind


def parse_delay(text: str, what: str = "--think") -> Delay:
    """A :class:`Delay` from its spelling (module docstring), or a one-line error naming ``what``."""
    match = _FORM.match(text.strip().lower())
    kind, args = (match.group("kind"), match.group("args")) if match else ("", None)
    if kind not in KINDS:
        raise TpsbenchError(f"{what} takes {_SPELLING}, got {text!r}")
    if kind in ("off", "spec"):
        if args is not None:
            raise TpsbenchError(f"{what} {kind} takes no value, got {text!r}")
        return Delay(kind)
    if not args:
        raise TpsbenchError(f"{what} {kind} needs a duration, e.g. {kind}:2s")
    try:
        if kind == "fixed":
            return Delay(kind, mean=parse_duration(args))
        if kind == "uniform":
            low_text, dots, high_text = args.partition("..")
            low, high = parse_duration(low_text), parse_duration(high_text) if dots else -1.0
            if not 0 <= low <= high:
                raise TpsbenchError(f"{what} uniform needs LOW..HIGH with LOW <= HIGH, got {text!r}")
            return Delay(kind, mean=(low + high) / 2, low=low, high=high)
        mean_text, _, cap_text = args.partition(",")
        cap = DEFAULT_CAP
        if cap_text:
            cap_match = re.fullmatch(r"\s*cap\s*=\s*(\d+(?:\.\d+)?)x\s*", cap_text)
            if not cap_match or float(cap_match.group(1)) < 1:
                raise TpsbenchError(f"{what} negexp's cap is a multiple of the mean of at least 1, like cap=10x,"
                                    f" got {cap_text.strip()!r}")
            cap = float(cap_match.group(1))
        return Delay(kind, mean=parse_duration(mean_text), cap=cap)
    except TpsbenchError as exc:
        if str(exc).startswith(what):
            raise
        raise TpsbenchError(f"{what} {text!r}: {exc}") from None


@dataclass(frozen=True)
class Waits:
    """A run's keying, think and interarrival settings, from its options."""

    keying: Delay
    think: Delay
    interarrival: Delay

    @property
    def around(self) -> bool:
        """Whether users wait before or after their transactions."""
        return self.keying.waits or self.think.waits


def waits_of(options: Mapping[str, str]) -> Waits:
    """The waits ``options`` ask for. ``keying`` unset follows ``think`` where that is
    spec (TPC-C's --think spec has always meant both) and is off otherwise."""
    think = parse_delay(options.get(THINK, "off") or "off", "--think")
    keying_text = options.get(KEYING, "") or ("spec" if think.kind == "spec" else "off")
    interarrival = parse_delay(options.get(INTERARRIVAL, "off") or "off", "--interarrival")
    if interarrival.kind == "spec":
        raise TpsbenchError("--interarrival has no spec value: give fixed:, uniform: or negexp:")
    if interarrival.kind != "off" and interarrival.mean < MIN_GAP_S:
        raise TpsbenchError(f"--interarrival {interarrival}: a mean gap of {interarrival.mean:g}s is under"
                            f" {MIN_GAP_S * 1000:g}ms, the shortest a user's timed wait here keeps")
    return Waits(parse_delay(keying_text, "--keying"), think, interarrival)
