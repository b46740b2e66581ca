"""Under a report's table: how each step's users waited (tpsbench.measure.waits).

Why: with keying and think times a step's load is set by the waits as much as by the
user count; a driver that wakes its users late runs less than asked, with no error to
show it. The wake-up lag and the realised means say it did or did not.
"""

from __future__ import annotations

from collections.abc import Sequence

from tpsbench.measure.waits import decoded, describe, wait_stats
from tpsbench.results.records import RunData


def wait_lines(runs: Sequence[RunData]) -> list[str]:
    """Per step whose users waited: wake-up lag p50/p99/max and realised keying and think means."""
    lines = []
    for data in runs:
        for step in sorted(data.steps, key=lambda s: s.step):
            summary = step.summary
            if summary is None or not summary.waits:
                continue
            lines += [f"run {data.run.id} step {step.step} ({step.users} users): {line}"
                      for line in describe(wait_stats(decoded(summary.waits)))]
    return lines
