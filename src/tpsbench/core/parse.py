"""Parsing of the values users type: scales, durations, user loads.

Every parser raises :class:`TpsbenchError` with a message that names the bad value,
so the CLI can print it as one line.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tpsbench.core.errors import TpsbenchError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
#: the longest duration a step, ramp-up or interval may have: 30 days (a benchmark of
#: weeks is a typo; one that long would also outlast the clocks' and timers' range)
MAX_DURATION_S = 30 * 24 * 3600.0
#: the most users a step may have: far beyond any server's connection limit
MAX_USERS = 100_000
#: the most steps one run may list: a sweep finer than this is a typo or a script gone
#: wrong, and every step adds its own ramp-up and columns to every report
MAX_STEPS = 100
#: the shortest interval (and so the shortest step) this host reports on time: below it
#: the live line, the observers and the store fall behind the steps they describe
#: (bench/host_timing.py; results/host_timing.txt)
MIN_INTERVAL_S = 0.1
#: the decks of TPC-C and TPC-E deal a mix as cards per thousand: a share below half a
#: card never runs
MIX_CARDS = 1000
#: seeds are what numpy's generators take: 0 .. 2**63 - 1 (and what the store keeps)
MAX_SEED = 2**63 - 1


def parse_scale(text: str | int, presets: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """A positive whole number, or the name of one of ``presets`` (a workload's
    scale_factors.toml ``[presets]``: name -> {scale = N})."""
    presets = presets or {}
    value = str(text).strip()
    if value.lower() in presets:
        return int(presets[value.lower()]["scale"])
    try:
        scale = int(value)
    except ValueError:
        names = ", ".join(presets) or "none"
        raise TpsbenchError(f"scale must be a whole number >= 1 or a preset ({names}), got {value!r}") from None
    if scale < 1:
        raise TpsbenchError(f"scale must be a whole number >= 1, got {scale}")
    return scale


def parse_duration(text: str | float) -> float:
    """Seconds from "90", "30s", "2m", "1.5h" or "500ms"."""
    match = _DURATION.match(str(text))
    if not match:
        raise TpsbenchError(f"duration must look like 30s, 2m or 1h, got {text!r}")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) and match.group(2).lower()]
    if seconds > MAX_DURATION_S:
        raise TpsbenchError(f"duration must be at most 30 days, got {text!r}")
    return seconds


#: the most transactions per second a paced step may be asked for
MAX_RATE = 10_000_000


def parse_users(text: str) -> list[int]:
    """User loads from "1,20,50,100,300" (sysbench-style thread counts too)."""
    try:
        loads = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise TpsbenchError(f"--users must be whole numbers separated by commas, got {text!r}") from None
    if not loads or min(loads) < 1:
        raise TpsbenchError(f"--users must list user counts >= 1, got {text!r}")
    if max(loads) > MAX_USERS:
        raise TpsbenchError(f"--users must list at most {MAX_USERS:,} users a step, got {max(loads):,}")
    if len(loads) > MAX_STEPS:
        raise TpsbenchError(f"--users lists {len(loads):,} steps; a run takes at most {MAX_STEPS}: split the sweep"
                            " into several runs")
    return loads


def check_timing(rampup_s: float, duration_s: float, interval_s: float, interval_given: bool = True) -> None:
    """``--rampup``, ``--duration`` and ``--interval`` a step can keep, or one line naming
    the option: an interval (and so a measured window) of at least MIN_INTERVAL_S, and an
    ``interval_given`` no longer than the window it divides (a default one is cut to it)."""
    for flag, seconds in (("--duration", duration_s), ("--interval", interval_s)):
        if seconds < MIN_INTERVAL_S:
            raise TpsbenchError(f"{flag} {seconds:g}s is shorter than {MIN_INTERVAL_S:g}s, the shortest interval"
                                " this host reports on time")
    if interval_given and interval_s > duration_s:
        raise TpsbenchError(f"--interval {interval_s:g}s is longer than --duration {duration_s:g}s, the window it"
                            " divides: give an interval of at most the duration")


def parse_rates(text: str | None) -> list[float]:
    """``--rate``: transactions per second of a paced step, one for every step or one per
    step ("100,200,400"); 0 leaves a step a closed loop. None or "": no pacing."""
    if not text:
        return []
    try:
        rates = [float(part) for part in text.split(",")]
    except ValueError:
        raise TpsbenchError(f"--rate takes transactions per second, e.g. 200 or 100,200,400, got {text!r}") from None
    if not all(0 <= r < MAX_RATE for r in rates):  # NaN fails too
        raise TpsbenchError(f"--rate values must be 0 (no pacing) or positive and below {MAX_RATE:,}, got {text!r}")
    return rates


def parse_mix(text: str, names: Sequence[str]) -> dict[str, float]:
    """``--mix new_order=50,payment=40,...``: each named transaction's share of the mix,
    normalised to sum to 1; the transactions not named do not run. One-line errors for an
    unknown name, a weight that is not a positive number, a name given twice, or no weight."""
    shares: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or not name:
            raise TpsbenchError(f"--mix takes NAME=WEIGHT pairs separated by commas, got {part!r}")
        if name not in names:
            raise TpsbenchError(f"--mix: unknown transaction {name!r}; known: {', '.join(names)}")
        if name in shares:
            raise TpsbenchError(f"--mix names {name} twice")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if not 0 < weight < math.inf:
            raise TpsbenchError(f"--mix: the weight of {name} must be a positive number, got {value.strip()!r}")
        shares[name] = weight
    total = sum(shares.values())
    if total == math.inf:
        raise TpsbenchError(f"--mix: the weights add up beyond a number ({text.strip()!r}): give smaller ones,"
                            " e.g. per hundred")
    for name, weight in shares.items():
        if round(MIX_CARDS * weight / total) < 1:
            raise TpsbenchError(f"--mix: {name}={weight:g} is under 1/{MIX_CARDS:,} of the total {total:g}, so it"
                                " would never run: give it more, or leave it out")
    return {name: weight / total for name, weight in shares.items()}


def check_seed(seed: int) -> int:
    """A seed numpy's generators and the results store take, or a one-line error."""
    if not 0 <= seed <= MAX_SEED:
        raise TpsbenchError(f"seed must be a whole number from 0 to {MAX_SEED}, got {seed}")
    return seed


#: ``--cache``: what a run does about the caches between the database and its storage
#: (tpsbench.commands.cache)
CACHE_MODES = ("cold", "warm", "cached")


def check_cache(mode: Any) -> str:
    """A ``--cache`` mode, or a one-line error naming the modes."""
    if mode not in CACHE_MODES:
        raise TpsbenchError(f"cache must be one of {', '.join(CACHE_MODES)}, not {mode!r}")
    return str(mode)


def check_text(what: str, text: str, most: int | None = None) -> str:
    """Free text (a storage label, notes) that can be stored: valid UTF-8, no NUL, at
    most ``most`` characters (the results store's column)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise TpsbenchError(f"{what} must be valid UTF-8 text") from None
    if "\0" in text:
        raise TpsbenchError(f"{what} must not contain NUL characters")
    if most is not None and len(text) > most:
        raise TpsbenchError(f"{what} must be at most {most} characters, got {len(text)}")
    return text


def parse_options(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``NAME=VALUE`` pairs (``-o table_size=100000``) as a dict; dashes in names become underscores."""
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise TpsbenchError(f"options look like NAME=VALUE, got {pair!r}")
        options[name.strip().replace("-", "_")] = value.strip()
    return options


def read_toml(where: Path, what: str) -> dict[str, Any]:
    """A TOML file the user wrote (a storage file, a campaign), or one line saying why not."""
    try:
        return tomllib.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TpsbenchError(f"{what} {where} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TpsbenchError(f"{what} {where} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TpsbenchError(f"{what} {where} is not valid TOML: {exc}") from None
