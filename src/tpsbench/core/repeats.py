"""Repeated steps: how a run with ``--repeat N`` (or a campaign with ``repeat = N``) is
checked, and how its stored steps are read back as rounds.

Why the repeats interleave (users 1,20,50 three times run 1,20,50,1,20,50,1,20,50, not
1,1,1,20,20,20,...): a slow drift of the system (a cache filling, a drive warming, a
neighbour's load) then spreads over every load alike instead of reading as a difference
between loads. The stored form, which both the run and the report rely on:

- a run's config holds ``"users"``, the loads of one round as given, and ``"repeat": N``
  (absent or 1: no repeats); its steps are numbered 1 .. len(users) * N in the order they
  ran, so step k is round ``(k - 1) // len(users) + 1`` at load ``users[(k - 1) % len(users)]``;
  the warm-up stays step 0, in no round;
- a sequential campaign with ``repeat = N`` runs its targets round by round (A B C A B C):
  each such run's config holds ``"campaign_round": r`` and ``"campaign_rounds": N`` and no
  ``"repeat"`` key; a concurrent campaign's runs each take ``--repeat N`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from tpsbench.core.errors import TpsbenchError

#: the most repeats of a step: past this the confidence interval hardly narrows, and a
#: larger number is a typo
MAX_REPEAT = 100
#: the most steps one run may have once repeated (its loads times its repeats): each is a
#: ramp-up and a row of every report
MAX_REPEAT_STEPS = 1000

T = TypeVar("T")


def check_repeat(repeat: object, loads: int, what: str = "--repeat") -> int:
    """``repeat`` as a whole number of rounds, or one line naming ``what`` and the limit it
    breaks: from 1 to MAX_REPEAT, and ``loads`` steps a round times it at most MAX_REPEAT_STEPS."""
    if isinstance(repeat, bool) or not isinstance(repeat, int):
        raise TpsbenchError(f"{what} must be a whole number of rounds, from 1 to {MAX_REPEAT}, not {repeat!r}")
    if not 1 <= repeat <= MAX_REPEAT:
        raise TpsbenchError(f"{what} must be from 1 (no repeats) to {MAX_REPEAT}, not {repeat:,}")
    if loads * repeat > MAX_REPEAT_STEPS:
        raise TpsbenchError(f"{what} {repeat} of {loads} loads makes {loads * repeat:,} steps; a run takes at most "
                            f"{MAX_REPEAT_STEPS:,}: give fewer repeats or loads")
    return repeat


def repeat_of(config: Mapping[str, Any]) -> int:
    """The stored run's repeats of each load (1 where the run has none)."""
    return int(config.get("repeat") or 1)


def repeat_round(config: Mapping[str, Any], step: int) -> int:
    """The round (1 .. repeat) a stored step belongs to; 0 for the warm-up (step 0)."""
    if step <= 0:
        return 0
    return (step - 1) // max(1, len(config.get("users") or [])) + 1


def step_loads(config: Mapping[str, Any]) -> list[int]:
    """The users of steps 1, 2, ... in the order they ran: the round's loads, once per round."""
    return [int(u) for u in config.get("users") or []] * repeat_of(config)


def repeat_groups(config: Mapping[str, Any], steps: Iterable[T], step_of: Callable[[T], int]) -> list[list[T]]:
    """``steps`` (whatever ``step_of`` reads a step number from) grouped by load: one group
    per load of the round, in the round's order, holding that load's repeats in round order.
    The warm-up and steps the config does not plan are left out; a load none of whose
    steps is given (an interrupted run) has an empty group."""
    loads = max(1, len(config.get("users") or []))
    groups: list[list[T]] = [[] for _ in range(len(config.get("users") or []))]
    for step in sorted(steps, key=step_of):
        number = step_of(step)
        if 1 <= number <= loads * repeat_of(config) and groups:
            groups[(number - 1) % loads].append(step)
    return groups


def campaign_round(config: Mapping[str, Any]) -> tuple[int, int] | None:
    """A sequential campaign's round of this run and the campaign's rounds, or None."""
    if config.get("campaign_rounds") is None:
        return None
    return int(config["campaign_round"]), int(config["campaign_rounds"])


def check_campaign_round(number: int | None, rounds: int | None, repeat: int) -> None:
    """A sequential campaign's round as its run is given it: both or neither, the round
    within the rounds, and no ``--repeat`` beside it (a run has one meaning of repeats)."""
    if number is None and rounds is None:
        return
    if number is None or rounds is None or not 1 <= number <= rounds <= MAX_REPEAT:
        raise TpsbenchError(f"a campaign's round must be from 1 to its rounds (at most {MAX_REPEAT}), "
                            f"not {number} of {rounds}")
    if repeat != 1:
        raise TpsbenchError("a sequential campaign's run repeats by rounds: it takes no --repeat of its own")
