"""One TPC-C virtual user: :class:`TpccSession`, the terminal's own state.

The transactions, the deck, dispatch by name, the choice between a procedure call and
the statements, commit and rollback and the rules' waits are the generic session's
(tpsbench.core.mix_session.MixSession) over TPC-C's table (table.py); this holds what is
a terminal's own. A user is a TPC-C terminal: it has a home warehouse, ``(user_id % scale) + 1``, so that
users spread evenly over the warehouses, and a fixed district for Stock-Level,
``(user_id // scale) % 10 + 1``, so that the first ten users of each warehouse cover its
ten districts (§2.8.1.1 fixes a terminal's Stock-Level district). With the run option
``warehouses=all`` (HammerDB's "use all warehouses") every transaction instead picks a
warehouse uniformly, which spreads a few users over a large database; Stock-Level
keeps the user's fixed district.

The C-run constants are derived from the run seed and the build's C-load (stored in
``tpsbench_meta`` and passed in ``RunContext.constants``), so every user of every worker
uses the same ones and C_LAST's obeys the §2.1.6.1 gap.

With the run option ``procedures=on`` (``auto``, the default, means on wherever the
schema file has them: PostgreSQL and MySQL/MariaDB) New-Order, Payment and Delivery are
each one call of a stored procedure and the connection is in autocommit mode, so every
transaction is one round trip (procedures.py; Order-Status and Stock-Level are one
statement each, sent as they are); ``off`` runs the statement path below.

Statements go through the target's fast cursor where it has one (run option
``client=fast``, the default): on PostgreSQL libpq's prepared statements, each prepared
once per connection and kept for the connection's life, BEGIN sent together with a
transaction's first statement; on MariaDB/MySQL with mysqlclient its connection's
server-side prepared statements (``client=prepared``, targets/mysql/prepared.py), or its
``query`` of the statement as text (``client=text``). Same statements, same transactions; about half the client CPU per
transaction (bench/results/engine_tpcc.txt). ``client=dbapi`` uses the driver's DB-API
cursor instead: on psycopg the connection's ``prepare_threshold`` is set to 0, which
makes psycopg prepare each statement on its first execution (unless the target made the
connection to prepare nothing: through PgBouncer's transaction pooling), and Python ints are sent
as int8 so a statement is not prepared again whenever a parameter's value outgrows int2
or int4 (psycopg drops all its prepared statements at every rollback, though, so each
expected New-Order rollback costs a round of re-preparing). PyMySQL and sqlite3 always
use their cursor (sqlite3 caches its compiled statements by text already).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

from tpsbench.core.cursor import CLIENT_CHOICES, CLIENT_HELP
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.mix_session import MixSession
from tpsbench.core.procedures import PROCEDURE_MODES, wants_procedures
from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.core.transactions import TransactionTable, permuted
from tpsbench.core.workload import Option
from tpsbench.workloads.tpcc import procedures
from tpsbench.workloads.tpcc.draws import Draws, pool_size, run_constants
from tpsbench.workloads.tpcc.loader import DISTRICTS_PER_WAREHOUSE
from tpsbench.workloads.tpcc.statements import Statements, statements
from tpsbench.workloads.tpcc.table import TABLE

#: psycopg's prepared statements per connection: room for every statement variant in use
PREPARED_MAX = 256
#: values of the run options this session reads
WAREHOUSE_MODES = ("home", "all")
DELIVERY_MODES = ("inline", "deferred")
#: the run options a TPC-C session reads, for the workload to declare (``tpsbench run tpcc --help``)
RUN_OPTIONS = (
    Option("warehouses", "home", "'home': each user keeps one warehouse; 'all': every transaction picks one"
           " at random (HammerDB's all-warehouses mode).", WAREHOUSE_MODES),
    Option("client", "fast", CLIENT_HELP, CLIENT_CHOICES),
    Option("procedures", "auto", "'on': New-Order, Payment and Delivery are each one call of a stored"
           " procedure (installed at the start of the run), as HammerDB runs TPC-C: one round trip per"
           " transaction, so the driver takes little CPU from the database; 'off': the driver sends each"
           " transaction's statements itself; 'auto': 'on' where tpsbench has procedures for the database"
           " (PostgreSQL, MySQL, MariaDB).", PROCEDURE_MODES),
    Option("mix", "", "Each transaction's weight, e.g. new_order=50,payment=40,order_status=4,delivery=3,"
           "stock_level=3 (normalised; a transaction left out does not run). Default: the rules' mix, "
           "45/43/4/4/4."),
    Option("delivery", "inline", "'inline': the terminal runs its Delivery itself and waits for it; 'deferred':"
           " it queues the request and goes on, and executors beside the users run it (clause 2.7.2's"
           " queued mode), with the time in the queue and the execution reported apart (delivery_queue,"
           " delivery_execution).", DELIVERY_MODES),
)


def uses_procedures(options: dict[str, str], s: Statements) -> bool:
    """Whether a run with ``options`` calls stored procedures on the dialect of ``s``."""
    return wants_procedures("TPC-C", options, procedures.available(s), s.dialect.name)


class TpccSession(MixSession):
    """A TPC-C terminal on one DB-API connection (see the module docstring); ``table``:
    another transaction table than TPC-C's own (one extended with a transaction)."""

    table = TABLE

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target,
                 table: TransactionTable[Any] | None = None) -> None:
        super().__init__(ctx, user_id, users, conn, target, table)
        if ctx.scale < 1:
            raise TpsbenchError(f"TPC-C needs at least one warehouse, the schema says {ctx.scale}")
        mode = ctx.options.get("warehouses", "home")
        if mode not in WAREHOUSE_MODES:
            raise TpsbenchError(f"TPC-C option warehouses={mode!r}: use one of {', '.join(WAREHOUSE_MODES)}")
        self.all_warehouses = mode == "all"
        #: the statement path (--client): one of the target's, or "dbapi"
        self.client = target.client_path(ctx.options.get("client", "fast"), self.waits)
        self.home_w = user_id % ctx.scale + 1
        self.home_d = (user_id // ctx.scale) % DISTRICTS_PER_WAREHOUSE + 1
        load = {name.removeprefix("const_"): int(value) for name, value in ctx.constants.items()}
        try:
            self.c_run = run_constants(ctx.seed, load)
        except ValueError as exc:
            raise TpsbenchError(f"TPC-C: {exc}; rebuild the database") from exc
        self.draw = Draws(ctx.seed, user_id, ctx.scale, self.c_run, pool_size(self.waits))
        #: the warehouse of a transaction: the home one (a C call), or one drawn per transaction
        self.pick_warehouse = self.draw.warehouse if self.all_warehouses else repeat(self.home_w).__next__
        #: think times from their own stream, so that drawing them takes nothing from the inputs'
        self.spec_rng = self.draw.wait_rng
        self.deal(permuted(self.draw.gen), self.table.cards(self.table.shares(ctx.options.get("mix", ""))))
        self.stmts = statements(target.sql, target.placeholder())
        #: one stored-procedure call per transaction, in autocommit (procedures.py)
        self.procedures = uses_procedures(ctx.options, self.stmts)
        self.use_calls(self.procedures)
        #: whether a New-Order call's answer must be looked at for its rollback
        self.answers_rollback = procedures.answers_rollback(self.stmts)
        self.rebind(conn)

    def rebind(self, conn: Any) -> None:
        """Take ``conn`` and the target's fast cursor on it, else set it up for prepared
        statements (psycopg's cursor) or take a plain cursor."""
        self.conn = conn
        # first: it reads what a kept connection holds
        cur = self.target.fast_cursor(conn, self.client) if self.client != "dbapi" else None
        if self.procedures:
            self.target.set_autocommit(conn)  # each call is its own transaction
        if cur is not None:
            self.use_cursor(cur, cur.commit, cur.rollback)
        else:
            self.use_cursor(self._dbapi_cursor(conn))

    @staticmethod
    def _dbapi_cursor(conn: Any) -> Any:
        if type(conn).__module__.startswith("psycopg"):
            from psycopg.types.numeric import Int8Dumper

            if conn.prepare_threshold is not None:  # None: the target's connections prepare nothing (PgBouncer)
                conn.prepare_threshold = 0
                conn.prepared_max = max(conn.prepared_max or 0, PREPARED_MAX)
            conn.adapters.register_dumper(int, Int8Dumper)
        return conn.cursor()
