"""The honesty check: does the database's own change agree with what the driver counted?

Before the first step the runner reads the workload's own counters from the database
(for TPC-C the sum of D_NEXT_O_ID and the count of HISTORY rows), after the last step
again, and compares the change with what the driver counted as committed over the whole
run, ramp-ups and in-flight tails included. A benchmark that miscounts is worse than
none, so a mismatch is said loudly and stored with the run.

Why a range and not one number: a transaction whose connection was lost before its
outcome came back (a server restart, a killed backend) is *in doubt*: its COMMIT may
have reached the server and be durable although no acknowledgement arrived, or not.
The driver cannot know which, so it counts those apart, and the check accepts any
change from what the commits alone imply up to what the commits plus every in-doubt
transaction imply. It also says how many of the doubtful ones the database shows as
committed, which a review of a fault test wants to read. Without doubt the range is one
point, the exact check of a clean run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from tpsbench.core.workload import Workload
from tpsbench.measure.reports import IntervalReport


def counted(totals: Iterable[IntervalReport | None], kind: str) -> dict[str, int]:
    """``kind`` (commits, in_doubt ...) per transaction over reports (each step's total)."""
    out: Counter[str] = Counter()
    for total in totals:
        if total is not None:
            out.update({name: getattr(txn, kind) for name, txn in total.txns.items()})
    return dict(out)


def honesty_check(wl: Workload, before: dict[str, int], after: dict[str, int],
                  totals: Iterable[IntervalReport | None], unreported: Sequence[str] = ()) -> dict[str, Any]:
    """Compare the database's change (``after`` - ``before``) with the driver's counts in
    ``totals`` (one merged report per step, every interval of it): ``match`` is True when
    every counter's change lies between what the commits imply and what the commits plus
    the in-doubt transactions imply (see the module docstring). ``unreported``: workers
    that ended before their last report (one line each), whose commits since then no
    count holds: kept with the result, so that a mismatch says why."""
    totals = list(totals)
    commits = counted(totals, "commits")
    doubt = {name: n for name, n in counted(totals, "in_doubt").items() if n}
    expected = wl.expected_counts(commits)
    actual = {key: after[key] - before[key] for key in before}
    result: dict[str, Any] = {"expected": expected, "actual": actual, "match": expected == actual}
    if unreported:
        result["unreported"] = list(unreported)
    if doubt:
        most = wl.expected_counts(dict(Counter(commits) + Counter(doubt)))
        result["in_doubt"] = doubt
        result["most"] = most
        result["match"] = set(expected) == set(actual) and all(
            min(expected[k], most.get(k, expected[k])) <= actual[k] <= max(expected[k], most.get(k, expected[k]))
            for k in expected)
    return result


def honesty_text(honesty: dict[str, Any] | None) -> str:
    """The check's verdict in words, with the in-doubt accounting when there was doubt:
    "matches: 4 transactions in doubt (new_order 2, payment 2), the database shows 3 of
    their changes" (the last line of a run and the report under its table)."""
    if not honesty or honesty.get("match") is None:
        reason = (honesty or {}).get("skipped", "no step finished")
        return f"skipped ({reason})"
    verdict = "matches" if honesty["match"] else "FAILED"
    expected, actual = honesty.get("expected", {}), honesty.get("actual", {})
    doubt: dict[str, int] = honesty.get("in_doubt") or {}
    why = _unreported(honesty) if not honesty["match"] else ""
    if not doubt:
        if honesty["match"]:
            return verdict
        return f"{verdict}: the database changed by {actual} but the driver counted {expected}{why}"
    shown = sum(max(0, actual.get(k, 0) - v) for k, v in expected.items())
    most = honesty.get("most", {})
    each = ", ".join(f"{name} {n:,}" for name, n in sorted(doubt.items()))
    text = (f"{verdict}: {sum(doubt.values()):,} transaction(s) in doubt, their connection lost before "
            f"the outcome came back ({each}); the database shows {shown:,} change(s) of theirs")
    if not honesty["match"]:
        text += f" (it changed by {actual}; the driver counted {expected}, at most {most} with those in doubt){why}"
    return text


def _unreported(honesty: dict[str, Any]) -> str:
    """Why the driver's count falls short, where workers ended before their last report."""
    lost = honesty.get("unreported") or []
    if not lost:
        return ""
    return (f"; the driver's count lacks what {len(lost)} worker(s) committed after their last report"
            f" ({'; '.join(lost)})")
