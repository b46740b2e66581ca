"""A trace's summary as a workload file's transactions, built in memory (no TOML).

Why the custom workload's Spec: it already deals weighted transactions from shuffled
decks, draws parameters from generators, prepares statements before the first step and
confines them to declared tables; a captured mix needs nothing else. Each normalised
statement becomes a transaction of its own (tpsbench's BEGIN, the statement, COMMIT),
weighted by its captured count, its ``?`` parameters drawn from their captured
distributions: integers uniform over their captured range, other numbers likewise at a
few decimal places, texts from their most frequent captured values in their captured
proportions. Statements that are not SELECT, INSERT, UPDATE, DELETE or REPLACE
(BEGIN, COMMIT, SET, SHOW ...) are left out, and so is a statement whose placeholders
do not match its captured parameters; :class:`Mix` says how many of each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.workloads.custom import generators, rules
from tpsbench.workloads.custom.generators import INT64, MAX_PLACES, Generator
from tpsbench.workloads.custom.spec import FileProblems, Spec, Statement, Transaction
from tpsbench.workloads.custom.sqltext import SqlText

#: cards of each user's deck: the weights are the captured shares rounded to 1/DECK
DECK = 1000
#: statement kinds a mix runs (what the custom workload's confinement lets through)
KINDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH")
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
#: a placeholder outside quoted identifiers (the normalised text has no string literal left)
_PLACEHOLDER = re.compile(r'"(?:[^"]|"")*"|`[^`]*`|(\?)')
_WORD = re.compile(r"[^a-z0-9_]+")


@dataclass(frozen=True)
class Mix:
    """The workload of a trace: its spec, each transaction's normalised statement and
    captured share (percent of the statements kept), and what was left out."""

    spec: Spec
    statements: dict[str, str]
    captured: dict[str, float]
    left_out: int
    left_out_count: int
    unmatched: int


def mix_of(path: str, summary: dict[str, Any]) -> Mix:
    """The mix of the trace at ``path`` from its ``summary``, or a one-line error when it
    has none (or none of its statements can run as a mix)."""
    rows = summary.get("statements") if isinstance(summary, dict) else None
    if not rows:
        raise TpsbenchError(f"{path} holds no summary of its statements: --as-mix draws from it (capture "
                            "the trace again with this tpsbench)")
    kept: list[tuple[dict[str, Any], str, int]] = []
    left_out = left_out_count = unmatched = 0
    for row in rows:
        text, count = str(row.get("statement", "")), int(row.get("count", 0))
        if count <= 0:
            continue
        if text.split(" ", 1)[0].upper() not in KINDS:
            left_out, left_out_count = left_out + 1, left_out_count + count
            continue
        named, marks = _named(text)
        if marks != len(row.get("parameters", [])):
            unmatched += 1
            continue
        kept.append((row, named, count))
    if not kept:
        raise TpsbenchError(f"{path} holds no SELECT, INSERT, UPDATE or DELETE to run as a mix")
    total = sum(count for _, _, count in kept)
    problems: list[str] = []
    transactions, statements, captured = [], {}, {}
    for number, (row, named, count) in enumerate(kept, start=1):
        name = transaction_name(number, row["statement"], row.get("tables", []))
        params = {f"p{i}": _generator(dist, f"{path}: statement {number} parameter p{i}", problems)
                  for i, dist in enumerate(row.get("parameters", []), start=1)}
        rollback = (rules.parse(["unique_violation"], path, problems)
                    if row["statement"].split(" ", 1)[0].upper() in WRITES else rules.ErrorNames())
        statement = Statement(SqlText(named, {}), rollback_on=rollback)
        transactions.append(Transaction(name, float(max(1, round(DECK * count / total))),
                                        {p: g for p, g in params.items() if g is not None}, (statement,)))
        statements[name] = row["statement"]
        captured[name] = 100.0 * count / total
    if problems:
        raise FileProblems(problems)
    tables = tuple(sorted({t for row, _, _ in kept for t in row.get("tables", [])}))
    spec = Spec(path, f"the statement mix captured in {path}", (), tuple(transactions), writes=tables)
    return Mix(spec, statements, captured, left_out, left_out_count, unmatched)


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
    """``s03_update_sbtest1``: its place in the summary, its kind and first table (a
    name of letters, digits and _ the results store and reports show)."""
    kind = text.split(" ", 1)[0].lower()
    table = _WORD.sub("_", tables[0].lower()) if tables else ""
    return f"s{number:02d}_{kind}{'_' + table if table else ''}"[:63]


def _generator(dist: dict[str, Any], where: str, problems: list[str]) -> Generator | None:
    """The generator that draws like one captured parameter's distribution (summary.py)."""
    kind = dist.get("kind")
    if kind == "integer":
        value: Any = {"gen": "uniform", "min": dist["min"], "max": dist["max"]}
    elif kind == "number":
        biggest = max(abs(dist["min"]), abs(dist["max"]), 1)
        places = next((p for p in range(MAX_PLACES, -1, -1) if biggest * 10 ** p <= INT64[1]), 0)
        value = {"gen": "decimal", "min": dist["min"], "max": dist["max"], "places": min(places, 3)}
    else:
        top = [(str(v), int(c)) for v, c in dist.get("top", [])]
        value = {"gen": "choice", "values": [v for v, _ in top], "weights": [c for _, c in top]} if top else ""
    return generators.parse(value, where, False, problems)
