"""One emulated TPC-E customer: :class:`TpceSession`, the engine's view of a user.

A user deals the customer emulator's mix (mix.py: the brief's B2 without Trade-Result
and Market-Feed), draws each transaction's inputs over what the database holds
(universe.py) and runs its frames as client SQL, or with the run option ``procedures``
one call of its stored procedure where it has one (procedures.py). A committed
Trade-Order goes to the worker's market exchange emulator (mee.py), which sends the
Trade-Results and Market-Feeds the orders cause from connections of its own; when those
fall behind, the user takes the exchange's overdue work before its next card (mee.py
says why).

Trade ids: TPC-E numbers trades from the highest initial id upwards. A user takes
``base + k * ID_STRIDE + user_id`` for its k-th order, where base is the multiple of
ID_STRIDE above the highest trade id when it connected: users' ids are apart by their
residue, a user's next session starts above everything its last one inserted, and no
sequence or auto-increment column (SQL Server's tables here have none) is needed. An
order that rolls back leaves its id unused.

Statements go through the target's fast cursor where it has one (sql.Link), prepared
once per connection and kept; the statement table is built once per process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.workloads.tpce import (
    broker_volume,
    customer_position,
    market_watch,
    mee,
    security_detail,
    trade_lookup,
    trade_order,
    trade_status,
    trade_update,
)
from tpsbench.workloads.tpce.mix import FROM_MARKET, Deck, Draws, mix_shares
from tpsbench.workloads.tpce.statements import FramesSession
from tpsbench.workloads.tpce.universe import universe

#: trade ids of one user are this far apart (module docstring): the most users a run can have
ID_STRIDE = 1 << 16

_INPUTS: dict[str, Callable[[Draws], object]] = {
    "broker_volume": broker_volume.inputs,
    "customer_position": customer_position.inputs,
    "market_watch": market_watch.inputs,
    "security_detail": security_detail.inputs,
    "trade_lookup": trade_lookup.inputs,
    "trade_status": trade_status.inputs,
    "trade_update": trade_update.inputs,
}


class TpceSession(FramesSession):
    """An emulated customer on one connection (see the module docstring); ``exchange``:
    the worker's market exchange emulator, which gets its committed orders (None: they
    are not sent anywhere, for tests of the customers' side alone)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target,
                 exchange: mee.MarketExchange | None = None) -> None:
        if not 0 <= user_id < ID_STRIDE:
            raise TpsbenchError(f"TPC-E runs at most {ID_STRIDE:,} users")
        super().__init__(ctx, user_id, users, conn, target)
        self.world = universe(target, conn)
        self.draw = Draws(ctx.seed, user_id, self.world)
        self.deck = Deck(self.draw.rng, mix_shares(ctx.options))
        self.exchange = exchange
        self._work: mee.Work | None = None
        if exchange is not None:
            exchange.attach(self.world)
        self._start_trade_ids()

    def next_transaction(self) -> str:
        """The next card, unless the exchange has overdue work for this user to help with."""
        exchange = self.exchange
        if exchange is not None:
            work = exchange.overdue()
            if work is not None:
                self._work = work
                return work.name
        return self.deck.draw()

    def inputs(self, name: str) -> object:
        if name in FROM_MARKET:
            return mee.work_inputs(self.exchange, self._work)  # type: ignore[arg-type]  # a market transaction: the exchange and its drawn work are set
        if name == "trade_order":
            return trade_order.inputs(self.draw, self.next_trade_id())
        return _INPUTS[name](self.draw)

    def execute(self, name: str, inputs: object) -> bool:
        """Run ``name`` (its frames and a commit, or its one call); False for
        Trade-Order's requested rollback."""
        if name in FROM_MARKET:
            mee.execute_work(self, self.exchange, name, inputs)  # type: ignore[arg-type]  # a market transaction: the exchange is set
            return True
        output = self.perform(name, inputs)
        if output is None:
            return False
        if name == "trade_order" and self.exchange is not None:
            self.exchange.submit(output)
        return True

    def next_trade_id(self) -> int:
        """The id of this user's next order (module docstring)."""
        self._orders += 1
        return self._id_base + self._orders * ID_STRIDE + self.user_id

    def rebind(self, conn: Any) -> None:
        """Take ``conn``; this user's trade ids start above the highest trade id now."""
        super().rebind(conn)
        self._start_trade_ids()

    def _start_trade_ids(self) -> None:
        cur = self.link.cur
        try:
            cur.execute(self.stmts.highest_trade_id)
            highest = int(cur.fetchone()[0] or 0)
        finally:
            self.link.rollback()
        self._id_base = (highest // ID_STRIDE + 1) * ID_STRIDE
        self._orders = -1
