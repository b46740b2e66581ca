"""The session base that runs TPC-E's transactions: :class:`FramesSession`.

It is what the users', the market exchange emulator's and Data-Maintenance's sessions
share, on the generic mix session (tpsbench.core.mix_session) with TPC-E's table
(table.py): the table of statements, the connection's
:class:`~tpsbench.workloads.tpce.sql.Link`, the calls of the stored procedures where the
run option ``procedures`` has them on, and the hand-over of a committed transaction's
output to the market exchange emulator (mee.py), after its commit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from tpsbench.core.mix_session import MixSession
from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.workloads.tpce import procedures
from tpsbench.workloads.tpce.sql import Link
from tpsbench.workloads.tpce.table import TABLE, for_target

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.mee import MarketExchange, Work
    from tpsbench.workloads.tpce.mix import Draws
    from tpsbench.workloads.tpce.universe import Universe


class FramesSession(MixSession):
    """A session whose transactions are frames run on a :class:`Link` (the users', the
    market exchange emulator's and Data-Maintenance's), or calls of their stored
    procedures where the run has them on (procedures.py)."""

    table = TABLE
    #: whether the run option ``procedures`` applies (Data-Maintenance has no procedure)
    sends_calls: ClassVar[bool] = True
    #: the worker's market exchange emulator, which gets the outputs of committed
    #: Trade-Orders, Trade-Results and Market-Feeds (None: they go nowhere)
    exchange: MarketExchange | None = None
    #: the exchange's work being run (a Trade-Result's or a Market-Feed's inputs come from it)
    work: Work | None = None
    #: the database's customers, securities ... and this session's draws over them, for
    #: the sessions that draw inputs
    world: Universe
    draw: Draws

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        self.sql = for_target(target)
        #: the transactions sent as one call each, in autocommit (none: all frames)
        self.use_calls(self.sends_calls and procedures.uses_procedures(ctx.options, target))
        self._handover: dict[str, Callable[[Any], None]] = {}
        self.rebind(conn)

    def hand_over(self, exchange: MarketExchange) -> None:
        """Give ``exchange`` what its transactions commit: orders to execute, executed
        trades for its ticker, triggered limit orders to execute."""
        self.exchange = exchange
        self._handover = {"trade_order": exchange.submit, "trade_result": exchange.completed,
                          "market_feed": exchange.triggered}

    def execute(self, name: str, inputs: object) -> bool:
        """Run ``name`` (its frames and a commit, or its one call); False for
        Trade-Order's requested rollback. A committed output goes to the exchange."""
        if not super().execute(name, inputs):
            return False
        hand = self._handover.get(name)
        if hand is not None:
            hand(self.last_output)
        return True

    def perform(self, name: str, inputs: object) -> Any:
        """``name`` on ``inputs``, committed: its output; None for Trade-Order's requested
        rollback, which is undone."""
        return self.last_output if self.execute(name, inputs) else None

    def next_trade_id(self) -> int:
        """The id of this session's next order: customers place orders (TpceSession)."""
        raise NotImplementedError(f"{type(self).__name__} places no orders")

    def next_turn(self) -> int:
        """Data-Maintenance's next turn: its own session counts them (maintenance.py)."""
        raise NotImplementedError(f"{type(self).__name__} sends no Data-Maintenance")

    def rebind(self, conn: Any) -> None:
        self.conn = conn
        self.link = link = Link(self.target, conn, bool(self.calls))
        self.use_cursor(link.cur, link.commit, link.rollback)
