"""TPC-C runs end to end: engine, results store, honesty check, consistency after."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import copy_of, users_that_fit

from tpsbench.commands.build import build
from tpsbench.commands.check import check
from tpsbench.commands.run import RunConfig, run
from tpsbench.core.errors import TpsbenchError
from tpsbench.workloads.tpcc.table import WEIGHTS


def short_run(url: str, results: str, users: list[int], **overrides: object) -> object:
    config = RunConfig("tpcc", url, users=users, rampup_s=0.5, duration_s=2.0, interval_s=1.0, seed=3,
                       results_url=results, storage="test pool", options={"think": "off"})
    for key, value in overrides.items():
        setattr(config, key, value)
    return run(config, live=None)


def assert_consistent_after_run(url: str) -> None:
    results = {r.number: r for r in check("tpcc", url)}
    assert results[11].violations is None  # skipped: only holds right after a build
    failed = {n: r.violations for n, r in results.items() if n != 11 and not r.passed}
    assert not failed


def test_sqlite_run_records_steps_and_is_honest(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    sqlite_url = copy_of(built_tpcc_sqlite, tmp_path)
    results = f"sqlite:///{tmp_path}/results.db"
    record = short_run(sqlite_url, results, [1, 3])
    assert record.status == "completed"
    assert record.honesty["match"], record.honesty
    assert record.honesty["actual"]["sum_d_next_o_id"] > 0
    data = record.store.load_run(record.run_id)
    assert [s.users for s in data.steps] == [1, 3]
    assert data.run.storage == "test pool" and data.run.seed == 3
    assert all(s.summary is not None and s.summary.tps > 0 for s in data.steps)
    assert_consistent_after_run(sqlite_url)


@pytest.mark.slow
def test_mix_is_within_one_point_of_target(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    sqlite_url = copy_of(built_tpcc_sqlite, tmp_path)
    record = short_run(sqlite_url, f"sqlite:///{tmp_path}/r.db", [4], duration_s=5.0)  # > 2,000 on a busy host
    summary = record.outcome.steps[0].summary
    total = sum(t.commits + t.rollbacks for t in summary.txns.values())
    assert total > 2000
    for name, weight in WEIGHTS.items():
        txn = summary.txns[name]
        share = 100.0 * (txn.commits + txn.rollbacks) / total
        assert abs(share - weight) <= 1.0, (name, share)
    new_order = summary.txns["new_order"]
    assert new_order.rollbacks > 0 and new_order.errors == 0  # the 1% is expected, not an error


def test_run_without_build_is_refused_in_one_line(sqlite_url: str, tmp_path) -> None:
    with pytest.raises(TpsbenchError, match="no tpcc database"):
        short_run(sqlite_url, f"sqlite:///{tmp_path}/r.db", [1])


@pytest.mark.slow
@pytest.mark.alone  # most of the server's connections
@pytest.mark.parametrize("server", ["pg_url", "mysql_url"])
def test_server_runs_pass_checks_and_honesty(server: str, request: pytest.FixtureRequest, tmp_path) -> None:
    url = request.getfixturevalue(server)
    build("tpcc", 4, url, loaders=2, show_progress=False)
    most = users_that_fit(url, 100, least=20)  # 100 where the server has the room
    users = sorted({min(n, most) for n in (1, 20, 50, 100)})
    record = short_run(url, f"sqlite:///{tmp_path}/r.db", users, duration_s=1.0, interval_s=0.5)
    assert record.status == "completed"
    assert record.honesty["match"], record.honesty
    steps = record.store.load_run(record.run_id).steps
    assert [s.users for s in steps] == users
    assert all(s.summary.total("errors") == 0 for s in steps), [(s.users, s.summary.total("errors")) for s in steps]
    assert_consistent_after_run(url)
