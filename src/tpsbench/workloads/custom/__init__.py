"""Your own SQL as a workload: tables, data, transactions, checks and counters from a TOML file.

``tpsbench build custom --file F`` creates the file's tables and loads their rows from the
file's generators through the target's bulk path, in parallel tasks, like the shipped
workloads (one task per table and chunk of rows, deterministic in the seed); ``--scale N``
multiplies every table's rows by N, except those marked ``scaled = false``. ``tpsbench run
custom --file F`` runs the file's transactions at stepped loads with the engine's
measurement, retries and results store; ``tpsbench check custom --file F`` runs its
checks. A file without tables runs on the database as it is.

The file is read and validated whole when the workload is configured (spec.py), and its
statements prepared on the target before the first step (prepare.py), so that a mistake
is a few clear lines and nothing built or stored. docs/custom-workloads.md is the
user's guide, docs/examples/order_entry.toml its worked example.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import STATE_COMPLETE, require_complete
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.transactions import TransactionTable
from tpsbench.core.workload import Check, LoadParams, LoadTask, Option, Workload
from tpsbench.workloads.custom import bounds, confine, prepare, spec
from tpsbench.workloads.custom.generators import drawer
from tpsbench.workloads.custom.readonly import read_only
from tpsbench.workloads.custom.session import CustomSession
from tpsbench.workloads.custom.spec import FileProblems, Spec
from tpsbench.workloads.custom.transactions import table_of

#: rows per generated batch and load task: a few MB of text, one commit each
CHUNK_ROWS = 50_000
FILE = Option("file", "", "The workload file (TOML) with your tables, data, transactions and checks:"
              " docs/custom-workloads.md. Its statements may touch only its own [[table]]s, and read"
              " the other tables its reads = [...] names.")


@dataclass(frozen=True)
class ReadOnlyCheck(Check):
    """A file's check, counted in a read-only transaction (readonly.py): what it selects
    is the file's to say, but it may change nothing."""

    dialect: str = ""

    def count(self, target: Target, conn: sa.Connection) -> int:
        with read_only(self.dialect, lambda statement: conn.execute(sa.text(statement)), conn.rollback):
            return super().count(target, conn)


class CustomWorkload(Workload):
    """Your own transactions on your own schema, from a TOML file (--file): each a name, a
    weight and statements with named parameters drawn by the file's generators."""

    name = "custom"
    scale_unit = "row multiples"
    default_scale = 1
    run_options = (FILE,)
    build_options = (FILE,)

    def __init__(self) -> None:
        self.spec: Spec | None = None
        #: the file's transactions, a table built when it is read (transactions.py)
        self.table: TransactionTable[Any] | None = None
        self.transaction_names: tuple[str, ...] = ()
        #: the target's dialect, once verify_schema has seen it (checks and counters pick their SQL by it)
        self.dialect = ""
        #: the query parameters' values by "transaction.parameter", read by prepare_run for the whole run
        self.queried: dict[str, list[Any]] = {}
        #: the build's scale, once verify_schema has read it (the rows "rows:TABLE" bounds mean)
        self.scale = 1

    # -- the file -----------------------------------------------------------------------
    def configure(self, options: Mapping[str, str]) -> None:
        """Read and validate the file that ``file`` names (everything wrong in one error)."""
        super().configure(options)
        path = options.get("file") or ""
        if not path:
            raise TpsbenchError("custom needs --file FILE: a TOML file of your tables and transactions "
                                "(docs/custom-workloads.md)")
        self.spec = spec.load(path)
        self.table = table_of(self.spec)
        self.transaction_names = self.table.names

    def need_spec(self) -> Spec:
        if self.spec is None:
            raise TpsbenchError("custom needs --file FILE: the workload file its tables and transactions come from")
        return self.spec

    @property
    def tables(self) -> tuple[str, ...]:  # type: ignore[override]  # the file's tables, per instance, where Workload has a ClassVar
        """The file's tables, in its order."""
        return tuple(t.name for t in self.need_spec().tables)

    def ddl(self, dialect: str) -> tuple[list[str], list[str]] | None:
        """The file's CREATE TABLE and CREATE INDEX statements for ``dialect``."""
        found = self.need_spec()
        if not found.tables:
            raise TpsbenchError(f"{found.path} has no [[table]] to build: run it on your database as it is")
        self.confine(dialect)
        creates: list[str] = []
        indexes: list[str] = []
        for table in found.tables:
            for number, text in enumerate((table.create, *table.indexes)):
                chosen = text.for_dialect(dialect)
                if chosen is None:
                    what = "create" if number == 0 else f"index {number}"
                    raise TpsbenchError(f"{found.path}: table {table.name!r} {what}: no SQL for {dialect} "
                                        f"(give sql = \"...\" or {dialect} = \"...\")")
                (indexes if number else creates).append(chosen)
        return creates, indexes

    def confine(self, dialect: str) -> None:
        """Refuse the file unless every statement it sends on ``dialect`` is one statement
        kept to its own tables (confine.py) and its columns' generators give values their
        types hold there (bounds.py), before anything is built, run or checked."""
        found = self.need_spec()
        problems = confine.problems(found, dialect) + bounds.problems(found, dialect)
        if problems:
            raise FileProblems(problems)

    def describe_scale(self, scale: int) -> str:
        return f"{scale} x the rows of {self.need_spec().path}"

    # -- build --------------------------------------------------------------------------
    def constants(self, seed: int) -> dict[str, int]:
        return {}

    def tasks(self, scale: int) -> list[LoadTask]:
        """One task per table and chunk of :data:`CHUNK_ROWS` rows, largest tables first."""
        found = self.need_spec()
        tasks = [(table.rows_at(scale), LoadTask("rows", (number, chunk)))
                 for number, table in enumerate(found.tables)
                 for chunk in range(-(-table.rows_at(scale) // CHUNK_ROWS))]
        return [task for _, task in sorted(tasks, key=lambda item: -item[0])]

    def generate(self, task: LoadTask, params: LoadParams) -> Iterator[Batch]:
        """One chunk of a table's rows: each column from a stream of (seed, table, chunk, column)."""
        found = self.need_spec()
        number, chunk = task.key
        table = found.tables[number]
        first = chunk * CHUNK_ROWS
        count = min(CHUNK_ROWS, table.rows_at(params.scale) - first)
        sizes = found.sizes(params.scale)
        columns = {}
        for index, (column, gen) in enumerate(table.columns.items()):
            rng = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([params.seed, number, chunk, index])))
            try:
                draw = drawer(gen, f"{table.name}.{column}", sizes, params.seed, params.load_time)
            except TpsbenchError as exc:  # a bound empty at this scale
                raise TpsbenchError(f"{found.path}: table {table.name!r} column {column}: {exc}") from exc
            columns[column] = draw(rng, first, count)
        yield Batch(table.name, columns)

    def expected_rows(self, scale: int, seed: int) -> dict[str, int]:
        return self.need_spec().sizes(scale)

    def checks(self) -> list[Check]:
        """The file's checks, for the dialect verify_schema saw (call it first)."""
        return [ReadOnlyCheck(number, check.title, check.sql.for_dialect(self.dialect) or "", dialect=self.dialect)
                for number, check in enumerate(self.need_spec().checks, start=1)]

    # -- run ----------------------------------------------------------------------------
    def verify_schema(self, target: Target) -> dict[str, str]:
        """A complete build of the file's tables; a file without tables runs on the
        database as it is (its statements are prepared there before the first step)."""
        found = self.need_spec()
        self.confine(target.dialect)
        self.dialect = target.dialect
        meta = require_complete(target, self.name, self.tables) if found.tables else {"state": STATE_COMPLETE}
        self.scale = int(meta.get("scale", "1"))
        return {**meta, "scale": str(self.scale)}

    def prepare_run(self, target: Target, options: Mapping[str, str], users: int) -> str | None:
        """Prepare every statement the run sends on the target and read the query
        parameters' values (once, for the whole run: every user of every step draws from
        the same rows); all problems in one error, before anything is stored."""
        found = self.need_spec()
        dialect = target.dialect
        statements, queries = found.run_statements(dialect), found.queries(dialect)
        problems = [f"{where}: no SQL for {dialect} (give sql = \"...\" or {dialect} = \"...\")"
                    for where, text in [*statements, *((w, t) for _, w, t in queries)] if text is None]
        sizes = found.sizes(self.scale)
        for txn in found.transactions:
            for param, gen in txn.params.items():
                try:
                    if gen.kind not in ("query", "now"):
                        drawer(gen, f"{txn.name}.{param}", sizes, 0)
                except TpsbenchError as exc:  # a bound empty at this scale
                    problems.append(f"{found.path}: transaction {txn.name!r} parameter {param}: {exc}")
        if problems:
            raise FileProblems(problems)
        problems += prepare.unprepared(target, [(w, t) for w, t in statements if t is not None])
        self.queried, failed = prepare.query_values(target, [(k, w, t) for k, w, t in queries if t is not None])
        if problems or failed:
            raise FileProblems(problems + failed)
        checked = (f"{len(statements)} statement(s) prepared on {dialect}" if prepare.can_prepare(target)
                   else f"statements not prepared beforehand on {dialect}: errors show in the first step")
        read = f"; {len(queries)} query parameter(s) read once for the whole run" if queries else ""
        tables = "" if found.tables else "; it builds no tables: running on the database as it is"
        return f"custom: {found.path}: {checked}{read}{tables}"

    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        found = self.need_spec()
        missing = [key for key, _, _ in found.queries(target.dialect) if key not in self.queried]
        if missing:
            raise TpsbenchError(f"custom: the query parameters {', '.join(missing)} were not read (prepare_run)")
        return CustomSession(ctx, user_id, users, conn, target, found, self.queried, self.table)

    def database_counts(self, conn: Any) -> dict[str, int]:
        """The file's counters (one number each), for the honesty check."""
        counts = {}
        cur = conn.cursor()
        try:
            with read_only(self.dialect, cur.execute, conn.rollback):
                for counter in self.need_spec().counters:
                    cur.execute(counter.sql.for_dialect(self.dialect))
                    row = cur.fetchone()
                    counts[counter.name] = int(row[0] or 0) if row else 0
        finally:
            cur.close()
        return counts

    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        """Each counter's change: its per_commit change times each transaction's commits."""
        return {c.name: sum(change * commits.get(txn, 0) for txn, change in c.per_commit.items())
                for c in self.need_spec().counters}


WORKLOAD = CustomWorkload
