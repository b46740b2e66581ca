"""A workload file, read and validated: :func:`load` gives a :class:`Spec` or refuses the file.

Why everything up front: a mistake found in the middle of a run (a parameter spelt two
ways, a generator that does not exist) would cost the user the steps before it and
leave a run in the results store that measured errors. So the whole file is checked
before anything is built or run, and every problem is said at once, one line each,
naming the file, the table, transaction or statement, and what is wrong
(:class:`FileProblems`). What only the database can tell (does a statement prepare
there?) is checked before the first step (prepare.py).

The format is docs/custom-workloads.md's; docs/examples/order_entry.toml uses all of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import read_toml
from tpsbench.workloads.custom import generators, rules
from tpsbench.workloads.custom.generators import Generator
from tpsbench.workloads.custom.sqltext import DIALECTS, SqlText, parse

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
#: statements tpsbench sends itself around every transaction
TRANSACTION_CONTROL = re.compile(r"^\s*(BEGIN|START\s+TRANSACTION|COMMIT|ROLLBACK|END)\b", re.IGNORECASE)
TOP_KEYS = frozenset({"description", "reads", "table", "transaction", "check", "counter", "retry_on"})
TABLE_KEYS = frozenset({"name", "create", "indexes", "rows", "scaled", "columns"})
TRANSACTION_KEYS = frozenset({"name", "weight", "statements", "params"})
STATEMENT_KEYS = frozenset({"sql", *DIALECTS, "into", "rollback_if", "rollback_on"})
CHECK_KEYS = frozenset({"title", "sql", *DIALECTS})
COUNTER_KEYS = frozenset({"name", "sql", *DIALECTS, "per_commit"})
SQL_KEYS = frozenset({"sql", *DIALECTS})
ROLLBACK_IF = ("no_rows",)


class FileProblems(TpsbenchError):
    """Everything wrong with a workload file, one line per problem (the one error that is
    several lines: each line is a problem of its own, and all of them are worth fixing
    before the next try)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0])
        self.args = ("\n".join(problems),)
        self.problems = problems


@dataclass(frozen=True)
class Statement:
    sql: SqlText
    #: parameters the first row's columns become for the statements after it (NULL: no row)
    into: tuple[str, ...] = ()
    #: no row returned (or changed) means the transaction rolls back as expected
    rollback_if_no_rows: bool = False
    #: errors that mean the transaction rolls back as expected
    rollback_on: rules.ErrorNames = field(default_factory=rules.ErrorNames)


@dataclass(frozen=True)
class Transaction:
    name: str
    weight: float
    params: dict[str, Generator]
    statements: tuple[Statement, ...]


@dataclass(frozen=True)
class Table:
    name: str
    create: SqlText
    indexes: tuple[SqlText, ...] = ()
    #: rows per unit of scale (or in all, when not ``scaled``)
    rows: int = 0
    scaled: bool = True
    columns: dict[str, Generator] = field(default_factory=dict)

    def rows_at(self, scale: int) -> int:
        return self.rows * scale if self.scaled else self.rows


@dataclass(frozen=True)
class Check:
    title: str
    sql: SqlText


@dataclass(frozen=True)
class Counter:
    """An honesty counter: a query of one number, and how much each commit changes it."""

    name: str
    sql: SqlText
    per_commit: dict[str, int]


@dataclass(frozen=True)
class Spec:
    path: str
    description: str
    tables: tuple[Table, ...]
    transactions: tuple[Transaction, ...]
    checks: tuple[Check, ...] = ()
    counters: tuple[Counter, ...] = ()
    retry_on: rules.ErrorNames = field(default_factory=rules.ErrorNames)
    #: other tables the file's statements may read (never write): confine.py holds them to it
    reads: tuple[str, ...] = ()
    #: tables that exist on the target already and that the statements may write without
    #: declaring them as [[table]]s: set only by code that builds a Spec itself (a mix from
    #: a captured trace, whose tables are the application's), never by a file
    writes: tuple[str, ...] = ()

    def sizes(self, scale: int) -> dict[str, int]:
        """Rows per table at ``scale``: what "rows:TABLE" bounds mean."""
        return {table.name: table.rows_at(scale) for table in self.tables}

    def run_statements(self, dialect: str) -> list[tuple[str, str | None]]:
        """Every statement a run sends on ``dialect`` (the transactions', the counters'),
        as (where it is in the file, its SQL there: None where it has none)."""
        found = [(f"{self.path}: transaction {t.name!r} statement {number}", s.sql.for_dialect(dialect))
                 for t in self.transactions for number, s in enumerate(t.statements, start=1)]
        return found + [(f"{self.path}: counter {c.name!r}", c.sql.for_dialect(dialect)) for c in self.counters]

    def queries(self, dialect: str) -> list[tuple[str, str, str | None]]:
        """The query parameters as (key "transaction.parameter", where, their SQL on ``dialect``)."""
        return [(f"{t.name}.{p}", f"{self.path}: transaction {t.name!r} parameter {p}",
                 g.args["sql"].for_dialect(dialect))
                for t in self.transactions for p, g in t.params.items() if g.kind == "query"]


def load(path: str | Path) -> Spec:
    """The file at ``path``, validated; a :class:`FileProblems` error lists what is wrong."""
    return Reader(str(path)).read(read_toml(Path(path), "workload file"))


class Reader:
    """Reads one file's tables into a :class:`Spec`, noting each problem with where it is."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[str] = []

    def problem(self, where: str, what: str) -> None:
        self.problems.append(f"{self.path}: {where}{': ' if where else ''}{what}")

    def read(self, doc: dict[str, Any]) -> Spec:
        self.unknown_keys("", doc, TOP_KEYS)
        tables = tuple(t for i, raw in enumerate(self.array(doc, "table")) if (t := self.table(i, raw)))
        self.unique("table", [t.name for t in tables])
        known = {t.name for t in tables}
        for table in tables:
            for column, gen in table.columns.items():
                self.rows_known(f"table {table.name!r} column {column}", gen, known)
        transactions = tuple(x for i, raw in enumerate(self.array(doc, "transaction"))
                             if (x := self.transaction(i, raw, known)))
        if not self.array(doc, "transaction"):
            self.problem("", "no [[transaction]]: a workload needs at least one")
        names = [t.name for t in transactions]
        self.unique("transaction", names)
        checks = tuple(c for i, raw in enumerate(self.array(doc, "check")) if (c := self.check(i, raw)))
        counters = tuple(n for i, raw in enumerate(self.array(doc, "counter")) if (n := self.counter(i, raw, names)))
        self.unique("counter", [c.name for c in counters])
        retry_on = (rules.parse(doc["retry_on"], f"{self.path}: retry_on", self.problems) if "retry_on" in doc
                    else rules.ErrorNames())
        description = doc.get("description", "")
        if not isinstance(description, str):
            self.problem("description", "must be text")
        reads = doc.get("reads", [])
        if not (isinstance(reads, list) and all(isinstance(r, str) and IDENTIFIER.match(r) for r in reads)):
            self.problem("reads", f"must be a list of table names, like [\"app_users\"], not {reads!r}")
            reads = []
        for name in sorted(set(reads) & known):
            self.problem("reads", f"{name!r} is a [[table]] of the file already")
        if self.problems:
            raise FileProblems(self.problems)
        return Spec(self.path, str(description), tables, transactions, checks, counters, retry_on, tuple(reads))

    # -- shared shapes ----------------------------------------------------------------
    def array(self, doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
        value = doc.get(key, [])
        if not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            self.problem(key, f"write each one as a [[{key}]] table")
            return []
        return value

    def unknown_keys(self, where: str, raw: dict[str, Any], allowed: frozenset[str]) -> None:
        for key in sorted(set(raw) - allowed):
            self.problem(where, f"unknown key {key!r} (known: {', '.join(sorted(allowed))})")

    def unique(self, what: str, names: list[str]) -> None:
        for name in sorted({n for n in names if names.count(n) > 1}):
            self.problem(f"{what} {name!r}", "defined twice")

    def name(self, where: str, raw: dict[str, Any], key: str = "name") -> str | None:
        value = raw.get(key)
        if not (isinstance(value, str) and IDENTIFIER.match(value)):
            self.problem(where, f"{key} must be a name of letters, digits and _ (up to 63), not {value!r}")
            return None
        return value

    def sql(self, where: str, value: Any, params: bool = False) -> SqlText | None:
        """A statement's text: a string, or a table of ``sql`` and dialect variants (any
        other keys of that table are the caller's to read)."""
        if isinstance(value, str):
            value = {"sql": value}
        if not isinstance(value, dict):
            self.problem(where, f"SQL must be text or a table of sql and dialect variants, not {value!r}")
            return None
        texts = {k: v for k, v in value.items() if k in SQL_KEYS}
        if not texts:
            self.problem(where, f"no SQL: give sql = \"...\" (or a variant per dialect: {', '.join(DIALECTS)})")
            return None
        for key, text in texts.items():
            if not (isinstance(text, str) and text.strip()):
                self.problem(where, f"{key} must be the statement's text")
                return None
            if not params and parse(text).names:
                self.problem(where, f"takes no parameters, but {key} uses :{parse(text).names[0]}")
        variants = {k: v.strip() for k, v in texts.items() if k != "sql"}
        return SqlText(texts["sql"].strip() if "sql" in texts else None, variants)

    def generator(self, where: str, value: Any, for_columns: bool) -> Generator | None:
        gen = generators.parse(value, f"{self.path}: {where}", for_columns, self.problems)
        if gen is not None and gen.kind == "query":
            sql = self.sql(where, gen.args["sql"])
            return None if sql is None else Generator("query", {"sql": sql})
        return gen

    def rows_known(self, where: str, gen: Generator, known: set[str]) -> None:
        for table in sorted(gen.tables() - known):
            self.problem(where, f"\"rows:{table}\" names no [[table]] of the file")

    # -- sections ---------------------------------------------------------------------
    def table(self, index: int, raw: dict[str, Any]) -> Table | None:
        where = f"table {raw.get('name', index + 1)!r}"
        self.unknown_keys(where, raw, TABLE_KEYS)
        name = self.name(where, raw)
        create = self.sql(f"{where} create", raw["create"]) if "create" in raw else None
        if "create" not in raw:
            self.problem(where, "needs create = \"CREATE TABLE ...\" (tpsbench builds the tables it lists)")
        indexes = raw.get("indexes", [])
        if not isinstance(indexes, list):
            self.problem(where, "indexes must be a list of CREATE INDEX statements")
            indexes = []
        made = [self.sql(f"{where} index {i + 1}", text) for i, text in enumerate(indexes)]
        rows, scaled, columns = raw.get("rows", 0), raw.get("scaled", True), raw.get("columns", {})
        if not (isinstance(rows, int) and not isinstance(rows, bool) and rows >= 0):
            self.problem(where, f"rows must be a whole number >= 0, not {rows!r}")
        if not isinstance(scaled, bool):
            self.problem(where, f"scaled must be true or false, not {scaled!r}")
        if not isinstance(columns, dict):
            self.problem(where, "columns must be a [table.columns] table of generators")
            columns = {}
        if rows and not columns:
            self.problem(where, f"rows = {rows} but no [table.columns] to fill them")
        gens = {}
        for column, value in columns.items():
            if not IDENTIFIER.match(column):
                self.problem(where, f"column {column!r} is not a name of letters, digits and _")
            gens[column] = self.generator(f"{where} column {column}", value, for_columns=True)
        if name is None or create is None or None in made or None in gens.values():
            return None
        return Table(name, create, tuple(i for i in made if i), int(rows), bool(scaled),
                     {c: g for c, g in gens.items() if g})

    def transaction(self, index: int, raw: dict[str, Any], tables: set[str]) -> Transaction | None:
        where = f"transaction {raw.get('name', index + 1)!r}"
        self.unknown_keys(where, raw, TRANSACTION_KEYS)
        name = self.name(where, raw)
        weight = raw.get("weight")
        if not (isinstance(weight, (int, float)) and not isinstance(weight, bool) and weight > 0):
            self.problem(where, f"weight must be a number above 0, not {weight!r}")
        params_raw = raw.get("params", {})
        if not isinstance(params_raw, dict):
            self.problem(where, "params must be a [transaction.params] table of generators")
            params_raw = {}
        params: dict[str, Generator | None] = {}
        for param, value in params_raw.items():
            if not IDENTIFIER.match(param):
                self.problem(where, f"parameter {param!r} is not a name of letters, digits and _")
            gen = params[param] = self.generator(f"{where} parameter {param}", value, for_columns=False)
            if gen is not None:
                self.rows_known(f"{where} parameter {param}", gen, tables)
        defined = {n: p for p, g in params.items() for n in (g.names(p) if g else (p,))}
        statements = self.statements(where, raw.get("statements"), defined)
        if name is None or statements is None or None in params.values() or not isinstance(weight, (int, float)):
            return None
        return Transaction(name, float(weight), {p: g for p, g in params.items() if g}, statements)

    def statements(self, where: str, raw: Any, defined: dict[str, str]) -> tuple[Statement, ...] | None:
        if not (isinstance(raw, list) and raw):
            self.problem(where, "needs statements = [\"...\", ...]: at least one")
            return None
        available, used = set(defined), set()
        captured: dict[str, str] = {}
        out: list[Statement | None] = []
        for number, item in enumerate(raw, start=1):
            at = f"{where} statement {number}"
            statement = self.statement(at, item)
            out.append(statement)
            if statement is None:
                continue
            for name in sorted(statement.sql.names() - available):
                self.problem(at, f"unknown parameter :{name} (not in [transaction.params], nor an earlier "
                                 f"statement's into)")
            used |= statement.sql.names()
            for name in statement.into:
                if name in available:
                    self.problem(at, f"into {name!r}: a parameter of that name is defined already")
                available.add(name)
                captured[name] = at
        for name in sorted(set(defined) - used):
            self.problem(f"{where} parameter {defined[name]}", f"defined but unused: no statement uses :{name}")
        for name in sorted(set(captured) - used):
            self.problem(captured[name], f"into {name!r} is never used by a later statement")
        return None if None in out else tuple(s for s in out if s)

    def statement(self, where: str, item: Any) -> Statement | None:
        if isinstance(item, dict):
            self.unknown_keys(where, item, STATEMENT_KEYS)
        sql = self.sql(where, item, params=True)
        if sql is None:
            return None
        for text in sql.texts():
            if TRANSACTION_CONTROL.match(text):
                self.problem(where, "tpsbench begins and ends every transaction itself: leave out BEGIN, COMMIT, "
                                    "ROLLBACK")
        extra = item if isinstance(item, dict) else {}
        into = extra.get("into", [])
        if not (isinstance(into, list) and all(isinstance(n, str) and IDENTIFIER.match(n) for n in into)):
            self.problem(where, f"into must be a list of parameter names, one per column, not {into!r}")
            into = []
        rollback_if = extra.get("rollback_if")
        if rollback_if is not None and rollback_if not in ROLLBACK_IF:
            self.problem(where, f"rollback_if must be {' or '.join(map(repr, ROLLBACK_IF))}, not {rollback_if!r}")
        rollback_on = (rules.parse(extra["rollback_on"], f"{self.path}: {where} rollback_on", self.problems)
                       if "rollback_on" in extra else rules.ErrorNames())
        return Statement(sql, tuple(into), rollback_if == "no_rows", rollback_on)

    def check(self, index: int, raw: dict[str, Any]) -> Check | None:
        where = f"check {index + 1}"
        self.unknown_keys(where, raw, CHECK_KEYS)
        title = raw.get("title")
        if not (isinstance(title, str) and title.strip()):
            self.problem(where, "needs a title saying what holds")
        sql = self.sql(where, raw)
        return Check(title, sql) if sql is not None and isinstance(title, str) and title.strip() else None

    def counter(self, index: int, raw: dict[str, Any], transactions: list[str]) -> Counter | None:
        where = f"counter {raw.get('name', index + 1)!r}"
        self.unknown_keys(where, raw, COUNTER_KEYS)
        name, sql = self.name(where, raw), self.sql(where, raw)
        per = raw.get("per_commit")
        if not (isinstance(per, dict) and per):
            self.problem(where, "needs per_commit = { transaction = change, ... }: what each commit adds")
            return None
        for txn, change in per.items():
            if txn not in transactions:
                self.problem(where, f"per_commit names {txn!r}, which is no transaction of the file")
            if not (isinstance(change, int) and not isinstance(change, bool)):
                self.problem(where, f"per_commit {txn} must be a whole number, not {change!r}")
        if name is None or sql is None:
            return None
        return Counter(name, sql, {t: int(c) for t, c in per.items() if isinstance(c, int)})
