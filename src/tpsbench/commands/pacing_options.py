"""A run's pacing options checked against each other before anything is stored: each
step's --rate, and the --trace folder that only paced steps write.

Why apart from the run: a campaign checks its [options] with the same rules before it
starts any run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tpsbench.core.delays import waits_of
from tpsbench.core.errors import TpsbenchError


def step_rates(rates: Sequence[float], users: Sequence[int], options: Mapping[str, str]) -> list[float]:
    """Each step's rate: none, one for all, or one per step; a one-line error otherwise.
    Pacing decides when transactions start, so think and keying times would fight it."""
    waits = waits_of(options)
    if waits.interarrival.waits and waits.around:
        raise TpsbenchError("--interarrival schedules each user's transactions, so it cannot be combined with "
                            "keying or think times: give --think off")
    if not rates:
        return [0.0] * len(users)
    if len(rates) not in (1, len(users)):
        raise TpsbenchError(f"--rate gives {len(rates)} rates for {len(users)} steps: give one, or "
                            "one per step")
    if any(r > 0 for r in rates) and (waits.around or waits.interarrival.waits):
        raise TpsbenchError("--rate schedules every transaction's start, so it cannot be combined with keying,"
                            " think or interarrival times: leave them off")
    return list(rates) * len(users) if len(rates) == 1 else list(rates)


def trace_folder(trace_dir: str | None, rates: Sequence[float], options: Mapping[str, str]) -> str:
    """The trace folder as an absolute path the workers share ("" for none), made by
    :func:`make_trace_folder` once nothing else can refuse the run."""
    if trace_dir is None:
        return ""
    if not (rates or waits_of(options).interarrival.waits):
        raise TpsbenchError("--trace writes the timestamps of paced steps: give --rate or --interarrival too")
    return str(Path(trace_dir).resolve())


def make_trace_folder(folder: str) -> None:
    if not folder:
        return
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TpsbenchError(f"cannot make the trace folder {folder}: {exc.strerror or exc}") from None
