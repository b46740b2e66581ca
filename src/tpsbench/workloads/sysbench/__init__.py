"""sysbench-compatible OLTP workload: tables sbtest1..N of table_size rows, sysbench 1.0's scripts.

The scale is the number of tables; the rows per table are a build option (``table_size``,
sysbench's ``--table-size``, default 10,000), kept in tpsbench_meta as a constant so
that runs draw ids in the right range. Data follow oltp_common.lua's prepare: ids
1..table_size, k drawn by ``--rand-type`` over [1, table_size] (sysbench 1.0's default is
"special"), c = 10 groups of 11 random digits joined by '-', pad = 5 such groups; k's
secondary index is built after the data. Each table is one load task, deterministic in
(seed, table number), so tables load in parallel and identically for any worker count.

A run executes one sysbench script (the run option ``mode``, default oltp_read_write); see
modes.py for the options and session.py for the virtual user. Tables that sysbench itself
prepared are recognised and run as they are (:meth:`SysbenchWorkload.verify_schema`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import STATE_COMPLETE, read_meta, require_complete
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.workload import Check, LoadParams, LoadTask, SizeEstimate, Workload
from tpsbench.workloads.sysbench.checks import (
    SBTEST,
    checks_for,
    detect_sysbench_tables,
)
from tpsbench.workloads.sysbench.common import table_ddl, table_names
from tpsbench.workloads.sysbench.modes import (
    BUILD_OPTIONS,
    DEFAULT_TABLE_SIZE,
    RUN_OPTIONS,
    SysbenchOptions,
    parse_options,
    statement_mix,
)
from tpsbench.workloads.sysbench.rand import (
    RAND_TYPES,
    RandParams,
    digit_groups_many,
    draw_many,
)
from tpsbench.workloads.sysbench.session import SysbenchSession
from tpsbench.workloads.sysbench.transactions import TABLE

#: rows per generated batch: a few MB of text, one commit each
CHUNK_ROWS = 50_000


class SysbenchWorkload(Workload):
    """Run one sysbench 1.0 OLTP script (--mode) on tables sbtest1..N.

    The tables come from `tpsbench build sysbench --tables N` or from `sysbench
    oltp_read_write prepare` itself; the options are sysbench's, with its defaults.
    """

    # An instance carries its layout (tables x table size, set by configure() or
    # verify_schema()) and its run options, and travels to the engine's worker processes
    # by pickling.

    name = "sysbench"
    scale_unit = "tables"
    run_options = RUN_OPTIONS
    build_options = BUILD_OPTIONS

    def __init__(self) -> None:
        self.table_count = 1
        self.table_size = DEFAULT_TABLE_SIZE
        self.options = SysbenchOptions()
        self.raw_options: dict[str, str] = {}
        #: every mode until configure() picks one: a run has a single transaction type
        self.transaction_names: tuple[str, ...] = TABLE.names

    # -- configuration ------------------------------------------------------------------
    def configure(self, options: Mapping[str, Any]) -> None:
        """Take sysbench options (build: ``table_size``, ``rand_type``; run: ``mode`` and
        the script options), validating them all; a one-line error names a bad one."""
        self.raw_options = {str(k): str(v) for k, v in options.items()}
        self.options = parse_options(self.raw_options)
        self.check_waits(self.raw_options)
        if self.options.table_size:
            self.table_size = self.options.table_size
        if self.options.tables:
            self.table_count = self.options.tables
        self.transaction_names = (self.options.mode,)

    @property
    def tables(self) -> tuple[str, ...]:  # type: ignore[override]  # the layout, per instance, where Workload has a ClassVar
        """sbtest1..N of the configured (or verified) layout."""
        return table_names(self.table_count)

    def table_names(self, scale: int) -> tuple[str, ...]:
        """The tables a build at ``scale`` creates."""
        return table_names(scale)

    def owned_tables(self, present: set[str]) -> list[str]:
        """Every sbtestN present (what sysbench's cleanup would drop), highest number first."""
        return sorted((t for t in present if SBTEST.match(t)), key=lambda t: -int(t[6:]))

    def expand_ddl(self, statements: list[str], scale: int) -> list[str]:
        """The schema file's one-table template repeated for sbtest1..sbtest``scale``."""
        return table_ddl(statements, scale)

    def statement_mix(self, name: str | None = None) -> dict[str, int]:
        """Statements per transaction of the configured mode, split read/write/other like
        sysbench's summary (nominal: every UPDATE/DELETE finds its row)."""
        opts = self.options if name in (None, self.options.mode) else parse_options({**self.raw_options, "mode": name})
        return statement_mix(opts)

    # -- build --------------------------------------------------------------------------
    def constants(self, seed: int) -> dict[str, int]:
        return {"table_size": self.table_size, "rand_type": RAND_TYPES.index(self.options.rand.rand_type)}

    def tasks(self, scale: int) -> list[LoadTask]:
        return [LoadTask("table", (n,)) for n in range(1, scale + 1)]

    def generate(self, task: LoadTask, params: LoadParams) -> Iterator[Batch]:
        """Rows of one table, ``CHUNK_ROWS`` at a time, from a stream of (seed, table number)."""
        (n,) = task.key
        if task.kind != "table" or not 1 <= n <= params.scale:
            raise ValueError(f"unknown sysbench load task {task!r}")
        size = int(params.constants.get("table_size", DEFAULT_TABLE_SIZE))
        rand = RandParams(RAND_TYPES[int(params.constants.get("rand_type", RAND_TYPES.index("special")))])
        rng = np.random.default_rng([params.seed, n])
        for start in range(1, size + 1, CHUNK_ROWS):
            rows = min(CHUNK_ROWS, size - start + 1)
            yield Batch(f"sbtest{n}", {
                "id": np.arange(start, start + rows, dtype=np.int64),
                "k": draw_many(rng, rand, 1, size, rows),
                "c": digit_groups_many(rng, 10, rows),
                "pad": digit_groups_many(rng, 5, rows),
            })

    def expected_rows(self, scale: int, seed: int) -> dict[str, int]:
        return {name: self.table_size for name in table_names(scale)}

    def checks(self) -> list[Check]:
        """Conditions for the configured or verified layout (call verify_schema first)."""
        return checks_for(self.table_count, self.table_size)

    def describe_scale(self, scale: int) -> str:
        return f"{scale} tables x {self.table_size:,} rows"

    def estimate_size(self, scale: int, dialect: str) -> SizeEstimate | None:
        """``scale`` tables of the configured table size, at the bytes per row measured on
        the engine (scale_factors.toml)."""
        entry = self.measured_size(dialect)
        if entry is None:
            return None
        return SizeEstimate(scale, dialect, scale * self.table_size * entry["per_row_bytes"] / 1e6,
                            entry.get("measured", ""))

    # -- run ----------------------------------------------------------------------------
    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        options = self.options if self.raw_options == {str(k): str(v) for k, v in ctx.options.items()} else None
        return SysbenchSession(ctx, user_id, users, conn, target, options)

    def verify_schema(self, target: Target) -> dict[str, str]:
        """The layout of a tpsbench build (from tpsbench_meta) or of tables sysbench prepared.

        For the latter the result has ``source = "sysbench"`` and a one-line ``note`` saying
        so, with the detected tables and table size, in tpsbench_meta's shape (``scale``,
        ``const_table_size``) so that a run context is built the same way for both.
        """
        meta = read_meta(target, self.name)
        if meta:
            tables = int(meta.get("scale", "1"))
            meta = require_complete(target, self.name, table_names(tables))
            size = int(meta.get("const_table_size", DEFAULT_TABLE_SIZE))
            result = dict(meta, source="tpsbench")
        else:
            tables, size = detect_sysbench_tables(target)
            result = {"state": STATE_COMPLETE, "scale": str(tables), "const_table_size": str(size),
                      "source": "sysbench",
                      "note": f"using {tables} sbtest table(s) of {size:,} rows prepared by sysbench "
                              f"(no tpsbench metadata) at {target.describe()}"}
        if self.options.tables and self.options.tables > tables:
            raise TpsbenchError(f"--tables {self.options.tables} but {target.describe()} has {tables} sbtest tables")
        # the options name a subset of the tables (and the ids to draw) where they say so
        self.table_count, self.table_size = self.options.tables or tables, self.options.table_size or size
        return result

    def database_counts(self, conn: Any) -> dict[str, int]:
        """Rows in all sbtest tables: oltp_insert adds one per commit, the others none.

        None for oltp_delete (when configured for it): a DELETE of an id already deleted
        commits too, so its commits do not fix the change; the check would be a false alarm.
        """
        if self.options.mode == "oltp_delete":
            return {}
        cur = conn.cursor()
        try:
            total = 0
            for name in self.tables:
                cur.execute(f"SELECT COUNT(*) FROM {name}")
                total += int(cur.fetchone()[0])
        finally:
            cur.close()
            conn.rollback()
        return {"rows": total}

    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        """oltp_insert adds a row per commit; every other mode but oltp_delete leaves the count."""
        if self.options.mode == "oltp_delete":
            return {}
        return {"rows": commits.get("oltp_insert", 0)}


WORKLOAD = SysbenchWorkload

