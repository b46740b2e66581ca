"""One TPC-C virtual user: :class:`TpccSession`, the engine's view of the workload.

A user is a TPC-C terminal: it has a home warehouse, ``(user_id % scale) + 1``, so that
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
transaction is one round trip (procedures.py); ``off`` runs the statement path below.

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

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tpsbench.core.cursor import CLIENT_CHOICES, CLIENT_HELP, Statement
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import parse_mix
from tpsbench.core.procedures import PROCEDURE_MODES, wants_procedures
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.workload import Option
from tpsbench.workloads.tpcc import delivery, new_order, order_status, payment, procedures, stock_level
from tpsbench.workloads.tpcc.loader import DISTRICTS_PER_WAREHOUSE
from tpsbench.workloads.tpcc.mix import TRANSACTIONS, Deck, Draws, keying_time, run_constants, think_time
from tpsbench.workloads.tpcc.sql import Statements, statements

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

_INPUTS = {
    "new_order": new_order.inputs,
    "payment": payment.inputs,
    "order_status": order_status.inputs,
    "delivery": delivery.inputs,
}
_EXECUTE: dict[str, Callable[..., Any]] = {
    "new_order": new_order.execute,
    "payment": payment.execute,
    "order_status": order_status.execute,
    "delivery": delivery.execute,
    "stock_level": stock_level.execute,
}


def uses_procedures(options: dict[str, str], s: Statements) -> bool:
    """Whether a run with ``options`` calls stored procedures on the dialect of ``s``."""
    return wants_procedures("TPC-C", options, procedures.available(s), s.dialect.name)


def mix_shares(options: Mapping[str, str]) -> dict[str, float] | None:
    """The mix --mix asks for (None: the rules' mix), or a one-line error."""
    text = options.get("mix", "")
    return parse_mix(text, TRANSACTIONS) if text else None


class TpccSession(Session):
    """A TPC-C terminal on one DB-API connection (see the module docstring)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        if ctx.scale < 1:
            raise TpsbenchError(f"TPC-C needs at least one warehouse, the schema says {ctx.scale}")
        mode = ctx.options.get("warehouses", "home")
        if mode not in WAREHOUSE_MODES:
            raise TpsbenchError(f"TPC-C option warehouses={mode!r}: use one of {', '.join(WAREHOUSE_MODES)}")
        self.all_warehouses = mode == "all"
        #: the statement path (--client): one of the target's, or "dbapi"
        self.client = target.client_path(ctx.options.get("client", "fast"))
        #: TPC-C's own keying and think times (--think spec), else the engine's draws
        self.spec_keying, self.spec_think = self.keying_delay.kind == "spec", self.think_delay.kind == "spec"
        self.home_w = user_id % ctx.scale + 1
        self.home_d = (user_id // ctx.scale) % DISTRICTS_PER_WAREHOUSE + 1
        load = {name.removeprefix("const_"): int(value) for name, value in ctx.constants.items()}
        try:
            self.c_run = run_constants(ctx.seed, load)
        except ValueError as exc:
            raise TpsbenchError(f"TPC-C: {exc}; rebuild the database") from exc
        self.draw = Draws(ctx.seed, user_id, ctx.scale, self.c_run)
        self.deck = Deck(self.draw.gen, mix_shares(ctx.options))
        self.stmts = statements(target.sql, target.placeholder())
        #: one stored-procedure call per transaction, in autocommit (procedures.py)
        self.procedures = self.one_statement = uses_procedures(ctx.options, self.stmts)
        #: whether a New-Order call's answer must be looked at for its rollback
        self.answers_rollback = procedures.answers_rollback(self.stmts)
        #: the last committed transaction's output (last_output), and a call's answer
        #: still to decode: (its answer function, its rows, its inputs)
        self._output: object = None
        self._answer: tuple[Callable[[Sequence[tuple], Any], Any], Sequence[tuple], object] | None = None
        self.rebind(conn)

    def next_transaction(self) -> str:
        return self.deck.draw()

    def inputs(self, name: str) -> object:
        w_id = self.draw.warehouse() if self.all_warehouses else self.home_w
        if name == "stock_level":
            return stock_level.inputs(self.draw, w_id, self.home_d)
        return _INPUTS[name](self.draw, w_id)

    def execute(self, name: str, inputs: object) -> bool:
        """Run ``name``; commit, or roll back and return False for New-Order's unused item."""
        if self.procedures:
            return super().execute(name, inputs)  # the one call of transaction()
        try:
            output = _EXECUTE[name](self.cur, self.stmts, inputs)
            if output is None:
                self._rollback()
                return False
            self._commit()
        except BaseException:
            with contextlib.suppress(Exception):  # the connection may be gone; the first error matters
                self._rollback()
            raise
        self._output, self._answer = output, None
        return True

    def call(self, name: str, inputs: object) -> Statement:
        """With procedures: the one call that is the whole transaction, in autocommit."""
        return procedures.CALLS[name][0](self.stmts, inputs)

    def answered(self, name: str, inputs: object, error: Exception | None) -> bool:
        """The call's answer, or its error: the server or the procedure has rolled back
        whatever failed, and New-Order's expected rollback is no failure (procedures.failed)."""
        if error is not None:
            procedures.failed(name, error)
            return False
        rows = procedures.result(self.cur, name)
        if name == "new_order" and self.answers_rollback and rows[0][0] is None:
            return False  # MySQL's procedure rolled the unused item back itself
        # decoded when read: the run only counts it (procedures.result)
        self._answer = procedures.CALLS[name][1], rows, inputs
        return True

    @property
    def last_output(self) -> object:
        """The last committed transaction's output, as the terminal would show it (tests
        and debugging look at it)."""
        if self._answer is not None:
            answer, rows, inputs = self._answer
            self._output, self._answer = answer(rows, inputs), None
        return self._output

    def keying_time(self, name: str) -> float:
        return keying_time(name, True) if self.spec_keying else super().keying_time(name)

    def think_time(self, name: str) -> float:
        return think_time(name, self.draw.wait_rng, True) if self.spec_think else super().think_time(name)

    def rebind(self, conn: Any) -> None:
        """Take ``conn`` and the target's fast cursor on it, else set it up for prepared
        statements (psycopg's cursor) or take a plain cursor."""
        self.conn = conn
        # first: it reads what a kept connection holds
        cur = self.target.fast_cursor(conn, self.client) if self.client != "dbapi" else None
        if self.procedures:
            self.target.set_autocommit(conn)  # each call is its own transaction
        if cur is not None:
            self.cur = cur
            self._commit, self._rollback = cur.commit, cur.rollback
        else:
            self._commit, self._rollback = conn.commit, conn.rollback
            self._dbapi_cursor(conn)
        self.transaction_cursor = self.cur if self.procedures else None

    def _dbapi_cursor(self, conn: Any) -> None:
        if type(conn).__module__.startswith("psycopg"):
            from psycopg.types.numeric import Int8Dumper

            if conn.prepare_threshold is not None:  # None: the target's connections prepare nothing (PgBouncer)
                conn.prepare_threshold = 0
                conn.prepared_max = max(conn.prepared_max or 0, PREPARED_MAX)
            conn.adapters.register_dumper(int, Int8Dumper)
        self.cur = conn.cursor()
