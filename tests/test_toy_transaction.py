"""Adding a transaction to TPC-C takes one module (tpcc_toy.py) and one table entry: the
extended workload runs it through the real engine (spawned workers, the generic session's
deck, paths and measurement) on SQLite and PostgreSQL, beside the five, and commits it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tpcc_toy
from conftest import copy_of

from tpsbench.core.meta import read_meta
from tpsbench.core.session import RunContext
from tpsbench.core.transactions import Transaction
from tpsbench.engine.coordinator import run_steps
from tpsbench.engine.steps import LoadStep
from tpsbench.targets import open_target
from tpsbench.workloads.tpcc import TpccWorkload
from tpsbench.workloads.tpcc.table import TRANSACTIONS

#: the one table entry: ten cards beside TPC-C's hundred
TOY = Transaction("warehouse_ytd", 10, tpcc_toy.user_inputs, run=tpcc_toy.execute, call=tpcc_toy.call,
                  answer=tpcc_toy.answer, keying_s=1.0, think_s=2.0)


def toy_workload(options: dict[str, str]) -> TpccWorkload:
    """TPC-C with the toy transaction in its table."""
    workload = TpccWorkload()
    workload.table = workload.table.extended(TOY)
    workload.transaction_names = workload.table.names
    workload.configure(options)
    return workload


@pytest.fixture(params=[
    pytest.param(("sqlite", "off"), id="sqlite"),
    # a run each, of some seconds: the quick lane runs SQLite's
    pytest.param(("postgresql", "on"), marks=[pytest.mark.postgresql, pytest.mark.slow], id="postgresql-procedures"),
    pytest.param(("postgresql", "off"), marks=[pytest.mark.postgresql, pytest.mark.slow], id="postgresql-statements"),
])
def case(request: pytest.FixtureRequest, tmp_path: Path, built_tpcc_sqlite: Path) -> Iterator[tuple[str, str]]:
    """(a TPC-C database's URL, the run option procedures)."""
    backend, procedures = request.param
    if backend == "sqlite":
        yield copy_of(built_tpcc_sqlite, tmp_path), procedures
    else:
        yield request.getfixturevalue("tpcc_pg_url"), procedures


def test_a_toy_transaction_added_by_one_module_and_one_entry_commits(case: tuple[str, str]) -> None:
    url, procedures = case
    options = {"think": "off", "procedures": procedures}
    workload = toy_workload(options)
    target = open_target(url)
    meta = read_meta(target, "tpcc")
    workload.prepare_run(target, options, users=1)
    constants = {k.removeprefix("const_"): int(v) for k, v in meta.items() if k.startswith("const_")}
    ctx = RunContext("tpcc", url, int(meta["scale"]), 3, constants, options)

    # the generic session sends it by the path the run picked, as it sends the five
    conn = target.connect()
    try:
        session = workload.open_session(ctx, 0, 1, conn, target)
        assert session.table is workload.table and "warehouse_ytd" in session.table
        assert ("warehouse_ytd" in session.calls) == (procedures == "on")
        assert session.one_statement == (procedures == "on")
        dealt = [session.next_transaction() for _ in range(2 * 110)]
        assert dealt.count("warehouse_ytd") == 20 and dealt.count("new_order") == 90
    finally:
        conn.close()

    outcome = run_steps(ctx, workload, [LoadStep(users=2, duration_s=1.5, rampup_s=0.5, interval_s=0.5)],
                        live=None)
    step = outcome.steps[0]
    assert not step.problems and step.summary is not None
    txns = step.summary.txns
    assert txns["warehouse_ytd"].commits > 0 and txns["warehouse_ytd"].errors == 0
    assert all(txns[name].errors == 0 for name in txns) and txns["new_order"].commits > 0
    assert set(TRANSACTIONS) < set(workload.transaction_names)
