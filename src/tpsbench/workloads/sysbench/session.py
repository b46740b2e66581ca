"""One sysbench virtual user: the statements of its mode, drawn and sent like sysbench's thread.

Every transaction is the mode's name (a sysbench run has one script, so one transaction
type). :meth:`SysbenchSession.inputs` draws everything a transaction needs up front (table
numbers, ids, k values and strings), so that a retry after a deadlock sends the same
statements again; :meth:`SysbenchSession.transaction` only sends them.

sysbench's summary splits queries into read/write/other. The session counts the same way,
statement by statement, from what the server answered (the target's counting cursor,
tpsbench.core.cursor), as sysbench counts its queries: every statement the server executed,
the ROLLBACK after a failed transaction included. ``statement_counts`` holds the totals
since the session opened; the engine reports their growth per interval (worker.py), which
is how a step's QPS splits exactly as sysbench's does. ``SysbenchWorkload.statement_mix`` gives the nominal numbers per
transaction.

Think and keying times are 0: sysbench users never wait between events.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from typing import Any

from tpsbench.core.cursor import KINDS, CountingCursor, Statement
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target, error_codes
from tpsbench.workloads.sysbench.common import SqlSet, sql_set
from tpsbench.workloads.sysbench.modes import (
    DEFAULT_TABLE_SIZE,
    SysbenchOptions,
    mode_plan,
    parse_options,
    statement_mix,
)
from tpsbench.workloads.sysbench.rand import SbRand

#: unique key violations: sysbench's pgsql driver ignores 23505 and restarts the event
DUPLICATE_SQLSTATES = frozenset({"23505"})
DUPLICATE_CODES = frozenset({1062, 2627, 2601})

#: appends one statement group's statements: (out, the group's SQL per table, count)
Drawer = Callable[[list[Statement], tuple[str, ...], int], None]


class SysbenchSession(Session):
    """A user of one sysbench mode on one connection (autocommit; BEGIN/COMMIT sent as statements)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target,
                 options: SysbenchOptions | None = None) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        opts = options if options is not None else parse_options(ctx.options)
        self.opts = opts
        self.plan = mode_plan(opts)
        self.mode = opts.mode
        self.tables = opts.tables or ctx.scale or 1
        self.table_size = opts.table_size or int(ctx.constants.get("table_size", DEFAULT_TABLE_SIZE))
        self.rand = SbRand(random.Random(f"sysbench/{ctx.seed}/{opts.mode}/{user_id}"), opts.rand)
        self.sql: SqlSet = sql_set(target.sql, target.placeholder(), self.tables,
                                   opts.random_points, opts.number_of_ranges)
        #: the statement path (--client): one of the target's, or "dbapi"
        self.client = target.client_path(opts.client)
        # select_random_*.lua: each thread works on its own slice of k values
        self.slice_len = self.table_size / max(users, 1)
        self.slice_no = user_id % max(users, 1)
        #: oltp_insert ids where the table has no auto-increment (SQL Server): negative,
        #: so never an id of the prepared rows, and unique per user
        self.next_client_id = -1 - user_id
        #: statements executed, indexed by tpsbench.core.cursor.READ / WRITE / OTHER
        self.totals = [0, 0, 0]
        self.runner: CountingCursor | None = None
        #: BEGIN, COMMIT and ROLLBACK of the dialect, as statements without parameters
        self.begin: Statement = (self.sql.begin, ())
        self.commit: Statement = (self.sql.commit, ())
        self.rollback: Statement = (self.sql.rollback, ())
        self.steps = self._steps()
        #: the modes of one statement per transaction (point select, the single updates,
        #: insert, delete, the random selects): run without a generator (Session.one_statement)
        self.one_statement = sum(statement_mix(opts).values()) == 1
        self.rebind(conn)

    @property
    def statement_counts(self) -> dict[str, int]:  # type: ignore[override]  # a property where Session has a plain attribute
        """Statements executed since the session opened, by sysbench's kinds (read, write, other)."""
        return dict(zip(KINDS, self.totals))

    # -- the Session interface --------------------------------------------------------
    def rebind(self, conn: Any) -> None:
        """Autocommit on the (new) connection and a fresh counting cursor: prepared
        statements are per connection."""
        if self.runner is not None:
            self.runner.close()
        self.conn = conn
        self.target.set_autocommit(conn)  # BEGIN and COMMIT are statements of their own, as sysbench sends them
        self.runner = self.transaction_cursor = self.target.counting_cursor(conn, self.client)  # type: ignore[assignment]  # a CountingCursor is the Cursor Session declares

    def next_transaction(self) -> str:
        return self.mode

    def inputs(self, name: str) -> list[Statement]:
        """Every statement of one transaction with its parameters, drawn as sysbench draws
        them, BEGIN and COMMIT included where the mode has them."""
        out: list[Statement] = [self.begin] if self.plan.transactional else []
        for draw, texts, count in self.steps:
            draw(out, texts, count)
        if self.plan.transactional:
            out.append(self.commit)
        return out

    # -- one drawer per statement group: (out, the group's SQL per table, count) ---------
    # Looked up once per session (see _steps) rather than by comparing group names per
    # transaction; each appends its statements in sysbench's order, drawing in its order.
    def _by_id(self, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
        sql, default, size = texts[self.rand.uniform(1, self.tables)], self.rand.default, self.table_size
        for _ in range(count):
            out.append((sql, (default(1, size),)))

    def _ranges(self, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
        sql, default, size = texts[self.rand.uniform(1, self.tables)], self.rand.default, self.table_size
        span = self.opts.range_size - 1
        for _ in range(count):
            low = default(1, size)
            out.append((sql, (low, low + span)))

    def _non_index_updates(self, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
        rnd = self.rand
        sql = texts[rnd.uniform(1, self.tables)]
        for _ in range(count):
            out.append((sql, (rnd.digit_groups(10), rnd.default(1, self.table_size))))

    def _delete_inserts(self, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
        rnd, size = self.rand, self.table_size
        t = rnd.uniform(1, self.tables)
        delete, insert = self.sql.by_group["deletes"][t], self.sql.by_group["inserts"][t]
        for _ in range(count):
            ident, k = rnd.default(1, size), rnd.default(1, size)
            out.append((delete, (ident,)))
            out.append((insert, (ident, k, rnd.digit_groups(10), rnd.digit_groups(5))))

    def _insert_auto(self, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
        rnd = self.rand
        sql = texts[rnd.uniform(1, self.tables)]
        values: tuple[int | str, ...] = (rnd.default(1, self.table_size), rnd.digit_groups(10), rnd.digit_groups(5))
        if self.sql.client_ids:
            values = (self.next_client_id, *values)
            self.next_client_id -= self.users
        out.append((sql, values))

    def _random_points(self, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
        low, high = self._slice()
        default = self.rand.default
        out.append((self.sql.random_points, tuple(default(low, high) for _ in range(self.opts.random_points))))

    def _random_ranges(self, out: list[Statement], texts: tuple[str, ...], count: int) -> None:
        low, high = self._slice()
        params: list[int] = []
        for _ in range(self.opts.number_of_ranges):
            value = self.rand.default(low, high)
            params += (value, value + self.opts.delta)
        out.append((self.sql.random_ranges, tuple(params)))

    def _steps(self) -> tuple[tuple[Drawer, tuple[str, ...], int], ...]:
        """The plan's groups as (drawer, SQL per table, count), in the plan's order."""
        drawers = {"point_selects": self._by_id, "index_updates": self._by_id, "deletes": self._by_id,
                   "simple_ranges": self._ranges, "sum_ranges": self._ranges, "order_ranges": self._ranges,
                   "distinct_ranges": self._ranges, "non_index_updates": self._non_index_updates,
                   "delete_inserts": self._delete_inserts, "insert_auto": self._insert_auto,
                   "random_points": self._random_points, "random_ranges": self._random_ranges}
        return tuple((drawers[group], self.sql.by_group.get(group, ()), count) for group, count in self.plan.groups)

    def transaction(self, name: str, inputs: object) -> Generator[Statement, None, bool]:
        """The transaction's statements, each counted by its kind once it has run; False
        when a duplicate key ended it (sysbench ignores those).

        A DELETE that raced another user's DELETE of the same id finds no row, and the
        INSERT that follows it then collides with the other user's INSERT: sysbench's
        pgsql driver counts that as an ignored error and starts a new event, so this
        rolls back and reports an expected rollback rather than an error.
        """
        runner, totals = self.runner, self.totals
        assert runner is not None
        try:
            for statement in inputs:  # type: ignore[attr-defined]  # inputs() gave the statements, a tuple
                yield statement
                totals[runner.kind] += 1
        except Exception as exc:
            if self.plan.transactional:
                try:
                    yield self.rollback
                    totals[runner.kind] += 1
                except Exception:  # noqa: BLE001 - the connection may be gone; the engine reconnects
                    pass
            if self._is_duplicate(exc):
                return False
            raise
        return True

    def call(self, name: str, inputs: object) -> Statement:
        return inputs[0]  # type: ignore[index]  # inputs() gave the statements, a tuple

    def answered(self, name: str, inputs: object, error: Exception | None) -> bool:
        """The statement counted by its kind once it has run; False for a duplicate key,
        as :meth:`transaction` does."""
        if error is None:
            self.totals[self.runner.kind] += 1  # type: ignore[union-attr]  # opened: rebind() set the runner
            return True
        if self._is_duplicate(error):
            return False
        raise error

    # -- helpers ------------------------------------------------------------------------
    def _slice(self) -> tuple[int, int]:
        """This user's [low, high] of k values (sysbench truncates its float bounds to integers)."""
        low = self.slice_len * self.slice_no
        return int(low), int(low + self.slice_len)

    def _is_duplicate(self, exc: BaseException) -> bool:
        state, code = error_codes(exc)
        if state in DUPLICATE_SQLSTATES or code in DUPLICATE_CODES:
            return True
        return type(exc).__name__ == "IntegrityError" and "UNIQUE" in str(exc)
