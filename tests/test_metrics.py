"""IntervalRecorder, IntervalReport and SteadySummary: counts and latencies add up exactly."""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest

from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.recorder import BATCH, IntervalRecorder
from tpsbench.measure.reports import MAX_ERROR_SAMPLES, IntervalReport, TxnReport, live_line
from tpsbench.measure.summary import SteadySummary

NAMES = ("new_order", "payment", "order_status", "delivery", "stock_level")


def hist_of(values: list[int] | np.ndarray) -> LatencyHistogram:
    h = LatencyHistogram()
    h.record_many(np.asarray(values))
    return h


def test_take_reports_commits_rollbacks_and_latencies_then_resets() -> None:
    rec = IntervalRecorder(NAMES)
    lat = list(range(100, 100 + 3 * BATCH + 17))  # several full batches and a partial one
    for i, v in enumerate(lat):
        rec.record("new_order", v, i % 100 != 0)
    rec.record("payment", 250, True)
    report = rec.take(2, 5, 10.0, 20.0)
    no = report.txns["new_order"]
    assert (no.rollbacks, no.commits) == (len(range(0, len(lat), 100)), len(lat) - len(range(0, len(lat), 100)))
    assert no.decoded() == hist_of(lat)  # rolled-back latencies are in the histogram too
    assert report.txns["payment"].commits == 1
    assert report.txns["delivery"] == TxnReport(histogram=LatencyHistogram().encode())
    assert (report.step, report.interval, report.t_start, report.t_end, report.steady) == (2, 5, 10.0, 20.0, True)
    assert report.total("commits") == len(lat) - no.rollbacks + 1
    assert report.tps == pytest.approx(report.total("commits") / 10.0)
    again = rec.take(2, 6, 20.0, 30.0, steady=False)
    assert again.total("commits") == again.total("rollbacks") == 0 and not again.steady
    assert again.histogram().count() == 0


def test_retries_errors_reconnects_and_samples() -> None:
    rec = IntervalRecorder(NAMES)
    rec.add("payment", "retries", 3)
    rec.add("payment", "reconnects")
    rec.add("delivery", "reconnects", 2)
    rec.add("delivery", "in_doubt", 2)
    # the engine counts an error with add() and keeps its message with error(): counted once
    rec.add("payment", "errors")
    rec.error("payment", "deadlock detected\nDETAIL: process 1 waits")
    rec.add("payment", "errors")
    rec.error("payment", "deadlock detected\nDETAIL: process 2 waits")
    # error() alone still counts
    rec.error("stock_level", "")
    report = rec.take(1, 0, 0.0, 1.0)
    assert report.txns["payment"].retries == 3
    assert report.txns["payment"].errors == 2
    assert report.txns["stock_level"].errors == 1
    assert report.reconnects == 3
    assert report.txns["delivery"].in_doubt == 2 and report.total("in_doubt") == 2
    merged = rec.take(1, 1, 1.0, 2.0)
    merged.merge(report)
    assert merged.total("in_doubt") == 2 and SteadySummary.from_reports([report], users=1).total("in_doubt") == 2
    assert report.errors == [("payment", "deadlock detected"), ("stock_level", "(no message)")]
    assert report.error_counts[("payment", "deadlock detected")] == 2


def test_error_samples_are_bounded_but_errors_all_counted() -> None:
    rec = IntervalRecorder(NAMES)
    for i in range(MAX_ERROR_SAMPLES + 30):
        rec.add("payment", "errors")
        rec.error("payment", f"error number {i}")
    report = rec.take(1, 0, 0.0, 1.0)
    assert len(report.errors) == MAX_ERROR_SAMPLES
    assert report.txns["payment"].errors == MAX_ERROR_SAMPLES + 30


def test_bad_calls_are_refused() -> None:
    rec = IntervalRecorder(NAMES)
    with pytest.raises(ValueError, match="unknown transaction"):
        rec.record("neworder", 5, True)
    with pytest.raises(ValueError, match="bool"):
        rec.record("payment", 5, None)  # type: ignore[arg-type]  # a wrong type on purpose: what the recorder does with it is tested
    with pytest.raises(ValueError, match="kind"):
        rec.add("payment", "deadlocks")
    with pytest.raises(ValueError, match="unknown transaction"):
        rec.error("nope", "x")
    with pytest.raises(ValueError):
        IntervalRecorder([])
    # a latency that is no number is not caught on the hot path, but take() still works
    rec.record("payment", "12", True)  # type: ignore[arg-type]  # a wrong type on purpose: what the recorder does with it is tested
    rec.record("payment", None, True)  # type: ignore[arg-type]  # a wrong type on purpose: what the recorder does with it is tested
    rec.record("payment", 7, True)
    h = rec.take(1, 0, 0.0, 1.0).txns["payment"].decoded()
    assert (h.count(), h.clipped, h.min()) == (3, 1, 7.0)


def test_concurrent_users_lose_nothing_while_intervals_are_taken() -> None:
    rec = IntervalRecorder(NAMES)
    users, per_user = 8, 12_000
    stop = threading.Event()
    reports: list[IntervalReport] = []

    def user(uid: int) -> None:
        for i in range(per_user):
            rec.record(NAMES[i % 5], 100 + uid, i % 50 != 0)

    def coordinator() -> None:
        n = 0
        while not stop.is_set():
            time.sleep(0.05)
            reports.append(rec.take(1, n, 0.0, 1.0))
            n += 1

    taker = threading.Thread(target=coordinator)
    taker.start()
    threads = [threading.Thread(target=user, args=(u,)) for u in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    taker.join()
    reports.append(rec.take(1, 999, 0.0, 1.0))
    total = reports[0]
    for r in reports[1:]:
        total.merge(r)
    assert total.total("commits") + total.total("rollbacks") == users * per_user
    assert total.total("rollbacks") == users * len(range(0, per_user, 50))
    expected = hist_of(np.repeat(np.arange(100, 100 + users), per_user))
    assert total.histogram() == expected


def test_reports_pickle_and_merge_like_one_recorder() -> None:
    a, b, both = IntervalRecorder(NAMES), IntervalRecorder(NAMES), IntervalRecorder(NAMES)
    rng = np.random.default_rng(7)
    for i, v in enumerate(rng.integers(50, 500_000, 9000).tolist()):
        name, ok = NAMES[i % 5], i % 97 != 0
        (a if i % 3 else b).record(name, v, ok)
        both.record(name, v, ok)
    a.add("payment", "retries", 2)
    b.add("payment", "retries", 5)
    b.add("payment", "reconnects")
    ra = pickle.loads(pickle.dumps(a.take(3, 1, 100.0, 110.0)))
    rb = pickle.loads(pickle.dumps(b.take(3, 1, 100.2, 110.1)))
    ra.merge(rb)
    whole = both.take(3, 1, 100.0, 110.0)
    for name in NAMES:
        assert ra.txns[name].decoded() == whole.txns[name].decoded()
        assert ra.txns[name].histogram == whole.txns[name].histogram
        assert (ra.txns[name].commits, ra.txns[name].rollbacks) == (whole.txns[name].commits,
                                                                    whole.txns[name].rollbacks)
    assert ra.txns["payment"].retries == 7 and ra.reconnects == 1
    assert (ra.t_start, ra.t_end) == (100.0, 110.1)
    assert ra.statements == {}  # nobody counted statements
    ra.statements, rb.statements = {"read": 5, "write": 1}, {"read": 2, "other": 4}
    ra.merge(rb)
    assert ra.statements == {"read": 7, "write": 1, "other": 4} and rb.statements == {"read": 2, "other": 4}
    with pytest.raises(ValueError):
        ra.merge(IntervalReport(step=4, interval=1, t_start=0, t_end=1, steady=True))


def make_report(step: int, interval: int, t0: float, t1: float, steady: bool,
                data: dict[str, tuple[list[int], int]], **extra: int) -> IntervalReport:
    """A report whose transactions have the given latencies and rollback counts."""
    txns = {name: TxnReport(commits=len(lat) - rb, rollbacks=rb, histogram=hist_of(lat).encode(),
                            retries=extra.get("retries", 0), errors=extra.get("errors", 0))
            for name, (lat, rb) in data.items()}
    return IntervalReport(step=step, interval=interval, t_start=t0, t_end=t1, steady=steady, txns=txns,
                          reconnects=extra.get("reconnects", 0))


def test_step_summary_uses_steady_intervals_and_counts_each_interval_once() -> None:
    rng = np.random.default_rng(11)
    no = [rng.integers(1000, 90_000, 600).tolist() for _ in range(4)]
    pay = [rng.integers(300, 20_000, 500).tolist() for _ in range(4)]
    reports = [
        make_report(2, 0, 0.0, 10.0, False, {"new_order": ([10**7] * 50, 0)}),  # ramp-up: left out
        # interval 1 from two workers, interval 2 from two workers
        make_report(2, 1, 10.0, 20.0, True, {"new_order": (no[0], 6), "payment": (pay[0], 0)}, retries=1),
        make_report(2, 1, 10.1, 19.9, True, {"new_order": (no[1], 4), "payment": (pay[1], 0)}, reconnects=2),
        make_report(2, 2, 20.0, 30.0, True, {"new_order": (no[2], 5), "payment": (pay[2], 0)}, errors=3),
        make_report(2, 2, 20.0, 30.0, True, {"new_order": (no[3], 5), "payment": (pay[3], 0)}),
    ]
    s = SteadySummary.from_reports(reports, users=20)
    assert (s.step, s.users, s.intervals) == (2, 20, 2)
    assert s.seconds == pytest.approx(20.0)  # not 40: workers' reports of an interval overlap
    no_commits = 4 * 600 - 20
    assert s.txns["new_order"].commits == no_commits and s.txns["new_order"].rollbacks == 20
    assert s.tps == pytest.approx((no_commits + 4 * 500) / 20.0)
    assert s.tpm_by_txn["new_order"] == pytest.approx(no_commits * 60 / 20.0)  # tpmC: commits only
    assert s.mix["new_order"] == pytest.approx(2400 / 4400)
    assert sum(s.mix.values()) == pytest.approx(1.0)
    assert (s.total("retries"), s.total("errors"), s.reconnects) == (2, 6, 2)
    everything = np.concatenate([np.concatenate(no), np.concatenate(pay)])
    assert s.histograms["*"] == hist_of(everything)
    ordered = np.sort(everything)
    for field, p in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99), ("p999", 99.9)):
        exact = ordered[int(p * everything.size / 100 + 0.5) - 1] / 1000.0
        assert exact <= getattr(s.latency, field) <= exact * 1.001 + 0.001
    assert s.latency.mean == pytest.approx(everything.mean() / 1000.0, rel=1e-3)
    assert s.latency.max == pytest.approx(everything.max() / 1000.0, rel=1e-3)
    assert s.txns["payment"].latency.p99 < s.txns["new_order"].latency.p99
    assert s.latency.count == everything.size


def test_step_summary_refuses_mixed_steps_and_handles_no_steady_interval() -> None:
    a = make_report(1, 0, 0.0, 10.0, True, {"payment": ([5], 0)})
    b = make_report(2, 0, 0.0, 10.0, True, {"payment": ([5], 0)})
    with pytest.raises(ValueError):
        SteadySummary.from_reports([a, b], users=1)
    empty = SteadySummary.from_reports([make_report(3, 0, 0.0, 10.0, False, {"payment": ([5], 0)})], users=4)
    assert (empty.step, empty.tps, empty.seconds, empty.latency.p95, empty.txns) == (3, 0.0, 0.0, 0.0, {})


def test_step_statements_are_the_steady_intervals_and_qps_splits_them() -> None:
    reports = [make_report(1, i, i * 10.0, i * 10.0 + 10, i > 0, {"payment": ([300], 0)}) for i in range(3)]
    for i, report in enumerate(reports):
        report.statements = {"read": 1000 * (i + 1), "write": 10 * (i + 1), "other": i}
    s = SteadySummary.from_reports(reports, users=2)
    assert s.statements == {"read": 5000, "write": 50, "other": 3}  # the ramp-up's are left out
    assert s.qps == pytest.approx({"read": 250.0, "write": 2.5, "other": 0.15, "total": 252.65})
    assert SteadySummary.from_reports(reports[:1] + [make_report(1, 1, 10.0, 20.0, True, {})], users=2).qps == {}


def test_summary_dict_round_trip() -> None:
    reports = [make_report(1, i, i * 5.0, i * 5.0 + 5, True, {"new_order": ([1000 + i, 2000], 1),
                                                            "payment": ([300], 0)}) for i in range(3)]
    reports[1].statements = {"read": 7, "write": 3}
    s = SteadySummary.from_reports(reports, users=8)
    back = SteadySummary.from_dict(pickle.loads(pickle.dumps(s.to_dict())))
    assert back == s and back.statements == {"read": 7, "write": 3}
    data = s.to_dict()
    del data["statements"]  # a step stored before statements were counted
    assert SteadySummary.from_dict(data).statements == {}
    assert back.txns["new_order"].latency == s.txns["new_order"].latency
    assert back.histograms == {}


def test_live_line_reads_like_sysbench() -> None:
    report = make_report(1, 0, 100.0, 110.0, True,
                         {"new_order": ([12_000] * 95 + [40_000] * 10, 0), "payment": ([1_000] * 23, 0)},
                         retries=1, errors=0)
    report.txns["payment"].retries = 1
    report.reconnects = 1
    assert live_line(report, 20, 10.0) == (
        "[ 10s ] users: 20 tps: 12.8 p95: 40.0 ms errors: 0 retries: 2 reconnects: 1")
    report.statements = {"read": 1400, "write": 400, "other": 256}
    assert live_line(report, 20, 10.0) == (
        "[ 10s ] users: 20 tps: 12.8 qps: 205.6 (r/w/o: 140.0/40.0/25.6) p95: 40.0 ms errors: 0 retries: 2 "
        "reconnects: 1")


def test_a_latency_appended_to_a_swapped_list_lands_in_the_next_interval() -> None:
    """The race record() can lose to take(): the user fetched the list just before the swap."""
    rec = IntervalRecorder(NAMES)
    rec.record("payment", 10, True)
    stale = rec._bufs["payment"][True]  # what record() holds between its lookup and its append
    first = rec.take(1, 0, 0.0, 1.0)
    stale.append(777)
    second = rec.take(1, 1, 1.0, 2.0)
    third = rec.take(1, 2, 2.0, 3.0)
    assert first.txns["payment"].decoded() == hist_of([10])
    assert second.txns["payment"].decoded() == hist_of([777])
    assert third.txns["payment"].commits == 0
