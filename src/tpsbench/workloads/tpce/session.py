"""One emulated TPC-E customer: :class:`TpceSession`, the engine's view of a user.

A user deals the customer emulator's mix (table.py: the brief's B2 without
Trade-Result and Market-Feed), draws each transaction's inputs over what the database
holds (universe.py) and runs its frames as client SQL, or with the run option
``procedures`` one call of its stored procedure where it has one (procedures.py): the
generic mix session does all of that from the table (frames.FramesSession); this
class adds what is a customer's own, its draws and its trade ids. A committed
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

from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.core.transactions import shuffled_copy
from tpsbench.workloads.tpce import mee
from tpsbench.workloads.tpce.frames import FramesSession
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.universe import universe

#: trade ids of one user are this far apart (module docstring): the most users a run can have
ID_STRIDE = 1 << 16


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
        self.deal(shuffled_copy(self.draw.rng), self.table.cards(self.table.shares(ctx.options.get("mix", ""))))
        if exchange is not None:
            self.hand_over(exchange)
            exchange.attach(self.world)

    def next_transaction(self) -> str:
        """The next card, unless the exchange has overdue work for this user to help with."""
        exchange = self.exchange
        if exchange is not None:
            work = exchange.overdue()
            if work is not None:
                self.work = work
                return work.name
        return super().next_transaction()

    def next_trade_id(self) -> int:
        """The id of this user's next order (module docstring)."""
        self._orders += 1
        return self._id_base + self._orders * ID_STRIDE + self.user_id

    def rebind(self, conn: Any) -> None:
        """Take ``conn``; this user's trade ids start above the highest trade id now."""
        super().rebind(conn)
        cur = self.link.cur
        try:
            cur.execute(self.sql.trade_order.highest_trade_id)
            highest = int(cur.fetchone()[0] or 0)
        finally:
            self.link.rollback()
        self._id_base = (highest // ID_STRIDE + 1) * ID_STRIDE
        self._orders = -1
