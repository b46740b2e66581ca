"""A trace's summary as a workload file's transactions, built in memory (no TOML).

Why the custom workload's Spec: it already deals weighted transactions from shuffled
decks, prepares statements before the first step and confines them to declared tables;
a captured mix needs nothing else. Each normalised statement of the summary becomes a
transaction of its own (tpsbench's BEGIN, the statement, COMMIT), weighted by its
captured count. Its parameters are an empirical sample of its captured executions: up
to :data:`SAMPLE` of them, each execution's values together, so that values that go
together (``BETWEEN ? AND ?``, ``SET k=k+? WHERE id=?``) stay together, where drawing
each parameter from its own distribution would make ranges of any width, or empty.
Statements that are not SELECT, INSERT, UPDATE, DELETE or REPLACE (BEGIN, COMMIT,
SET, SHOW ...) are left out, and so is one whose placeholders match no captured
execution's values; :class:`Mix` says how many of each.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.workloads.custom import rules
from tpsbench.workloads.custom.spec import FileProblems, Spec, Statement, Transaction
from tpsbench.workloads.custom.sqltext import SqlText
from tpsbench.workloads.replay.normalise import Value
from tpsbench.workloads.replay.summary import shapes
from tpsbench.workloads.replay.trace import Trace

#: cards of each user's deck: the weights are the captured shares rounded to 1/DECK
DECK = 1000
#: captured executions kept per statement to draw parameters from
SAMPLE = 1000
#: statement kinds a mix runs (what the custom workload's confinement lets through)
KINDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH")
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
#: a placeholder outside quoted identifiers (the normalised text has no string literal left)
_PLACEHOLDER = re.compile(r'"(?:[^"]|"")*"|`[^`]*`|(\?)')
_WORD = re.compile(r"[^a-z0-9_]+")


@dataclass(frozen=True)
class Mix:
    """The workload of a trace: its spec, each transaction's normalised statement, its
    captured share (percent of the statements kept) and sample of parameter values, and
    what was left out."""

    spec: Spec
    statements: dict[str, str]
    captured: dict[str, float]
    samples: dict[str, list[tuple[Value, ...]]]
    left_out: int
    left_out_count: int
    unmatched: int


def mix_of(path: str, trace: Trace, seed: int = 0) -> Mix:
    """The mix of ``trace`` (read from ``path``), or a one-line error when it has no
    summary (or none of its statements can run as a mix). ``seed`` picks the samples."""
    rows = trace.summary.get("statements") if isinstance(trace.summary, dict) else None
    if not rows:
        raise TpsbenchError(f"{path} holds no summary of its statements: --as-mix draws from it (capture "
                            "the trace again with this tpsbench)")
    executions = shapes(trace)
    pick = random.Random(seed)
    kept: list[tuple[dict[str, Any], str, list[tuple[Value, ...]]]] = []
    left_out = left_out_count = unmatched = 0
    for row in rows:
        text, count = str(row.get("statement", "")), int(row.get("count", 0))
        if count <= 0:
            continue
        if text.split(" ", 1)[0].upper() not in KINDS:
            left_out, left_out_count = left_out + 1, left_out_count + count
            continue
        named, marks = _named(text)
        shape = executions.get(text)
        values = [tuple(v) for v in (shape.values if shape else []) if len(v) == marks]
        if not values:
            unmatched += 1
            continue
        kept.append((row, named, pick.sample(values, min(SAMPLE, len(values)))))
    if not kept:
        raise TpsbenchError(f"{path} holds no SELECT, INSERT, UPDATE or DELETE to run as a mix")
    total = sum(int(row["count"]) for row, _, _ in kept)
    cards = deck_cards([int(row["count"]) for row, _, _ in kept])
    problems: list[str] = []
    transactions, statements, captured, samples = [], {}, {}, {}
    for number, (row, named, sample) in enumerate(kept, start=1):
        name = transaction_name(number, row["statement"], row.get("tables", []))
        rollback = (rules.parse(["unique_violation"], path, problems)
                    if row["statement"].split(" ", 1)[0].upper() in WRITES else rules.ErrorNames())
        statement = Statement(SqlText(named, {}), rollback_on=rollback)
        transactions.append(Transaction(name, float(cards[number - 1]), {}, (statement,)))
        statements[name], samples[name] = row["statement"], sample
        captured[name] = 100.0 * row["count"] / total
    if problems:
        raise FileProblems(problems)
    tables = tuple(sorted({t for row, _, _ in kept for t in row.get("tables", [])}))
    spec = Spec(path, f"the statement mix captured in {path}", (), tuple(transactions), writes=tables)
    return Mix(spec, statements, captured, samples, left_out, left_out_count, unmatched)


def deck_cards(counts: list[int]) -> list[int]:
    """Each count's cards of a :data:`DECK`-card deck: its share rounded so that the cards
    add up to the deck (largest remainders first), so every share is off by less than a
    card (a tenth of a point); a statement too rare for one still gets one."""
    total = sum(counts)
    exact = [DECK * c / total for c in counts]
    cards = [int(e) for e in exact]
    for i in sorted(range(len(counts)), key=lambda i: cards[i] - exact[i])[:DECK - sum(cards)]:
        cards[i] += 1
    return [max(1, c) for c in cards]


def _named(text: str) -> tuple[str, int]:
    """The statement with its ``?`` written ``:p1``, ``:p2`` ... and how many it has."""
    count = 0

    def mark(m: re.Match[str]) -> str:
        nonlocal count
        if m.group(1) is None:
            return m.group()
        count += 1
        return f":p{count}"

    return _PLACEHOLDER.sub(mark, text), count


def transaction_name(number: int, text: str, tables: list[str]) -> str:
    """``s03_update_sbtest1``: its place among the statements kept, its kind and first
    table (a name of letters, digits and _ the results store and reports show)."""
    kind = text.split(" ", 1)[0].lower()
    table = _WORD.sub("_", tables[0].lower()) if tables else ""
    return f"s{number:02d}_{kind}{'_' + table if table else ''}"[:63]
