"""Choosing the runs of a report, comparison or plan: ids, labels, a campaign, and the mistakes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tpsbench.commands.selection import select_runs
from tpsbench.core.errors import TpsbenchError
from tpsbench.results.store import ResultsStore


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.db'}")
    campaign = store.start_campaign("pools", {})
    for n, (label, status) in enumerate([("SSD", "completed"), ("HDD", "completed"), ("SSD", "completed"),
                                         ("HDD", "interrupted")], start=1):
        config = {"campaign": campaign, "campaign_target": 3 - n} if n in (1, 2) else {}
        run_id = store.start_run("tpcc", db_url="sqlite:///x.db", storage=label, config=config)
        store.finish_run(run_id, status)
    return store


def ids(runs: list[Any]) -> list[int]:
    return [r.run.id for r in runs]


def test_ids_campaigns_and_labels_choose_runs(store: ResultsStore) -> None:
    assert ids(select_runs(store)) == [4]  # the latest run, whatever its status
    assert ids(select_runs(store, [2, 1])) == [2, 1]
    assert ids(select_runs(store, campaign=1)) == [2, 1]  # in its targets' order
    assert ids(select_runs(store, labels=["HDD", "SSD"])) == [2, 3]  # the latest completed of each
    assert ids(select_runs(store, default="labels")) == [2, 3]
    assert ids(select_runs(store, [3], labels=["SSD"])) == [3]  # each run once


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"run_ids": [99]}, "has no run 99"),
    ({"labels": ["NVMe"]}, "no completed run for storage label(s) 'NVMe'; labels with one: 'HDD', 'SSD'"),
    ({"campaign": 7}, "has no runs of campaign 7"),
    ({"labels": ["SSD"], "workload": "sysbench"}, "labels with one: none"),
])
def test_each_mistake_is_one_line(store: ResultsStore, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(TpsbenchError) as caught:
        select_runs(store, **kwargs)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_an_empty_store_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TpsbenchError, match="has no runs yet"):
        select_runs(ResultsStore(f"sqlite:///{tmp_path / 'empty.db'}"))
