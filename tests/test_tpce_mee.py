"""The TPC-E market exchange emulator's rules, on a clock of the test's own (no database).

Orders come in as the users' committed Trade-Orders would hand them over; the tests look
at what the exchange hands its executors and when: market orders after their delay,
limit orders when their price is crossed (through a ticker entry that a Market-Feed
then triggers), one Market-Feed per 20 ticker entries, nothing after the step's end.
The database side of the same flow is in test_tpce_transactions.py.
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from math import inf

import pytest

from tpsbench.core.errors import TpsbenchError
from tpsbench.workloads.tpce import TpceWorkload, mee
from tpsbench.workloads.tpce.market_feed import Triggered
from tpsbench.workloads.tpce.mee import MarketExchange, PriceCurve
from tpsbench.workloads.tpce.mix import price_range
from tpsbench.workloads.tpce.trade_order import TradeOrderOutput
from tpsbench.workloads.tpce.trade_result import TradeResultOutput
from tpsbench.workloads.tpce.universe import Customer, Security, Universe

SYMBOLS = ("AAAAAA", "AAAAAB", "AAAAAC")
CENTRE = Decimal("25.00")


class Clock:
    """Stands for the ``time`` module in mee.py: both clocks are what the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0 + self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(mee, "time", fake)
    return fake


def world() -> Universe:
    securities = tuple(Security(s, "COMMON", f"Company {s}", CENTRE) for s in SYMBOLS)
    return Universe(customers=(Customer(1, "T1", 1, "F", "L", (1,)),), permitted={}, securities=securities,
                    brokers=("B",), sectors=("S",), industries=("I",), companies=(1, 1), trade_ids=(1, 2),
                    trade_times=(0, 0), market_days=(0, 0), tax_ids=("N000",), exchanges=("NYSE",))  # type: ignore[arg-type]  # ints stand in for times and days, which the market emulator never reads


def exchange() -> MarketExchange:
    market = MarketExchange(seed=3, worker=0)
    market.attach(world())
    return market


def order(trade_id: int, trade_type: str, price: Decimal = CENTRE, symbol: str = "AAAAAA") -> TradeOrderOutput:
    market = trade_type in ("TMB", "TMS")
    return TradeOrderOutput(trade_id, symbol, trade_type, 100, price, market, trade_type in ("TMS", "TSL", "TLS"),
                            Decimal(0), Decimal(0), Decimal(0), Decimal(0), "SBMT" if market else "PNDG")


def result(trade_id: int, symbol: str = "AAAAAB", price: Decimal = Decimal("24.50")) -> TradeResultOutput:
    return TradeResultOutput(trade_id, symbol, 200, price, 1, Decimal(0), Decimal(0), Decimal(0), Decimal(0))


def test_market_orders_are_executed_after_their_delay_earliest_first(clock: Clock) -> None:
    market = exchange()
    for trade_id in range(1, 401):
        market.submit(order(trade_id, "TMB" if trade_id % 2 else "TMS"))
    assert market.take(0) is None  # none is due at once
    delays = sorted(due - clock.now for due, *_ in market._orders)
    assert 0 < delays[0] and delays[-1] <= mee.DELAY_MAX_S and delays.count(mee.DELAY_MAX_S) < 10
    assert 0.85 < sum(delays) / len(delays) < 1.15  # mean 1 s, cut at 5 s: 0.993 s
    clock.now += mee.DELAY_MAX_S
    taken = [market.take(0) for _ in range(400)]
    assert all(w is not None and w.name == "trade_result" and w.price is None for w in taken)
    assert [w.due for w in taken] == sorted(w.due for w in taken)  # type: ignore[union-attr]  # none is None: asserted on the line above
    assert sorted(w.trade_id for w in taken) == list(range(1, 401)) and market.take(0) is None  # type: ignore[union-attr]  # none is None: asserted two lines above


def test_a_limit_order_waits_for_its_price_then_pads_the_ticker_and_its_feed_triggers_it(clock: Clock) -> None:
    market = exchange()
    curve = market.curve
    assert curve is not None
    low, _ = price_range(CENTRE)
    now = mee.time.time()
    # a buy limit just above the lowest price: due when the falling price reaches it
    limit = low + Decimal("0.05")
    wait = curve.seconds_to("AAAAAA", limit, True, now)
    if wait == 0:  # in the money right now: move to where the price is high
        clock.now += mee.PERIOD_S / 2
        now = mee.time.time()
        wait = curve.seconds_to("AAAAAA", limit, True, now)
    assert 0 < wait < mee.PERIOD_S and curve.price("AAAAAA", now) > limit
    assert curve.price("AAAAAA", now + wait + 1) <= limit + Decimal("0.01")
    market.submit(order(7, "TLB", limit))
    assert market.take(0) is None  # limit orders are not executed straight away
    market.completed(result(1))  # a Trade-Result before the limit is due: padded artificially
    assert market._ticker[0][0] == "AAAAAB" and len(market._ticker) == 2
    clock.now += wait + 1
    market.completed(result(2))
    assert market._ticker[-1] == ("AAAAAA", limit, 100)  # the padding entry is the due limit order
    # the Market-Feed that carries it triggers it in the database; back here it is executed
    market.triggered([Triggered(7, "AAAAAA", 100, limit, "TLB")])
    clock.now += mee.DELAY_MAX_S
    work = market.take(0)
    assert work is not None and (work.name, work.trade_id, work.price) == ("trade_result", 7, limit)


def test_in_the_money_limit_orders_are_due_at_once_and_sells_trigger_on_a_rise(clock: Clock) -> None:
    curve = exchange().curve
    assert curve is not None
    now = mee.time.time()
    price = curve.price("AAAAAB", now)
    assert curve.seconds_to("AAAAAB", price + 1, True, now) == 0  # buy above the price: in the money
    assert curve.seconds_to("AAAAAB", price - 1, False, now) == 0  # sell below it: in the money
    low, high = price_range(CENTRE)
    assert curve.seconds_to("AAAAAB", low - 1, True, now) == curve.seconds_to("AAAAAB", high + 1, False, now) == inf
    rise = curve.seconds_to("AAAAAB", high - Decimal("0.05"), False, now)
    assert 0 < rise < mee.PERIOD_S and curve.price("AAAAAB", now + rise + 1) >= high - Decimal("0.06")
    # the curve stays within its range and comes back after a period
    prices = [curve.price("AAAAAC", now + t) for t in range(0, 900, 7)]
    assert low <= min(prices) and max(prices) <= high and max(prices) - min(prices) > CENTRE / 20
    assert curve.price("AAAAAC", now) == curve.price("AAAAAC", now + mee.PERIOD_S)
    # every worker's exchange of a run sees one market
    other = PriceCurve(3, world().securities)
    assert all(other.price(s, now) == curve.price(s, now) for s in SYMBOLS)


def test_every_twenty_ticker_entries_make_one_feed_taken_before_any_result(clock: Clock) -> None:
    market = exchange()
    market.submit(order(1, "TMB"))
    clock.now += mee.DELAY_MAX_S
    for trade_id in range(100, 125):  # 25 Trade-Results: 50 entries, two feeds and 10 left
        market.completed(result(trade_id))
    assert len(market._feeds) == 2 and len(market._ticker) == 10
    first = market.take(0)
    assert first is not None and first.name == "market_feed" and len(first.entries) == 20
    assert first.entries[0] == ("AAAAAB", Decimal("24.50"), 200)
    assert {e[0] for e in first.entries[1::2]} <= set(SYMBOLS)  # the padding: artificial trades
    second, third = market.take(0), market.take(0)
    assert second is not None and second.name == "market_feed"
    assert third is not None and third.name == "trade_result" and market.take(0) is None


def test_work_overdue_goes_to_a_user_and_every_dispatch_records_its_delay(clock: Clock) -> None:
    market = exchange()
    spans: list[tuple[str, int]] = []
    market.attach(world(), lambda name, us: spans.append((name, us)))
    for trade_id in (1, 2):
        market.submit(order(trade_id, "TMB"))
    first_due = min(due for due, *_ in market._orders)
    clock.now = first_due + mee.LATE_S / 2
    assert market.overdue() is None  # due, but the executors still have time to take it
    clock.now = max(due for due, *_ in market._orders) + mee.LATE_S + 0.25
    helped = market.overdue()
    assert helped is not None and helped.trade_id in (1, 2) and helped.due == first_due
    taken = market.take(0)
    assert taken is not None and {helped.trade_id, taken.trade_id} == {1, 2}
    assert [name for name, _ in spans] == ["mee_delay"] * 2
    assert spans[0][1] == int((clock.now - first_due) * 1e6)
    assert market.overdue() is None and market.take(0) is None


def test_the_step_end_drops_what_is_queued_and_wakes_the_executors() -> None:
    market = exchange()
    market.submit(order(1, "TMB"))
    market.submit(order(2, "TLS", CENTRE * 2))
    taken: list[object] = []
    waiter = threading.Thread(target=lambda: taken.append(market.take(5.0)))
    start = time.monotonic()
    waiter.start()
    time.sleep(0.05)
    market.close()
    waiter.join(2.0)
    assert time.monotonic() - start < 1.0 and market.dropped == 2
    assert market.take(0) is None
    market.submit(order(3, "TMB"))  # a user's last order, after the step ended
    market.triggered([Triggered(4, "AAAAAA", 100, CENTRE, "TLB")])
    market.completed(result(5))
    assert market.dropped == 4 and not market._feeds and market.take(0) is None


def test_the_workload_makes_one_exchange_per_worker_and_data_maintenance_on_worker_0() -> None:
    from tpsbench.core.session import RunContext
    from tpsbench.workloads.tpce.maintenance import Maintenance

    wl = TpceWorkload()
    ctx = RunContext("tpce", "sqlite://", 1000, 5, {}, {"mee_connections": "3"})
    first = wl.background(ctx, 0, 2)
    assert [type(c).__name__ for c in first] == ["MarketExecutor"] * 3 + ["Maintenance"]
    assert len({id(c.exchange) for c in first[:3]}) == 1 and first[0].exchange is wl.exchange  # type: ignore[attr-defined]  # the first three are MarketExecutors (asserted above); background() is typed Background
    maintenance = first[-1]
    assert isinstance(maintenance, Maintenance) and maintenance.due <= time.monotonic()  # the first: at once
    maintenance.turn, maintenance.due = 5, time.monotonic() + 42.0
    again = wl.background(ctx, 0, 2)
    assert isinstance(again[-1], Maintenance) and again[-1] is not maintenance
    assert (again[-1].turn, again[-1].due) == (5, maintenance.due)  # the run's clock goes on
    assert again[0].exchange is not first[0].exchange  # type: ignore[attr-defined]  # MarketExecutors, as asserted above; background() is typed Background
    assert all(type(c).__name__ == "MarketExecutor" for c in wl.background(ctx, 1, 2))
    assert "exchange" not in wl.__getstate__() and "maintenance" not in wl.__getstate__()
    for bad in ("0", "x", "65"):
        with pytest.raises(TpsbenchError, match="mee_connections"):
            wl.background(RunContext("tpce", "sqlite://", 1000, 5, {}, {"mee_connections": bad}), 0, 1)
