"""A workload file kept to its own tables: every statement it holds parsed for the target's
dialect before anything runs, and refused in one line naming its key where it could
touch what the file does not own.

Why parse: a workload file is SQL that tpsbench sends on the user's database, often one
that holds other applications' tables. A ``create`` that drops one, a check that empties
one, or a PostgreSQL "statement" that is two (``SELECT 1; DROP TABLE x``) would do so in
the user's name. So each statement must be one statement; the DDL may create only the
file's own tables (and their indexes); the transactions may write only the file's own
tables and read those and the ones ``reads`` names; checks, counters and query
generators may only SELECT (and run in a read-only transaction where the server has
one: readonly.py). Parsing happens once per dialect, when the build or run is
configured for its target (never per transaction). Functions a statement calls are not
looked into: the read-only transactions are what holds for the checks and counters.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from tpsbench.workloads.custom.spec import Spec

#: the targets' dialects as sqlglot names them
SQLGLOT = {"postgresql": "postgres", "mysql": "mysql", "sqlite": "sqlite", "mssql": "tsql"}
WRITES = (exp.Insert, exp.Update, exp.Delete, exp.Merge)
#: the nodes whose tables a table belongs to: the nearest one tells read from write
SCOPES = (exp.Select, exp.SetOperation, *WRITES)
#: statement kinds as SQL spells them, where sqlglot's name is not that
KINDS = {"truncatetable": "TRUNCATE"}
RUNS = "SELECT, INSERT, UPDATE, DELETE or MERGE"


@contextmanager
def quiet() -> Iterator[None]:
    """sqlglot logs a warning where it falls back to an opaque command: we say it ourselves."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class Confiner:
    """Reads the statements of one file for one dialect; ``problems`` collects what is refused."""

    def __init__(self, found: Spec, dialect: str) -> None:
        self.spec = found
        self.dialect = dialect
        self.read = SQLGLOT.get(dialect, dialect)
        self.declared = {self.norm(name) for name in (*(t.name for t in found.tables), *found.writes)}
        self.readable = self.declared | {self.norm(name) for name in found.reads}
        self.problems: list[str] = []

    def norm(self, name: str, quoted: bool = False) -> str:
        """A table's name as the server resolves it (PostgreSQL folds unquoted names to lower
        case, SQLite ignores case, MySQL keeps it)."""
        ident = Dialect.get_or_raise(self.read).normalize_identifier(exp.to_identifier(name, quoted=quoted))
        return ident.name

    def problem(self, where: str, what: str) -> None:
        self.problems.append(f"{self.spec.path}: {where}: {what}")

    def one(self, where: str, text: str | None) -> exp.Expression | None:
        """The one statement ``text`` holds, or None after saying why not."""
        if text is None:
            return None
        try:
            with quiet():
                parsed = [p for p in sqlglot.parse(text, read=self.read) if p is not None]
        except SqlglotError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.problem(where, f"cannot be read as {self.dialect} SQL ({first})")
            return None
        if len(parsed) != 1:
            self.problem(where, f"holds {len(parsed)} statements: give exactly one")
            return None
        if isinstance(parsed[0], exp.Command):
            self.problem(where, f"{parsed[0].name.upper()} is not a statement tpsbench can confine to the file's "
                                f"tables: write it as {RUNS}")
            return None
        return parsed[0]  # type: ignore[return-value]  # sqlglot.parse is typed as its base Expr

    def tables(self, statement: exp.Expression) -> Iterator[tuple[str, bool]]:
        """Each table ``statement`` names (its name as resolved, written?), CTE names left out."""
        ctes = {self.norm(c.alias_or_name) for c in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                continue  # a table function: generate_series(...)
            if table.args.get("db") or table.args.get("catalog"):
                yield table.sql(self.read), True  # another schema or database: never the file's
                continue
            name = self.norm(table.name, bool(table.this.args.get("quoted")))
            scope = table.find_ancestor(*SCOPES)
            written = isinstance(scope, WRITES) or isinstance(table.parent, exp.Into)
            if name not in ctes or written:
                yield name, written

    def ddl(self, where: str, text: str | None, table: str, index: bool) -> None:
        """A table's create (a CREATE TABLE of that table) or index entry (a CREATE INDEX or
        ALTER TABLE of the file's tables)."""
        statement = self.one(where, text)
        if statement is None:
            return
        kind = str(statement.args.get("kind") or "").upper()
        if index and not (isinstance(statement, exp.Create) and kind == "INDEX" or isinstance(statement, exp.Alter)):
            self.problem(where, "must be CREATE INDEX (or ALTER TABLE) on the file's tables")
            return
        if not index:
            target = statement.find(exp.Table)
            if not (isinstance(statement, exp.Create) and kind == "TABLE" and target is not None
                    and self.norm(target.name) == self.norm(table) and not target.args.get("db")):
                self.problem(where, f"must be CREATE TABLE {table}")
                return
        for name, _ in self.tables(statement):
            if name not in self.declared:
                self.problem(where, f"touches table {name}, which the file does not declare as a [[table]]")
                return

    def dml(self, where: str, text: str | None) -> None:
        """A transaction's statement: writes the file's tables, reads those and its ``reads``."""
        statement = self.one(where, text)
        if statement is None:
            return
        if not isinstance(statement, (exp.Query, exp.Values, *WRITES)):
            kind = KINDS.get(statement.key, statement.key.upper())
            self.problem(where, f"is a {kind} statement: a transaction runs {RUNS}")
            return
        self.confined(where, statement)

    def select(self, where: str, text: str | None) -> None:
        """A check's, counter's or query generator's statement: a SELECT of readable tables."""
        statement = self.one(where, text)
        if statement is None:
            return
        if not isinstance(statement, exp.Query) or any(statement.find_all(*WRITES)):
            self.problem(where, "must be a read-only SELECT")
            return
        self.confined(where, statement)

    def confined(self, where: str, statement: exp.Expression) -> None:
        for name, written in self.tables(statement):
            if written and name not in self.declared:
                self.problem(where, f"writes table {name}, which is not one of the file's [[table]]s")
                return
            if name not in self.readable:
                self.problem(where, f"reads table {name}, which is neither a [[table]] of the file nor in its "
                                    f"reads = [...]")
                return


def problems(found: Spec, dialect: str) -> list[str]:
    """Every statement of ``found`` that ``dialect``'s target would run and that is not kept
    to the file's tables, one line each naming its key (empty: the file is confined)."""
    confiner = Confiner(found, dialect)
    for table in found.tables:
        where = f"table {table.name!r}"
        confiner.ddl(f"{where} create", table.create.for_dialect(dialect), table.name, index=False)
        for number, text in enumerate(table.indexes, start=1):
            confiner.ddl(f"{where} index {number}", text.for_dialect(dialect), table.name, index=True)
    for txn in found.transactions:
        for number, statement in enumerate(txn.statements, start=1):
            confiner.dml(f"transaction {txn.name!r} statement {number}", statement.sql.for_dialect(dialect))
    for txn in found.transactions:
        for param, gen in txn.params.items():
            if gen.kind == "query":
                confiner.select(f"transaction {txn.name!r} parameter {param}", gen.args["sql"].for_dialect(dialect))
    for number, check in enumerate(found.checks, start=1):
        confiner.select(f"check {number}", check.sql.for_dialect(dialect))
    for counter in found.counters:
        confiner.select(f"counter {counter.name!r}", counter.sql.for_dialect(dialect))
    return confiner.problems
