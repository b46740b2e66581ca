"""Keying, think and interarrival times: their spellings, the shape of what users draw
(Kolmogorov-Smirnov over 10,000 draws), and real runs that wait as told."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import copy_of
from scipy import stats

from tpsbench.commands.run import RunConfig, run
from tpsbench.core.delays import Delay, parse_delay, waits_of
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext, Session
from tpsbench.engine.pacing import PACING

DRAWS = 10_000


class Waiting(Session):
    """A session that only waits: its keying and think times are the engine's draws."""

    def next_transaction(self) -> str:
        return "t"

    def inputs(self, name: str) -> object:
        return None


def draws(options: dict[str, str], which: str = "think", user: int = 0) -> np.ndarray:
    session = Waiting(RunContext("x", "sqlite://", 1, 42, options=options), user, 1, None, None)  # type: ignore[arg-type]  # no connection nor target: drawing the waits touches neither
    draw = session.think_time if which == "think" else session.keying_time
    return np.array([draw("t") for _ in range(DRAWS)])


@pytest.mark.parametrize(("text", "delay"), [
    ("off", Delay("off")), ("spec", Delay("spec")), ("fixed:2s", Delay("fixed", mean=2.0)),
    ("uniform:1s..3s", Delay("uniform", mean=2.0, low=1.0, high=3.0)),
    ("negexp:500ms", Delay("negexp", mean=0.5)), ("NegExp:2s,cap=4x", Delay("negexp", mean=2.0, cap=4.0)),
])
def test_spellings(text: str, delay: Delay) -> None:
    assert parse_delay(text) == delay


@pytest.mark.parametrize(("text", "needle"), [
    ("sometimes", "--think takes off, spec, fixed:2s"), ("fixed", "needs a duration"),
    ("fixed:soon", "duration must look like"), ("uniform:3s..1s", "LOW <= HIGH"), ("uniform:1s", "LOW <= HIGH"),
    ("negexp:2s,cap=0.5x", "at least 1"), ("negexp:2s,limit=3", "cap=10x"), ("off:2s", "takes no value"),
])
def test_bad_spellings_are_one_line(text: str, needle: str) -> None:
    with pytest.raises(TpsbenchError) as caught:
        parse_delay(text)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_keying_follows_think_spec_and_interarrival_has_none() -> None:
    assert waits_of({"think": "spec"}).keying.kind == "spec"
    assert waits_of({"think": "fixed:1s"}).keying.kind == "off"
    assert not waits_of({}).around and waits_of({"keying": "fixed:1s"}).around
    with pytest.raises(TpsbenchError, match="--interarrival has no spec"):
        waits_of({"interarrival": "spec"})


def test_uniform_draws_are_uniform() -> None:
    values = draws({"think": "uniform:1s..3s"})
    assert values.min() >= 1 and values.max() <= 3 and values.mean() == pytest.approx(2.0, rel=0.02)
    assert stats.kstest(values, "uniform", args=(1.0, 2.0)).pvalue > 0.01


def test_negative_exponential_draws_are_exponential_and_cut_at_the_cap() -> None:
    values = draws({"keying": "negexp:2s"}, which="keying")
    assert values.mean() == pytest.approx(2.0, rel=0.05) and values.max() <= 20.0
    assert stats.kstest(values, "expon", args=(0.0, 2.0)).pvalue > 0.01
    capped = draws({"think": "negexp:2s,cap=3x"})
    at_cap = capped == 6.0
    assert at_cap.mean() == pytest.approx(math.exp(-3), abs=0.01)  # P(X > 3 means)
    below = capped[~at_cap]  # the rest: an exponential cut at the cap

    def cut(x: Any) -> Any:
        return stats.expon.cdf(x, scale=2.0) / stats.expon.cdf(6.0, scale=2.0)

    assert stats.kstest(below, cut).pvalue > 0.01


def test_fixed_waits_are_fixed_and_each_user_draws_its_own_stream() -> None:
    assert set(draws({"think": "fixed:250ms"}).tolist()) == {0.25}
    one, other = draws({"think": "negexp:1s"}, user=0), draws({"think": "negexp:1s"}, user=1)
    assert not np.array_equal(one, other) and np.array_equal(one, draws({"think": "negexp:1s"}, user=0))


@pytest.fixture(scope="module")
def tpcc_db(built_tpcc_sqlite: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of the session's TPC-C database, shared by this module's runs."""
    return copy_of(built_tpcc_sqlite, tmp_path_factory.mktemp("delays"))


def one_step(url: str, tmp_path: Path, **options: str) -> Any:
    config = RunConfig(workload="tpcc", url=url, users=[2], rampup_s=0.5, duration_s=3.0, interval_s=1.0,
                       options=options, results_url=f"sqlite:///{tmp_path / 'results.db'}", force=True)
    record = run(config, live=None, observers=[])
    return record.store.load_run(record.run_id)


@pytest.mark.slow
def test_a_run_waits_as_told(tpcc_db: str, tmp_path: Path) -> None:
    data = one_step(tpcc_db, tmp_path, think="fixed:50ms", keying="fixed:50ms")
    summary = data.steps[0].summary
    # each of 2 users: 100 ms of waiting and a few ms of work per transaction: at most 20 a second
    assert summary is not None and 15 < summary.tps + summary.total("rollbacks") / summary.seconds <= 20
    assert summary.latency.p50 < 50  # the waits are never part of a latency


@pytest.mark.slow
def test_interarrival_paces_each_user(tpcc_db: str, tmp_path: Path) -> None:
    data = one_step(tpcc_db, tmp_path, interarrival="fixed:40ms")
    pacing = data.readings(1)[PACING]
    assert pacing["offered_per_s"] == pytest.approx(50.0, rel=0.05)  # 2 users, one each every 40 ms
    assert pacing["achieved_per_s"] == pytest.approx(pacing["offered_per_s"], rel=0.05)
    assert "service_time" in data.steps[0].summary.timings


def test_waits_that_fight_each_other_are_refused(tpcc_db: str, tmp_path: Path) -> None:
    with pytest.raises(TpsbenchError, match="--interarrival schedules each user's transactions"):
        one_step(tpcc_db, tmp_path, interarrival="fixed:1s", think="fixed:1s")
    with pytest.raises(TpsbenchError, match="sysbench has no keying or think times of its own"):
        run(RunConfig(workload="sysbench", url="sqlite://", options={"think": "spec"}), live=None, observers=[])
