"""``--mix``: a TPC-C mix of one's own, honoured by the deck, stored with the run, and
refused in one line when it cannot be meant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import copy_of

from tpsbench.commands.run import RunConfig, run
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import parse_mix
from tpsbench.core.transactions import Deck, permuted
from tpsbench.workloads.tpcc.table import TABLE, TRANSACTIONS

ASKED = {"new_order": 50, "payment": 40, "order_status": 4, "delivery": 3, "stock_level": 3}
TEXT = ",".join(f"{name}={weight}" for name, weight in ASKED.items())


def test_the_deck_deals_the_asked_shares_exactly_per_thousand_cards() -> None:
    deck = Deck(TABLE.cards(parse_mix(TEXT, TRANSACTIONS)), permuted(np.random.default_rng(1)))
    dealt = [deck.draw() for _ in range(3000)]
    assert {name: dealt.count(name) for name in ASKED} == {name: 30 * w for name, w in ASKED.items()}


def test_weights_are_normalised_and_what_is_left_out_does_not_run() -> None:
    assert parse_mix("new_order=1, payment=3", TRANSACTIONS) == {"new_order": 0.25, "payment": 0.75}
    deck = Deck(TABLE.cards(parse_mix("payment=2.5", TRANSACTIONS)), permuted(np.random.default_rng(2)))
    assert {deck.draw() for _ in range(2000)} == {"payment"}


@pytest.mark.parametrize(("text", "needle"), [
    ("new_order=50,paymnt=50", "unknown transaction 'paymnt'; known: new_order, payment"),
    ("new_order=0", "the weight of new_order must be a positive number, got '0'"),
    ("new_order=-3", "must be a positive number, got '-3'"),
    ("new_order=lots", "must be a positive number, got 'lots'"),
    ("new_order=inf", "must be a positive number, got 'inf'"),
    ("new_order=5,new_order=5", "names new_order twice"),
    ("new_order", "NAME=WEIGHT pairs"),
    ("=5", "NAME=WEIGHT pairs"),
    (",", "NAME=WEIGHT pairs"),
])
def test_a_mix_that_cannot_be_meant_is_one_line(text: str, needle: str) -> None:
    with pytest.raises(TpsbenchError) as caught:
        parse_mix(text, TRANSACTIONS)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_run_realises_the_asked_mix_and_keeps_it(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    db, results = copy_of(built_tpcc_sqlite, tmp_path), f"sqlite:///{tmp_path / 'results.db'}"
    with pytest.raises(TpsbenchError, match="unknown transaction 'x'"):  # refused before anything is stored
        run(RunConfig(workload="tpcc", url=db, users=[2], options={"mix": "x=1"}, results_url=results),
            live=None, observers=[])
    record = run(RunConfig(workload="tpcc", url=db, users=[2], rampup_s=0.5, duration_s=4.0, interval_s=1.0,
                           options={"mix": TEXT}, results_url=results), live=None, observers=[])
    data = record.store.load_run(record.run_id)
    assert [r.id for r in record.store.list_runs()] == [record.run_id]
    assert data.run.config["options"]["mix"] == TEXT
    summary = data.steps[0].summary
    assert summary is not None and summary.total("commits") > 1000
    for name, weight in ASKED.items():
        assert summary.txns[name].mix * 100 == pytest.approx(weight, abs=1.0), name


def test_tpce_users_take_a_mix_of_their_own_and_the_market_keeps_its_transactions() -> None:
    import random

    from tpsbench.core.transactions import Deck as TpceDeck
    from tpsbench.core.transactions import shuffled_copy
    from tpsbench.workloads.tpce.table import TABLE

    deck = TpceDeck(TABLE.cards(TABLE.shares("trade_order=300,trade_status=700")), shuffled_copy(random.Random(3)))
    dealt = [deck.draw() for _ in range(2000)]
    assert (dealt.count("trade_order"), dealt.count("trade_status")) == (600, 1400)
    with pytest.raises(TpsbenchError, match="unknown transaction 'trade_result'"):
        TABLE.shares("trade_result=1")  # the market's, from the Trade-Orders
