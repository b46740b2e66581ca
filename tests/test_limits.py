"""Verdicts and I/O per transaction of real runs, read back from the results store.

Two short TPC-C runs on copies of one SQLite database, as two storage configurations:
the I/O per transaction of a step equals its device counters' delta over the steady
window divided by the commits in it (summed from the stored intervals, which the step's
figures are not computed from); the "Limited by" row and the verdict are in every
format of ``tpsbench report``; and ``compare`` warns that the difference is not the
storage's until one step's stored readings say the storage was the limit.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from conftest import copy_of

from tpsbench.cli.main import main
from tpsbench.measure.step_context import KINDS
from tpsbench.measure.summary import SteadySummary
from tpsbench.report.limits import LIMITED_BY, PER_TXN, not_storage_warning, run_verdicts, step_io
from tpsbench.results.records import Run, RunData, StoredObservation, StoredStep
from tpsbench.results.store import ResultsStore

#: the stored steady-window rate of each I/O per transaction figure
RATES = {"reads": "total.r_s", "writes": "total.w_s", "read_kB": "total.r_kB_s", "written_kB": "total.w_kB_s"}
WARNING = "no step was limited by storage"
#: I/Os in a step's steady window enough for its figures to be checked interval by interval,
#: and the I/Os each figure is made of
MANY_IOS = 1000
IOS_OF = {"reads": "total.r_s", "read_kB": "total.r_s", "writes": "total.w_s", "written_kB": "total.w_s"}


def tpsb(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    """``tpsbench ARGS`` in this process (reading commands start faster so): stdout, stderr."""
    try:
        main(list(args))
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    return capsys.readouterr()


def tpsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    done = subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, built_tpcc_sqlite: Path) -> tuple[Path, str]:
    """The folder and results URL of two one-step runs, "pool A" and "pool B"."""
    folder = tmp_path_factory.mktemp("limits")
    results = f"sqlite:///{folder / 'results.db'}"
    for pool in ("A", "B"):
        url = copy_of(built_tpcc_sqlite, folder, f"tpcc_{pool}.db")
        done = tpsbench("run", "tpcc", "--db", url, "--users", "2", "--rampup", "1s", "--duration", "4s",
                        "--interval", "1s", "--think", "off", "--storage", f"pool {pool}", "--results", results,
                        cwd=folder)
        said = [line for line in done.stderr.splitlines() if line.startswith("step 1 limited by: ")]
        assert len(said) == 1, done.stderr
    return folder, results


@pytest.mark.alone  # the device's writes: a neighbour's would count too
@pytest.mark.slow
def test_io_per_transaction_is_the_device_delta_over_the_commits_of_the_steady_window(
        two_runs: tuple[Path, str]) -> None:
    _, results = two_runs
    data = ResultsStore(results, create=False).load_run(1)
    step = data.steps[0]
    assert step.summary is not None
    found = step_io("tpcc", step.summary, data.readings(1))
    steady = [i for i in data.intervals if i.step == 1 and i.steady]
    commits = sum(i.commits for i in steady)
    assert commits == step.summary.commits > 0
    steady_rates = data.readings(1)["disk_io"]

    def by_interval(figure: str) -> float:
        return sum(data.readings(1, i.interval)["disk_io"][figure] * (i.t_end - i.t_start) for i in steady)

    new_orders = step.summary.txns["new_order"].commits
    checked = 0
    for name, rate in RATES.items():
        # the step's steady-window delta: its stored rate times the window's seconds
        delta = steady_rates[rate] * step.summary.seconds
        assert found[PER_TXN][name] == pytest.approx(delta / commits, rel=0.01), name
        assert found["new_order"][name] == pytest.approx(delta / new_orders, rel=0.01), name
        # the same delta again from each steady interval's own reading times its length: the
        # window the rates were read over is the one the commits were counted in (only for
        # figures of many I/Os: a few dozen reads in a burst make a sample's lateness count)
        if by_interval(IOS_OF[name]) >= MANY_IOS:
            assert found[PER_TXN][name] == pytest.approx(by_interval(rate) / commits, rel=0.01), name
            checked += 1
    assert checked >= 2  # TPC-C writes: at least writes and KB written


@pytest.mark.slow
def test_the_limited_by_row_is_in_every_format(two_runs: tuple[Path, str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _, results = two_runs
    verdict = run_verdicts(ResultsStore(results, create=False).load_run(1))[1]
    assert verdict.kind in KINDS and verdict.figures
    report = ["report", "1", "--results", results, "--format"]
    rich = tpsb(capsys, *report, "rich")[0]
    assert LIMITED_BY in rich and f"limited by: {verdict.text}" in " ".join(rich.split())
    assert f"| {LIMITED_BY} | {verdict.short} |" in tpsb(capsys, *report, "markdown")[0]
    rows = list(csv.reader(io.StringIO(tpsb(capsys, *report, "csv")[0])))
    assert [r[3] for r in rows if r[2] == LIMITED_BY] == [verdict.short]
    assert any(r[2] == "KB written / txn" for r in rows) and any(r[2] == "Writes / new_order" for r in rows)
    step = json.loads(tpsb(capsys, *report, "json")[0])["runs"][0]["steps"][0]
    assert step["verdict"]["kind"] == verdict.kind and step["verdict"]["text"] == verdict.text
    assert step["io_per_txn"][PER_TXN]["writes"] > 0
    page = tpsb(capsys, *report, "html")[0]
    assert LIMITED_BY in page and "What limited each step" in page and html.escape(verdict.short) in page


@pytest.mark.slow
def test_compare_warns_until_a_step_was_limited_by_storage(two_runs: tuple[Path, str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, results = two_runs
    store = ResultsStore(results, create=False)
    kinds = {run_verdicts(store.load_run(n))[1].kind for n in (1, 2)}
    assert "storage" not in kinds  # a TPC-C database of 1 warehouse on a page-cached file
    said = tpsb(capsys, "compare", "1", "2", "--results", results)[0]
    assert "WARNING: these configurations differ by up to " in said and WARNING in said
    assert WARNING in tpsb(capsys, "report", "1", "2", "--results", results)[0]
    assert WARNING in tpsb(capsys, "report", "1", "2", "--results", results, "--format", "csv")[1]
    assert WARNING in tpsb(capsys, "report", "1", "2", "--results", results, "--format", "html")[0]
    assert WARNING not in tpsb(capsys, "report", "1", "--results", results)[0]  # one run: no comparison

    # run 2's step as if its sessions had waited on a saturated device most of the time
    data = store.load_run(2)
    step = data.steps[0]
    assert step.summary is not None
    device = next(n.rpartition(".")[0] for n in data.readings(1)["disk_io"] if not n.startswith("total."))
    readings = data.readings(1)
    readings["disk_io"] |= {f"{device}.util_pct": 99.0, f"{device}.aqu_sz": 4.0}
    readings["db_waits"] = {"io_pct": 85.0, "cpu_pct": 10.0}
    histograms = {txn: store.load_histogram(2, 1, txn) for txn in [*step.summary.txns, "*"]}
    store.finish_step(2, 1, step.summary, histograms={k: h for k, h in histograms.items() if h is not None},
                      observations=readings)
    assert run_verdicts(store.load_run(2))[1].kind == "storage"
    assert WARNING not in tpsb(capsys, "compare", "1", "2", "--results", results)[0]
    assert WARNING not in tpsb(capsys, "report", "1", "2", "--results", results, "--format", "html")[0]


@pytest.mark.alone  # the verdict reads the host's CPU: a neighbour's would be other processes'
@pytest.mark.slow
def test_a_paced_run_well_below_capacity_is_limited_by_its_rate(tmp_path: Path, built_tpcc_sqlite: Path) -> None:
    from tpsbench.commands.run import RunConfig, run

    said: list[str] = []
    record = run(RunConfig("tpcc", copy_of(built_tpcc_sqlite, tmp_path), users=[2], rampup_s=1.0, duration_s=3.0,
                           interval_s=1.0, rates=[20.0], options={"think": "off"},
                           results_url=f"sqlite:///{tmp_path / 'results.db'}"), live=said.append)
    found = run_verdicts(record.store.load_run(record.run_id))[1]
    assert found.kind == "rate" and found.text.startswith("the paced rate: the database kept up, offered ")
    assert f"step 1 limited by: {found.text}" in said


def _compared(run_id: int, tps: dict[int, float]) -> RunData:
    """A stored run by hand: one step per user load with its TPS, and idle host CPU readings."""
    steps = [StoredStep(n, users, 1.0, 10.0, SteadySummary(step=n, users=users, seconds=10.0, intervals=10, tps=t))
             for n, (users, t) in enumerate(tps.items(), start=1)]
    return RunData(Run(run_id, "tpcc", datetime(2026, 1, 1), datetime(2026, 1, 1), "completed", f"pool {run_id}"),
                   steps, observations=[StoredObservation(s.step, None, "host_cpu", "idle", 80.0) for s in steps])


def test_the_compare_warning_s_spread_leaves_out_a_load_where_a_run_committed_nothing() -> None:
    """A run that committed nothing at a load differs from the other by no ratio: not "0 %"."""
    said = not_storage_warning([_compared(1, {2: 100.0, 4: 150.0}), _compared(2, {2: 0.0, 4: 100.0})])
    assert said is not None and said.startswith("these configurations differ by up to 50% TPS but "), said
    none = not_storage_warning([_compared(1, {2: 100.0}), _compared(2, {2: 0.0})])
    assert none is not None and none.startswith("these configurations differ in TPS (one committed nothing) "), none
