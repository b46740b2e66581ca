"""TPC-C's deferred Delivery (``--delivery deferred``, clause 2.7.2): queued by the
terminal, run by executors beside the users, its queue time and execution time apart.

The timeline tests drive a deferring terminal the way the engine does, on a clock of
their own, and hold it against an inline terminal with the same seed: every request must
be queued with the inputs the inline terminal drew and be due exactly when the inline
terminal submitted its Delivery, and every other transaction must come when it came.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import scratch_pg_database
from test_tpcc_transactions import built_database

from tpsbench.commands.check import check
from tpsbench.commands.run import RunConfig, run
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext
from tpsbench.report.table import render
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc import TpccWorkload, deferred, loader
from tpsbench.workloads.tpcc.deferred import DeferringTerminal, DeliveryExecutor, DeliveryQueue
from tpsbench.workloads.tpcc.delivery import DeliveryInputs
from tpsbench.workloads.tpcc.session import TpccSession

#: a transaction's time on the server, for the terminals that run it (a deferred
#: terminal's Delivery takes it none)
EXEC_S = 0.05


class Clock:
    """Stands for the ``time`` module in deferred.py: monotonic() is what the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(deferred, "time", fake)
    # every terminal's transactions commit at once; the drivers below move the clock
    monkeypatch.setattr(TpccSession, "execute", lambda self, name, inputs: True)
    return fake


def context(think: str, delivery: str = "deferred", scale: int = 2, warehouses: str = "home") -> RunContext:
    return RunContext("tpcc", "sqlite://", scale, 11, loader.constants(5),
                      {"think": think, "delivery": delivery, "warehouses": warehouses})


def open_terminal(ctx: RunContext, queues: tuple[DeliveryQueue, ...] | None = None, user: int = 3) -> TpccSession:
    target = open_target("sqlite://")
    if queues is None:
        return TpccSession(ctx, user, 8, target.connect(), target)
    return DeferringTerminal(ctx, user, 8, target.connect(), target, queues)


Timeline = list[tuple[float, str, object]]


def own_thread(session: TpccSession, clock: Clock, count: int, think: bool) -> Timeline:
    """The order of VirtualUser.hot_loop: deal, key, draw, execute, think; (submit time, name, inputs)."""
    out: Timeline = []
    while len(out) < count:
        name = session.next_transaction()
        if think:
            clock.now += session.keying_time(name)
        inputs = session.inputs(name)
        out.append((clock.now, name, inputs))
        clock.now += 0.0 if name == "delivery" else EXEC_S
        session.execute(name, inputs)
        if think:
            clock.now += session.think_time(name)
    return out


def shared_thread(session: TpccSession, clock: Clock, count: int, think: bool, reconnect_every: int = 0) -> Timeline:
    """The order of the Multiplexer: 16 dealt (and drawn) ahead of their turn, then each
    keyed, sent, answered and thought about; a reconnect drops what was dealt ahead."""
    out: Timeline = []
    ahead: deque[tuple[str, object]] = deque()
    while len(out) < count:
        if reconnect_every and out and len(out) % reconnect_every == 0:
            ahead.clear()
            session.rebind(session.conn)
        if not ahead:
            for _ in range(16):
                name = session.next_transaction()
                ahead.append((name, session.inputs(name)))
        name, inputs = ahead.popleft()
        if think:
            clock.now += session.keying_time(name)
        out.append((clock.now, name, inputs))
        clock.now += EXEC_S
        session.execute(name, inputs)  # the answer's hook on the statement path
        if think:
            clock.now += session.think_time(name)
    return out


def drain(queues: tuple[DeliveryQueue, ...], clock: Clock) -> list[tuple[float, DeliveryInputs]]:
    """Every queued request as (due, inputs), earliest first; no executor takes one early."""
    heads = [q._heap[0][0] for q in queues if q._heap]
    clock.now = min(heads) - 1e-6
    assert all(q.take(0) is None for q in queues)  # nothing is due yet
    clock.now = float("inf")
    taken = [item for q in queues for item in iter(lambda q=q: q.take(0), None)]
    return sorted(taken, key=lambda item: item[0])


@pytest.mark.parametrize("think", ["off", "spec"])
@pytest.mark.parametrize("driver", [own_thread, shared_thread])
def test_requests_are_due_when_the_inline_terminal_submitted_them(
        clock: Clock, think: str, driver: Callable[..., Timeline]) -> None:
    inline = own_thread(open_terminal(context(think, "inline", warehouses="all")), clock, 600, think != "off")
    clock.now = 1000.0
    queues = (DeliveryQueue(), DeliveryQueue())
    terminal = open_terminal(context(think, warehouses="all"), queues)
    others = [entry for entry in inline if entry[1] != "delivery"]
    got = driver(terminal, clock, len(others), think != "off")
    assert "delivery" not in {name for _, name, _ in got}
    assert [(name, inputs) for _, name, inputs in got] == [(name, inputs) for _, name, inputs in others]
    assert [at for at, _, _ in got] == pytest.approx([at for at, _, _ in others], abs=1e-6)
    # the requests dealt before the last transaction: the terminal got past them all
    last = others[-1][0]
    wanted = [(at, inputs) for at, name, inputs in inline if name == "delivery" and at <= last]
    assert len(wanted) > 10
    # each request went to the queue of its warehouse's executor
    assert [{inputs.w_id for _, _, inputs in q._heap} for q in queues] == [{2}, {1}]
    queued = drain(queues, clock)
    assert [inputs for _, inputs in queued[:len(wanted)]] == [inputs for _, inputs in wanted]
    assert [due for due, _ in queued[:len(wanted)]] == pytest.approx([at for at, _ in wanted], abs=1e-6)


def test_a_reconnect_queues_the_requests_of_the_transactions_it_drops(clock: Clock) -> None:
    inline = own_thread(open_terminal(context("off", "inline", scale=1)), clock, 1000, False)
    queues = (DeliveryQueue(),)
    terminal = open_terminal(context("off", scale=1), queues)
    dealt = 0
    deal = terminal.next_transaction

    def counted() -> str:
        nonlocal dealt
        dealt += 1
        return deal()

    terminal.next_transaction = counted  # type: ignore[method-assign]  # this one terminal's draws counted by wrapping its method
    shared_thread(terminal, clock, 400, False, reconnect_every=23)
    terminal.rebind(terminal.conn)  # and once more at the end: nothing dealt is left waiting
    assert not terminal._waiting and dealt > 400
    # every Delivery card dealt is queued, once, in the order dealt: those the inline
    # terminal dealt before its transaction number ``dealt``
    cards, others = [], 0
    for _, name, inputs in inline:
        if name != "delivery":
            others += 1
            if others == dealt:
                break
        else:
            cards.append(inputs)
    assert others == dealt and len(cards) > 10
    assert [inputs for _, inputs in drain(queues, clock)] == cards


def test_the_executor_times_the_queue_and_the_execution(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_commit(self: TpccSession, name: str, inputs: object) -> bool:
        clock.now += 0.25
        return True

    monkeypatch.setattr(TpccSession, "execute", slow_commit)
    timings: list[tuple[str, int]] = []
    component = deferred.DeferredDelivery(DeliveryQueue())
    target = open_target("sqlite://")
    executor = component.open_session(context("off"), target.connect(), target, lambda n, us: timings.append((n, us)))
    assert isinstance(executor, DeliveryExecutor)
    request = DeliveryInputs(2, 7)
    component.queue.put(request, clock.now + 1.0)
    clock.now += 1.5
    assert executor.next_transaction() == "delivery"
    assert executor.inputs("delivery") is request
    assert executor.execute("delivery", request)
    assert timings == [("delivery_queue", 500_000), ("delivery_execution", 250_000)]
    component.queue.put(request, clock.now)
    component.stop()  # the step's end: the request is dropped, the executor told "no work"
    assert executor.next_transaction() == "" and component.queue.dropped == 1


def test_the_queue_wakes_its_executor_when_due_and_at_the_stop() -> None:
    queue = DeliveryQueue()
    results: list[Any] = []
    waiter = threading.Thread(target=lambda: results.append((queue.take(5.0), time.monotonic())))
    waiter.start()
    due = time.monotonic() + 0.1
    queue.put(DeliveryInputs(1, 1), due)
    waiter.join(2.0)
    (taken, at), = results
    assert taken == (due, DeliveryInputs(1, 1)) and due <= at < due + 1.0
    waiter = threading.Thread(target=lambda: results.append(queue.take(5.0)))
    start = time.monotonic()
    waiter.start()
    time.sleep(0.05)
    queue.close()
    waiter.join(2.0)
    assert results[-1] is None and time.monotonic() - start < 1.0
    queue.put(DeliveryInputs(1, 2), 0.0)  # a late terminal's request: dropped
    assert queue.dropped == 1 and queue.take(0) is None


def test_inline_mode_is_todays_terminal_and_deferred_is_configured_apart() -> None:
    wl = TpccWorkload()
    wl.configure({"delivery": "inline"})
    ctx = context("off", "inline")
    assert wl.timing_names == () and wl.background(ctx, 0, 1) == ()
    target = open_target("sqlite://")
    assert type(wl.open_session(ctx, 0, 1, target.connect(), target)) is TpccSession
    wl.configure({"delivery": "deferred", "think": "off"})
    assert wl.timing_names == ("delivery_queue", "delivery_execution")
    with pytest.raises(TpsbenchError, match="executors"):
        wl.open_session(context("off"), 0, 1, target.connect(), target)
    executors = wl.background(context("off", scale=12), 0, 1)
    assert len(executors) == deferred.MAX_EXECUTORS
    assert len(wl.background(context("off", scale=1), 0, 1)) == 1
    assert len(wl.background(context("spec", scale=12), 0, 1)) == 1
    assert isinstance(wl.open_session(context("off"), 0, 1, target.connect(), target), DeferringTerminal)
    with pytest.raises(TpsbenchError, match="delivery='later'"):
        wl.configure({"delivery": "later"})


# -- runs on the servers ---------------------------------------------------------------
@pytest.fixture(scope="module", params=[
    pytest.param("postgresql", marks=pytest.mark.postgresql),
    pytest.param("mysql", marks=pytest.mark.mysql),
])
def server(request: pytest.FixtureRequest, db_template: Callable[..., str]) -> Iterator[str]:
    """TPC-C at scale 2: test_tpcc_transactions' build (on PostgreSQL its session template, copied)."""
    yield from built_database(request.param, db_template)


def short_run(url: str, results: str, delivery: str) -> Any:
    return run(RunConfig("tpcc", url, users=[4], rampup_s=1.0, duration_s=3.0, interval_s=1.0, seed=5,
                         options={"delivery": delivery}, results_url=results), live=None)


@pytest.mark.slow
def test_deferred_run_reports_queue_and_execution_apart_and_passes_the_checks(server: str, tmp_path: Any) -> None:
    record = short_run(server, f"sqlite:///{tmp_path}/r.db", "deferred")
    assert record.status == "completed" and not record.outcome.steps[0].problems
    assert record.honesty["match"], record.honesty
    summary = record.outcome.steps[0].summary
    delivery = summary.txns["delivery"]
    assert delivery.commits > 0 and delivery.errors == 0 and delivery.latency.p90 > 0
    for name in ("delivery_queue", "delivery_execution"):
        assert summary.timings[name].count > 0, name
    # counted at each commit as the transaction is (one may fall in the interval after)
    assert abs(summary.timings["delivery_execution"].count - delivery.commits) <= 2
    assert summary.timings["delivery_execution"].p90 == pytest.approx(delivery.latency.p90, rel=0.25)
    report = render([record.store.load_run(record.run_id)])
    for row in ("delivery_queue avg (ms)", "delivery_queue p90 (ms)", "delivery_execution p90 (ms)"):
        assert row in report
    results = {r.number: r for r in check("tpcc", server)}
    assert results[11].violations is None  # holds only right after a build: skipped
    assert {n: r.violations for n, r in results.items() if n != 11 and not r.passed} == {}


@pytest.mark.slow
@pytest.mark.postgresql
def test_inline_run_has_no_timings_and_the_terminals_deliver(built_tpcc_pg: str, tmp_path: Any) -> None:
    with scratch_pg_database(built_tpcc_pg) as url:  # TPC-C scale 1
        record = short_run(url, f"sqlite:///{tmp_path}/r.db", "inline")
        assert record.status == "completed" and record.honesty["match"]
        summary = record.outcome.steps[0].summary
        assert summary.txns["delivery"].commits > 0 and summary.timings == {}
        assert "delivery_queue" not in render([record.store.load_run(record.run_id)])
