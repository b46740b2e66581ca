"""One sysbench virtual user: the statements of its mode, drawn and sent like sysbench's thread.

Every transaction is the mode's name (a sysbench run has one script, so one transaction
type). :meth:`SysbenchSession.inputs` draws everything a transaction needs up front (table
numbers, ids, k values and strings), so that a retry after a deadlock sends the same
statements again; :meth:`SysbenchSession.execute` only sends them.

sysbench's summary splits queries into read/write/other. The session counts the same way,
statement by statement, from what the server answered (see driver.py), as sysbench counts
its queries: every statement the server executed, the ROLLBACK after a failed transaction
included. ``statement_counts`` holds the totals since the session opened; the engine
reports their growth per interval (worker.py), which is how a step's QPS splits exactly
as sysbench's does. ``SysbenchWorkload.statement_mix`` gives the nominal numbers per
transaction.

Think and keying times are 0: sysbench users never wait between events.
"""

from __future__ import annotations

import random
from typing import Any

from tpsbench.api.session import RunContext, Session
from tpsbench.targets.base import Target, error_codes
from tpsbench.workloads.sysbench import driver
from tpsbench.workloads.sysbench.common import SqlSet, sql_set
from tpsbench.workloads.sysbench.modes import (
    DEFAULT_TABLE_SIZE,
    SysbenchOptions,
    mode_plan,
    parse_options,
)
from tpsbench.workloads.sysbench.rand import SbRand

#: unique key violations: sysbench's pgsql driver ignores 23505 and restarts the event
DUPLICATE_SQLSTATES = frozenset({"23505"})
DUPLICATE_CODES = frozenset({1062, 2627, 2601})

Statement = tuple[str, tuple[int | str, ...]]


class SysbenchSession(Session):
    """A user of one sysbench mode on one connection (autocommit; BEGIN/COMMIT sent as statements)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target,
                 options: SysbenchOptions | None = None, fast: bool | None = None) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        opts = options if options is not None else parse_options(ctx.options)
        self.opts = opts
        self.plan = mode_plan(opts)
        self.mode = opts.mode
        self.tables = opts.tables or ctx.scale or 1
        self.table_size = opts.table_size or int(ctx.constants.get("table_size", DEFAULT_TABLE_SIZE))
        self.rand = SbRand(random.Random(f"sysbench/{ctx.seed}/{opts.mode}/{user_id}"), opts.rand)
        self.sql: SqlSet = sql_set(target.dialect, target.placeholder(), self.tables,
                                   opts.random_points, opts.number_of_ranges)
        self.fast = opts.client == "fast" if fast is None else fast
        # select_random_*.lua: each thread works on its own slice of k values
        self.slice_len = self.table_size / max(users, 1)
        self.slice_no = user_id % max(users, 1)
        #: oltp_insert ids where the table has no auto-increment (SQL Server): negative,
        #: so never an id of the prepared rows, and unique per user
        self.next_client_id = -1 - user_id
        #: statements executed, indexed by driver.READ / WRITE / OTHER
        self.totals = [0, 0, 0]
        self.runner: driver.StatementRunner | None = None
        self.rebind(conn)

    @property
    def statement_counts(self) -> dict[str, int]:
        """Statements executed since the session opened, by sysbench's kinds (read, write, other)."""
        return dict(zip(driver.KINDS, self.totals))

    # -- the Session interface --------------------------------------------------------
    def rebind(self, conn: Any) -> None:
        """Autocommit on the (new) connection and a fresh runner: prepared statements are per connection."""
        if self.runner is not None:
            self.runner.close()
        self.conn = conn
        driver.set_autocommit(conn)
        self.runner = driver.runner_for(conn, self.fast)

    def next_transaction(self) -> str:
        return self.mode

    def inputs(self, name: str) -> list[Statement]:
        """Every statement of one transaction with its parameters, drawn as sysbench draws them."""
        rnd = self.rand
        table = rnd.uniform
        default = rnd.default
        size, tables, by_group = self.table_size, self.tables, self.sql.by_group
        out: list[Statement] = []
        for group, count in self.plan.groups:
            if group == "point_selects" or group == "index_updates" or group == "deletes":
                texts = by_group[group]
                sql = texts[table(1, tables)]
                for _ in range(count):
                    out.append((sql, (default(1, size),)))
            elif group in ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"):
                sql = by_group[group][table(1, tables)]
                span = self.opts.range_size - 1
                for _ in range(count):
                    low = default(1, size)
                    out.append((sql, (low, low + span)))
            elif group == "non_index_updates":
                sql = by_group[group][table(1, tables)]
                for _ in range(count):
                    out.append((sql, (rnd.digit_groups(10), default(1, size))))
            elif group == "delete_inserts":
                t = table(1, tables)
                delete, insert = by_group["deletes"][t], by_group["inserts"][t]
                for _ in range(count):
                    ident, k = default(1, size), default(1, size)
                    out.append((delete, (ident,)))
                    out.append((insert, (ident, k, rnd.digit_groups(10), rnd.digit_groups(5))))
            elif group == "insert_auto":
                sql = by_group[group][table(1, tables)]
                values: tuple[int | str, ...] = (default(1, size), rnd.digit_groups(10), rnd.digit_groups(5))
                if self.sql.client_ids:
                    values = (self.next_client_id, *values)
                    self.next_client_id -= self.users
                out.append((sql, values))
            elif group == "random_points":
                low, high = self._slice()
                out.append((self.sql.random_points, tuple(default(low, high) for _ in range(self.opts.random_points))))
            elif group == "random_ranges":
                low, high = self._slice()
                params: list[int] = []
                for _ in range(self.opts.number_of_ranges):
                    value = default(low, high)
                    params += (value, value + self.opts.delta)
                out.append((self.sql.random_ranges, tuple(params)))
        return out

    def execute(self, name: str, inputs: object) -> bool:
        """Send the transaction; False when a duplicate key ended it (sysbench ignores those).

        A DELETE that raced another user's DELETE of the same id finds no row, and the
        INSERT that follows it then collides with the other user's INSERT: sysbench's
        pgsql driver counts that as an ignored error and starts a new event, so this
        rolls back and reports an expected rollback rather than an error.
        """
        runner = self.runner
        assert runner is not None
        run, totals = runner.run, self.totals
        transactional = self.plan.transactional
        try:
            if transactional:
                totals[runner.run_plain(self.sql.begin)] += 1
            for sql, params in inputs:  # type: ignore[attr-defined]
                totals[run(sql, params)] += 1
            if transactional:
                totals[runner.run_plain(self.sql.commit)] += 1
        except Exception as exc:
            self._rollback(transactional)
            if self._is_duplicate(exc):
                return False
            raise
        return True

    # -- helpers ------------------------------------------------------------------------
    def _slice(self) -> tuple[int, int]:
        """This user's [low, high] of k values (sysbench truncates its float bounds to integers)."""
        low = self.slice_len * self.slice_no
        return int(low), int(low + self.slice_len)

    def _rollback(self, transactional: bool) -> None:
        if not transactional or self.runner is None:
            return
        try:
            self.totals[self.runner.run_plain(self.sql.rollback)] += 1
        except Exception:  # noqa: BLE001, S110 - the connection may be gone; the engine reconnects
            pass

    def _is_duplicate(self, exc: BaseException) -> bool:
        state, code = error_codes(exc)
        if state in DUPLICATE_SQLSTATES or code in DUPLICATE_CODES:
            return True
        return type(exc).__name__ == "IntegrityError" and "UNIQUE" in str(exc)
