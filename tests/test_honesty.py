"""The honesty check's arithmetic with transactions in doubt, and the outage observer's.

The real faults (a server restarted, backends killed) are in test_server_restart.py and
test_engine.py; these pin the rules at their edges, which a fault test hits only by chance.
"""

from __future__ import annotations

import pytest

from tpsbench.measure.honesty import honesty_check, honesty_text
from tpsbench.measure.reachability import Reachability
from tpsbench.measure.reports import IntervalReport, TxnReport
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc import TpccWorkload

BEFORE = {"sum_d_next_o_id": 1000, "count_history": 500}


def step_total(new_orders: int, payments: int, doubt_new_orders: int = 0, doubt_payments: int = 0) -> IntervalReport:
    return IntervalReport(step=1, interval=0, t_start=0.0, t_end=1.0, steady=True, txns={
        "new_order": TxnReport(commits=new_orders, in_doubt=doubt_new_orders),
        "payment": TxnReport(commits=payments, in_doubt=doubt_payments),
    })


def after(new_orders: int, payments: int) -> dict[str, int]:
    return {"sum_d_next_o_id": 1000 + new_orders, "count_history": 500 + payments}


def test_without_doubt_only_the_exact_change_matches() -> None:
    wl = TpccWorkload()
    totals = [step_total(40, 30), step_total(2, 3)]
    assert honesty_check(wl, BEFORE, after(42, 33), totals)["match"] is True
    for wrong in (after(41, 33), after(43, 33), after(42, 32)):
        result = honesty_check(wl, BEFORE, wrong, totals)
        assert result["match"] is False and "in_doubt" not in result
        assert honesty_text(result).startswith("FAILED: the database changed by")
    assert honesty_text(honesty_check(wl, BEFORE, after(42, 33), totals)) == "matches"


@pytest.mark.parametrize(("new_orders", "payments", "match"), [
    (40, 30, True),   # none of the doubtful ones committed
    (43, 31, True),   # all of them did
    (41, 30, True),   # some did
    (39, 30, False),  # fewer than the driver saw committed
    (44, 30, False),  # more than even the doubtful ones explain
    (40, 32, False),
])
def test_in_doubt_transactions_widen_the_check_to_a_range(new_orders: int, payments: int, match: bool) -> None:
    wl = TpccWorkload()
    result = honesty_check(wl, BEFORE, after(new_orders, payments), [step_total(40, 30, 3, 1)])
    assert result["match"] is match
    assert result["in_doubt"] == {"new_order": 3, "payment": 1}
    assert result["most"] == {"sum_d_next_o_id": 43, "count_history": 31}


def test_the_verdict_says_how_many_were_in_doubt_and_how_many_the_database_shows() -> None:
    wl = TpccWorkload()
    text = honesty_text(honesty_check(wl, BEFORE, after(42, 30), [step_total(40, 30, 3, 1)]))
    assert text.startswith("matches: 4 transaction(s) in doubt")
    assert "(new_order 3, payment 1)" in text and "the database shows 2 change(s) of theirs" in text
    failed = honesty_text(honesty_check(wl, BEFORE, after(45, 30), [step_total(40, 30, 3, 1)]))
    assert failed.startswith("FAILED: 4 transaction(s) in doubt") and "at most" in failed
    assert honesty_text({"match": None, "skipped": "interrupted before the steps' counts were in"}) == \
        "skipped (interrupted before the steps' counts were in)"


def test_outage_readings_split_an_outage_across_the_windows_it_spans() -> None:
    observer = Reachability(open_target("sqlite://"))
    outages = [(105.0, 108.0), (112.0, None)]
    first = observer.reading((100.0, []), (106.0, outages), 6.0)
    assert first == {"down_s": 1.0, "outages": 1.0, "first_at": 105.0}
    second = observer.reading((106.0, []), (110.0, outages), 4.0)
    assert second == {"down_s": 2.0, "outages": 0.0}  # it began before this window
    third = observer.reading((110.0, []), (115.0, outages), 5.0)
    assert third == {"down_s": 3.0, "outages": 1.0, "first_at": 112.0}  # still going at the end
