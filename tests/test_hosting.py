"""The connecting threads of a multiplexed step (tpsbench.engine.hosting.Connector): jobs run
at their time in order, by a few threads that end once nothing is left, and at the step's
end whatever is left runs at once."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

from tpsbench.engine.hosting import CONNECT_THREADS, Connector


def connecting() -> int:
    return sum(thread.name == "connecting" for thread in threading.enumerate())


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_jobs_run_at_their_time_in_order_and_the_threads_end_after() -> None:
    connector = Connector(threading.Event())
    ran: list[tuple[int, float]] = []
    start = time.monotonic() + 0.1
    for n in range(40):  # submitted out of order: run in the order of their times
        at = start + (39 - n) * 0.01
        connector.submit(at, lambda n=39 - n, at=at: ran.append((n, time.monotonic() - at)))
    assert connecting() <= CONNECT_THREADS
    wait_for(lambda: len(ran) == 40 and connecting() == 0)
    assert [n for n, _ in ran] == list(range(40))
    assert all(late >= 0 for _, late in ran)  # never before its time
    assert connecting() == 0  # nothing left to do: no thread kept


def test_at_the_stop_what_is_left_runs_at_once() -> None:
    stop = threading.Event()
    connector = Connector(stop)
    ran: list[int] = []
    for n in range(5):
        connector.submit(time.monotonic() + 60, lambda n=n: ran.append(n))
    stop.set()
    connector.wake()
    wait_for(lambda: len(ran) == 5)
    assert sorted(ran) == list(range(5))


def test_slow_jobs_start_more_threads_while_the_next_are_overdue() -> None:
    connector = Connector(threading.Event())
    release = threading.Event()
    started: list[int] = []

    def blocking(n: int) -> None:
        started.append(n)
        release.wait(5)

    for n in range(CONNECT_THREADS + 8):  # all due now, each blocking until released
        connector.submit(time.monotonic(), functools.partial(blocking, n))
    wait_for(lambda: len(started) == CONNECT_THREADS + 8)
    assert len(started) == CONNECT_THREADS + 8  # more threads than it starts with, none waiting its turn
    release.set()
    wait_for(lambda: connecting() == 0)
