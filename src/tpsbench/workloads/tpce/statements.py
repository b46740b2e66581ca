"""The statement table of every TPC-E transaction, and the sessions that run them.

Each transaction module writes its own SQL (its ``statements(d)``, procedures.py the
calls of the stored procedures); this puts them together once per (dialect, marker) and
process, so that every session of a worker, the market exchange emulator's and
Data-Maintenance's included, shares one table and nothing is formatted on the hot path.
:class:`FramesSession` is what those sessions share: the table, the connection's
:class:`~tpsbench.workloads.tpce.sql.Link`, and one way to run a transaction, as its
frames ended by a commit or as one call of its stored procedure (run option
``procedures``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, ClassVar

from tpsbench.core.session import RunContext, Session
from tpsbench.core.sql import SqlDialect
from tpsbench.core.target import Target
from tpsbench.workloads.tpce import (
    broker_volume,
    customer_position,
    data_maintenance,
    market_feed,
    market_watch,
    procedures,
    security_detail,
    trade_lookup,
    trade_order,
    trade_result,
    trade_status,
    trade_update,
)
from tpsbench.workloads.tpce.sql import Link, build

PARTS = (broker_volume, customer_position, data_maintenance, market_feed, market_watch, procedures, security_detail,
         trade_lookup, trade_order, trade_result, trade_status, trade_update)
#: each transaction's frames, ``execute(link, statements, inputs)`` (Data-Maintenance's, which take the
#: universe too, run from its own session)
FRAMES: dict[str, Callable[..., Any]] = {
    "broker_volume": broker_volume.execute,
    "customer_position": customer_position.execute,
    "market_feed": market_feed.execute,
    "market_watch": market_watch.execute,
    "security_detail": security_detail.execute,
    "trade_lookup": trade_lookup.execute,
    "trade_order": trade_order.execute,
    "trade_result": trade_result.execute,
    "trade_status": trade_status.execute,
    "trade_update": trade_update.execute,
}


@cache
def statements(d: SqlDialect, mark: str = "?") -> Statements:
    """Every transaction's statements for ``d`` with the driver's ``mark``."""
    return build(d, mark, (part.statements for part in PARTS))


def for_target(target: Target) -> Statements:
    return statements(target.sql, target.placeholder())


class FramesSession(Session):
    """A session whose transactions are frames run on a :class:`Link` (the users', the
    market exchange emulator's and Data-Maintenance's), or calls of their stored
    procedures where the run has them on (procedures.py)."""

    #: whether the run option ``procedures`` applies (Data-Maintenance has no procedure)
    sends_calls: ClassVar[bool] = True

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        self.stmts = for_target(target)
        #: the transactions sent as one call each, in autocommit (none: all frames)
        self.calls = frozenset(procedures.CALLS) if self.sends_calls and procedures.uses_procedures(
            ctx.options, target) else frozenset()
        self.link = Link(target, conn, bool(self.calls))
        #: the last committed transaction's output (tests and debugging look at it)
        self.last_output: object = None

    def perform(self, name: str, inputs: object) -> Any:
        """``name`` on ``inputs``, committed: one call of its stored procedure where this
        session sends it so, else its frames (:meth:`run`). Its output; None for
        Trade-Order's requested rollback, which is undone."""
        if name not in self.calls:
            return self.run(FRAMES[name], inputs)
        output = procedures.call(self.link.cur, self.stmts, name, inputs)
        if output is not None:
            self.last_output = output
        return output

    def run(self, frames: Callable[..., Any], *args: Any) -> Any:
        """``frames(link, statements, *args)``, then commit; an output of None (Trade-Order's
        requested rollback) rolls back instead, and so does a failure, which is raised."""
        link = self.link
        try:
            output = frames(link, self.stmts, *args)
            if output is None:
                link.rollback()
                return None
            link.commit()
        except BaseException:
            link.rollback()
            raise
        self.last_output = output
        return output

    def rebind(self, conn: Any) -> None:
        self.conn = conn
        self.link = Link(self.target, conn, bool(self.calls))
