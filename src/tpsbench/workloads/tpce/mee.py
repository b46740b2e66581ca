"""The market exchange emulator (TPC-E, brief B3): orders in, Trade-Results and Market-Feeds out.

Each worker process runs one :class:`MarketExchange` per step, shared by its users
(TpceSession hands it every committed Trade-Order) and by the engine's background
components that send its transactions, :class:`MarketExecutor` (``EXECUTORS`` per
worker, each on a connection of its own, as TPC-C's deferred Delivery executors are).
What it does with an order:

- a market order is executed after ``min(expovariate(mean 1 s), 5 s)``: a Trade-Result
  at the security's price then;
- a limit order waits for its security's price to cross the limit: the price is a
  triangle wave of 900 s around LAST_TRADE's price as first read (:class:`PriceCurve`,
  +-5%, a phase per symbol from the run seed, so that every worker sees one market), and
  an order already in the money is due at once. A due limit order becomes a ticker
  entry at its limit price, so that the next Market-Feed triggers it in the database
  (TRADE_REQUEST to submitted), and the Market-Feed's triggered orders come back here
  and are executed as market orders are, at their limit price;
- every Trade-Result adds its trade to the ticker, and one padding entry: a due limit
  order's, or else an artificial trade of a random security at its price; every 20
  entries make one Market-Feed. So Market-Feeds are about a tenth of the Trade-Results.

Executors take work earliest first, a Market-Feed before any Trade-Result. The engine
times each from its dispatch to its commit, as EGen's driver times the brokerage's
answer; how late the dispatch came after the work was due is recorded apart as
``mee_delay`` (a TimingSink span).

When the executors fall behind, the users help: work due for more than ``LATE_S`` is
taken by the worker's next user to look (TpceSession.next_transaction) before its next
card, and run and timed as an executor would run it (mee_delay included). Why: a
Trade-Result is a write transaction of a dozen statements whose commit waits for the
log, so under load it takes several times a customer's read, and executors that keep up
have to be about a quarter of the users, a number the executors, made before the
step's users connect, cannot know. Measured on PostgreSQL, 2 cores saturated, 50 users
on two workers without help: Trade-Result 100-130 ms against 20-35 ms for most reads;
with 4 executors per worker mee_delay grew to 4-6 s and tpsE fell to 5% of TPS, with 8 to
0.3-1.8 s and 7-8%, with 12 it stayed at 25 ms and 8.3%. Helping keeps the Trade-Results
in step with the orders at any load, as a real brokerage's shared connection pool would,
without connections beyond the users' and ``mee_connections`` per worker (the run's
connection check does not count those); the customers' mix, their deck, is unchanged.
With help, 4 executors per worker at 50 users: mee_delay 0.43 s on average, tpsE 7.9%.

At the step's end :meth:`MarketExchange.close` drops what is still queued: those orders
stay submitted or pending in the database, for the next run's Trade-Cleanup, and a next
step starts from an empty exchange.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar

from tpsbench.core.session import Background, RunContext, Session, TimingSink
from tpsbench.core.target import Target
from tpsbench.workloads.tpce.frames import FramesSession
from tpsbench.workloads.tpce.market_feed import FEED_ENTRIES, Entry, Triggered
from tpsbench.workloads.tpce.mix import PRICE_SWING
from tpsbench.workloads.tpce.trade_order import QUANTITIES, TradeOrderOutput
from tpsbench.workloads.tpce.trade_result import TradeResultOutput
from tpsbench.workloads.tpce.universe import Security, Universe, universe

#: the spans recorded beside the transactions (Workload.timing_names)
TIMINGS = ("mee_delay",)
#: executors (connections) per worker
EXECUTORS = 4
#: a market order's execution delay: negative exponential of this mean, capped
DELAY_MEAN_S, DELAY_MAX_S = 1.0, 5.0
#: the price curve's period
PERIOD_S = 900.0
#: longest an executor waits for work before it answers "no work yet" (the engine then
#: looks at the step's end)
WAIT_S = 0.2
#: work due for longer than this is taken by a user (module docstring)
LATE_S = 0.5
#: limit order types that trigger when the price falls to the limit (the others when it rises)
FALLING = ("TLB", "TSL")


class PriceCurve:
    """Every security's price over time (module docstring); thread-safe, read-only."""

    def __init__(self, seed: int, securities: Sequence[Security]) -> None:
        rng = random.Random(f"tpce-market/{seed}")
        self._curves = {sec.symbol: (float(sec.price), rng.random()) for sec in securities}
        self.symbols = [sec.symbol for sec in securities]

    def price(self, symbol: str, at: float) -> Decimal:
        """The price at ``at`` (time.time()), in cents."""
        centre, x = self._where(symbol, at)
        return Decimal(f"{centre * (1 + float(PRICE_SWING) * (4 * abs(x - 0.5) - 1)):.2f}")

    def seconds_to(self, symbol: str, limit: Decimal, falling: bool, at: float) -> float:
        """How long from ``at`` until the price is at or below ``limit`` (``falling``), or
        at or above it; 0 when it is already (the order is in the money), infinite when
        the price never gets there."""
        centre, x = self._where(symbol, at)
        level = (float(limit) / centre - 1) / float(PRICE_SWING)
        if (level < -1) if falling else (level > 1):
            return math.inf
        level = min(1.0, max(-1.0, level))
        half = (level + 1) / 4  # the price is at or below the limit within half of 0.5
        low, high = 0.5 - half, 0.5 + half
        if falling:
            if low <= x <= high:
                return 0.0
            wait = low - x if x < low else 1 - x + low
        else:
            if x <= low or x >= high:
                return 0.0
            wait = high - x
        return wait * PERIOD_S

    def _where(self, symbol: str, at: float) -> tuple[float, float]:
        centre, phase = self._curves[symbol]
        return centre, (at / PERIOD_S + phase) % 1.0


@dataclass(slots=True)
class Work:
    """What an executor takes: a Trade-Result of ``trade_id`` (at ``price``, or at the
    market's price then when None) or a Market-Feed of ``entries``; ``due`` on the
    monotonic clock."""

    name: str
    due: float
    trade_id: int = 0
    symbol: str = ""
    price: Decimal | None = None
    entries: list[Entry] = field(default_factory=list)


class MarketExchange:
    """One worker's emulator for one step (module docstring); thread-safe."""

    def __init__(self, seed: int, worker: int) -> None:
        self._ready = threading.Condition(threading.Lock())
        self._seed = seed
        self._rng = random.Random(f"tpce-mee/{seed}/{worker}")
        self._order = itertools.count()
        #: orders to execute: (due, order of arrival, trade id, symbol, price or None)
        self._orders: list[tuple[float, int, int, str, Decimal | None]] = []
        #: limit orders waiting for their price: (due, order of arrival, symbol, limit, qty)
        self._limits: list[tuple[float, int, str, Decimal, int]] = []
        self._ticker: list[Entry] = []
        self._feeds: deque[Work] = deque()
        self.curve: PriceCurve | None = None
        #: where the dispatches' delays are recorded (the first executor's sink)
        self.timing: TimingSink | None = None
        self.closed = False
        #: orders and feeds still queued when the step ended
        self.dropped = 0

    def attach(self, world: Universe, timing: TimingSink | None = None) -> None:
        """Know the market (the first session of the worker to open gives it), and where
        to record the dispatches' delays (an executor's session gives it)."""
        with self._ready:
            if self.curve is None:
                self.curve = PriceCurve(self._seed, world.securities)
            if self.timing is None:
                self.timing = timing

    def submit(self, order: TradeOrderOutput) -> None:
        """A committed Trade-Order: to execute (market), or to wait for its price (limit)."""
        curve = self._curve()
        now = time.monotonic()
        with self._ready:
            if self.closed:
                self.dropped += 1
                return
            if order.is_market:
                self._execute_later(now, order.trade_id, order.symbol, None)
            else:
                wait = curve.seconds_to(order.symbol, order.price, order.trade_type in FALLING, time.time())
                heapq.heappush(self._limits, (now + wait, next(self._order), order.symbol, order.price, order.qty))
            self._ready.notify()

    def triggered(self, orders: Iterable[Triggered]) -> None:
        """Limit orders a Market-Feed set off: executed at their limit price."""
        now = time.monotonic()
        with self._ready:
            for order in orders:
                if self.closed:
                    self.dropped += 1
                    continue
                self._execute_later(now, order.trade_id, order.symbol, order.bid_price)
            self._ready.notify_all()

    def completed(self, result: TradeResultOutput) -> None:
        """A committed Trade-Result: its ticker entry, a padding entry, and a feed per 20."""
        curve = self._curve()
        now = time.monotonic()
        with self._ready:
            ticker = self._ticker
            ticker.append((result.symbol, result.price, result.qty))
            limits = self._limits
            if limits and limits[0][0] <= now:
                _, _, symbol, limit, qty = heapq.heappop(limits)
                ticker.append((symbol, limit, qty))
            else:
                symbol = self._rng.choice(curve.symbols)
                ticker.append((symbol, curve.price(symbol, time.time()), self._rng.choice(QUANTITIES)))
            if len(ticker) >= FEED_ENTRIES and not self.closed:
                self._feeds.append(Work("market_feed", now, entries=ticker[:FEED_ENTRIES]))
                del ticker[:FEED_ENTRIES]
                self._ready.notify()

    def take(self, timeout: float) -> Work | None:
        """The next due work, a feed first, waiting up to ``timeout`` seconds; None when
        there is none by then or the exchange is closed."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while not self.closed:
                now, orders = time.monotonic(), self._orders
                work = self._due(now, 0.0)
                if work is not None:
                    return work
                if now >= deadline:
                    return None
                self._ready.wait((min(deadline, orders[0][0]) if orders else deadline) - now)
            return None

    def overdue(self) -> Work | None:
        """Work due for longer than ``LATE_S``, for a user to take; never waits."""
        with self._ready:
            return None if self.closed else self._due(time.monotonic(), LATE_S)

    def _due(self, now: float, late: float) -> Work | None:
        """The first work due ``late`` seconds ago, dispatched (its delay recorded); locked."""
        feeds, orders = self._feeds, self._orders
        if feeds and feeds[0].due + late <= now:
            work = feeds.popleft()
        elif orders and orders[0][0] + late <= now:
            due, _, trade_id, symbol, price = heapq.heappop(orders)
            work = Work("trade_result", due, trade_id, symbol, price)
        else:
            return None
        if self.timing is not None:
            self.timing("mee_delay", max(0, int((now - work.due) * 1e6)))
        return work

    def price(self, symbol: str) -> Decimal:
        """The security's price now."""
        return self._curve().price(symbol, time.time())

    def close(self) -> None:
        """The step has ended: wake every executor, drop what is still queued."""
        with self._ready:
            if not self.closed:
                self.closed = True
                self.dropped += len(self._orders) + len(self._limits) + len(self._feeds)
                self._orders.clear()
                self._limits.clear()
                self._feeds.clear()
            self._ready.notify_all()

    def _execute_later(self, now: float, trade_id: int, symbol: str, price: Decimal | None) -> None:
        delay = min(self._rng.expovariate(1 / DELAY_MEAN_S), DELAY_MAX_S)
        heapq.heappush(self._orders, (now + delay, next(self._order), trade_id, symbol, price))

    def _curve(self) -> PriceCurve:
        curve = self.curve
        if curve is None:
            raise RuntimeError("the market exchange emulator has no market yet (attach)")
        return curve


class MarketSession(FramesSession):
    """An executor's session: the exchange's work, one transaction at a time, each as
    its frames or, with the run option procedures on, one call; what it commits goes
    back to the exchange (FramesSession.hand_over)."""

    def __init__(self, ctx: RunContext, conn: Any, target: Target, exchange: MarketExchange,
                 timing: TimingSink) -> None:
        super().__init__(ctx, 0, 1, conn, target)
        self.market = exchange
        self.hand_over(exchange)
        exchange.attach(universe(target, conn), timing)

    def next_transaction(self) -> str:
        work = self.market.take(WAIT_S)
        if work is None:
            return ""  # no work yet: the engine looks at the step's end and asks again
        self.work = work
        return work.name


class MarketExecutor(Background):
    """One of a worker's connections that send the exchange's transactions."""

    name: ClassVar[str] = "market exchange"

    def __init__(self, exchange: MarketExchange) -> None:
        self.exchange = exchange

    def open_session(self, ctx: RunContext, conn: Any, target: Target, timing: TimingSink) -> Session:
        return MarketSession(ctx, conn, target, self.exchange, timing)

    def stop(self) -> None:
        self.exchange.close()


def components(ctx: RunContext, worker: int, executors: int = EXECUTORS) -> tuple[MarketExchange, list[MarketExecutor]]:
    """A worker's exchange for one step and its executors."""
    exchange = MarketExchange(ctx.seed, worker)
    return exchange, [MarketExecutor(exchange) for _ in range(executors)]
