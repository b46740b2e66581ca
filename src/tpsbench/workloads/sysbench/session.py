"""One sysbench virtual user: the per-user state its mode's transaction draws and sends with.

Every transaction is the mode's name (a sysbench run has one script, so one transaction
type): the session deals it from the core deck (tpsbench.core.transactions) and runs it
by its table entry, transactions.py, whose inputs draw everything up front (table
numbers, ids, k values and strings) so that a retry after a deadlock sends the same
statements again. What is this user's alone is here: its random stream, its slice of k
values, its ids for oltp_insert where the table has no auto-increment, its counting
cursor and its statement counts.

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
from collections.abc import Callable
from typing import Any

from tpsbench.core.cursor import KINDS, CountingCursor, Statement
from tpsbench.core.mix_session import MixSession
from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.workloads.sysbench.common import SqlSet, sql_set
from tpsbench.workloads.sysbench.modes import (
    DEFAULT_TABLE_SIZE,
    SysbenchOptions,
    mode_plan,
    parse_options,
    statement_mix,
)
from tpsbench.workloads.sysbench.rand import SbRand
from tpsbench.workloads.sysbench.transactions import DRAWERS, MODE_TABLES, Drawer

#: cards dealt per deal of a one-card deck: a run's one mode, dealt without a call per transaction
ONE_MODE_RUN = 4096


def one_mode(cards: list[str]) -> Callable[[], list[str]]:
    """The deck's shuffle for a run of one mode (tpsbench.core.transactions.Shuffle): there
    is nothing to shuffle, so each deal is a long run of the one card."""
    run = cards * ONE_MODE_RUN
    return lambda: run


class SysbenchSession(MixSession):
    """A user of one sysbench mode on one connection (autocommit; BEGIN/COMMIT sent as statements)."""

    # Slots, because the generic session's own attributes fill an instance dict past the
    # keys CPython 3.11 shares between instances (it becomes a plain dict): the ones a
    # transaction reads here stay a fixed offset away instead of a dict lookup each
    __slots__ = ("opts", "plan", "mode", "tables", "table_size", "rand", "sql", "client", "slice_len", "slice_no",
                 "next_client_id", "totals", "runner", "begin", "commit", "rollback", "steps")

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target,
                 options: SysbenchOptions | None = None) -> None:
        opts = options if options is not None else parse_options(ctx.options)
        super().__init__(ctx, user_id, users, conn, target, MODE_TABLES[opts.mode])
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
        #: the plan's groups as (drawer, SQL per table, count), in the plan's order
        self.steps: tuple[tuple[Drawer, tuple[str, ...], int], ...] = tuple(
            (DRAWERS[group], self.sql.by_group.get(group, ()), count) for group, count in self.plan.groups)
        self.deal(one_mode, {self.mode: 1})
        #: the modes of one statement per transaction (point select, the single updates,
        #: insert, delete, the random selects): sent as that statement's call, without a
        #: generator (Session.one_statement)
        self.use_calls(sum(statement_mix(opts).values()) == 1)
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
        self.runner = self.target.counting_cursor(conn, self.client)
        self.use_cursor(self.runner)

    # -- per-user state -----------------------------------------------------------------
    def k_slice(self) -> tuple[int, int]:
        """This user's [low, high] of k values (sysbench truncates its float bounds to integers)."""
        low = self.slice_len * self.slice_no
        return int(low), int(low + self.slice_len)
