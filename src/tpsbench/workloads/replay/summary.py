"""The summary of a trace: each normalised statement with its count, rate, mean time on
the source, the tables it names and the distribution of each of its parameters.

Why: it is what a reader checks a capture by ("is this my workload?"), what a replay's
counts are compared with, and what ``--as-mix`` would draw weights and values from.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tpsbench.workloads.replay.normalise import Value, normalise, tables_of
from tpsbench.workloads.replay.trace import Trace

#: values kept per string parameter (the most frequent) and bins per numeric one
TOP_VALUES = 20
BINS = 10


@dataclass
class Shape:
    """What the statements of one normalised form have in common."""

    text: str
    count: int = 0
    total_ms: float = 0.0
    values: list[list[Value]] = field(default_factory=list)


def shapes(trace: Trace) -> dict[str, Shape]:
    """Every normalised statement of ``trace`` with its statements' values."""
    found: dict[str, Shape] = {}
    for session in trace.sessions:
        for st in session.statements:
            text, literals = normalise(st.text)
            shape = found.setdefault(text, Shape(text))
            shape.count += 1
            shape.total_ms += st.duration_ms
            shape.values.append(literals + list(st.params or []))
    return found


def summarise(trace: Trace) -> dict[str, Any]:
    """The summary line of the trace file (trace.py), also what ``capture`` prints."""
    found = shapes(trace)
    window = trace.window_s or 1.0
    total = trace.statements or 1
    rows: list[dict[str, Any]] = []
    timed = any(s.total_ms for s in found.values())  # the general log (MariaDB) has no durations
    for shape in sorted(found.values(), key=lambda s: -s.count):
        rows.append({"statement": shape.text, "count": shape.count, "weight": round(100 * shape.count / total, 3),
                     "rate_per_s": round(shape.count / window, 3),
                     "mean_ms": round(shape.total_ms / shape.count, 3) if timed else None,
                     "tables": list(tables_of(shape.text, trace.dialect)),
                     "parameters": [distribution(column) for column in _columns(shape.values)]})
    return {"statements": rows, "total": trace.statements, "window_s": trace.window_s,
            "tables": sorted({t for row in rows for t in row["tables"]})}


def _columns(values: list[list[Value]]) -> list[list[Value]]:
    width = max((len(v) for v in values), default=0)
    return [[v[i] for v in values if i < len(v)] for i in range(width)]


def distribution(column: list[Value]) -> dict[str, Any]:
    """One parameter's values: numbers as min, max, mean and a histogram; anything else as
    its most frequent values with their counts."""
    numbers = [v for v in column if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if numbers and len(numbers) == len(column):
        low, high = min(numbers), max(numbers)
        width = (high - low) / BINS or 1
        bins = [0] * BINS
        for v in numbers:
            bins[min(int((v - low) / width), BINS - 1)] += 1
        integer = all(isinstance(v, int) for v in numbers)
        return {"kind": "integer" if integer else "number", "min": low, "max": high,
                "mean": round(sum(numbers) / len(numbers), 6), "histogram": bins}
    counted = Counter("NULL" if v is None else str(v) for v in column)
    return {"kind": "text", "distinct": len(counted), "top": counted.most_common(TOP_VALUES)}
