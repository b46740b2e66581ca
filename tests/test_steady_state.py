"""SNIA steady state per step: the criterion at its edges, and a real run's report saying it."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from conftest import cli_in_process, copy_of
from test_compare import steady_run
from test_export import conforms
from test_report_formats import tpsbench

from tpsbench.measure.steady_state import excursion
from tpsbench.report.export import to_dict
from tpsbench.report.steadiness import STEADY_ROW, steady_rows, steady_state_json
from tpsbench.report.table import build_table
from tpsbench.results.records import RunData
from tpsbench.results.store import ResultsStore


def spread(d: float) -> list[float]:
    """Five values around 100, max - min = 2d, least-squares slope 0."""
    return [100 + d, 100 - d, 100.0, 100 - d, 100 + d]


def ramp(s: float) -> list[float]:
    """Five values rising by ``s`` a round around 100: the fitted line rises 4s across the window."""
    return [100 + s * (x - 2) for x in range(5)]


def test_the_range_limit_flips_between_19_9_and_20_1_percent() -> None:
    inside, outside = excursion(spread(9.95)), excursion(spread(10.05))
    assert inside.range_share == pytest.approx(0.199) and inside.slope_share == pytest.approx(0.0, abs=1e-12)
    assert outside.range_share == pytest.approx(0.201)
    assert inside.steady and not outside.steady


def test_the_slope_limit_flips_between_9_9_and_10_1_percent() -> None:
    inside, outside = excursion(ramp(2.475)), excursion(ramp(2.525))
    assert inside.slope_share == pytest.approx(0.099) and outside.slope_share == pytest.approx(0.101)
    assert inside.range_share < 0.2 and outside.range_share < 0.2  # only the slope decides
    assert inside.steady and not outside.steady
    assert excursion(list(reversed(ramp(2.525)))).slope_share == pytest.approx(0.101)  # falling counts as rising


def test_the_window_is_the_last_five_and_fewer_cannot_be_judged() -> None:
    assert excursion([1.0, 500.0, *spread(5.0)]).steady  # the warm-up before the window does not count
    assert excursion(spread(5.0)[:4]) is None
    assert excursion([0.0] * 5).steady  # flat at zero: no excursion
    assert not excursion([0.0, 0.0, 0.0, 0.0, 1.0]).steady
    with pytest.raises(ValueError):
        excursion([1.0, 2.0], window=1)


def one_step(tps: list[float]) -> RunData:
    """A run of one step (10 users) with these steady intervals' TPS (p95 5 ms each)."""
    return steady_run([tps])


def test_a_step_is_said_steady_or_not_with_its_figures_in_every_table_format() -> None:
    assert steady_rows(one_step(spread(9.95)), {"10": 1}) == [(STEADY_ROW, ["steady"])]
    assert steady_rows(one_step(ramp(2.525)), {"10": 1}) == [
        (STEADY_ROW, ["not steady (TPS range 10.1%, slope 10.1%)"])]
    assert steady_rows(one_step(spread(9.95)[:4]), {"10": 1}) == [
        (STEADY_ROW, ["too few intervals to judge (4 < 5)"])]
    (block,) = build_table([one_step(spread(10.05))]).blocks
    assert block.cells[block.rows.index(STEADY_ROW)] == ["not steady (TPS range 20.1%, slope 0.0%)"]


def test_the_json_export_carries_the_judgement_and_keeps_its_schema() -> None:
    doc = to_dict([one_step(ramp(2.525)), one_step(spread(9.95)[:4])])
    assert conforms(doc) == []
    judged, few = (r["steps"][0]["steady_state"] for r in doc["runs"])
    assert judged["steady"] is False and judged["intervals"] == 5 and judged["window"] == 5
    assert judged["tps"]["slope_pct"] == pytest.approx(10.1) and judged["tps"]["steady"] is False
    assert judged["p95_ms"] == {"range_pct": 0.0, "slope_pct": 0.0, "steady": True}
    assert few == {"window": 5, "intervals": 4, "steady": None, "text": "too few intervals to judge (4 < 5)",
                   "tps": None, "p95_ms": None}
    older = to_dict([one_step(spread(1.0))])  # a version 2 document written before the key existed
    del older["runs"][0]["steps"][0]["steady_state"]
    assert conforms(older) == []


@pytest.fixture(scope="module")
def two_real_runs(built_tpcc_sqlite: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Two short TPC-C runs on SQLite through the CLI (storage A, then B), 1.5 s a step at
    0.25 s intervals: six steady intervals a step. (folder, results URL)"""
    folder = tmp_path_factory.mktemp("steady")
    results = f"sqlite:///{folder / 'results.db'}"
    for storage in ("A", "B"):
        done = tpsbench("run", "tpcc", "--db", copy_of(built_tpcc_sqlite, folder), "--users", "1,2", "--rampup",
                        "0.5s", "--duration", "1.5s", "--interval", "0.25s", "--think", "off", "--storage", storage,
                        "--results", results, cwd=folder)
        assert done.returncode == 0, done.stderr
    return folder, results


@pytest.mark.slow
def test_a_real_short_sqlite_run_reports_its_steady_state(two_real_runs: tuple[Path, str]) -> None:
    """The last five of each step's steady intervals judged, the same in every format."""
    folder, results = two_real_runs
    store = ResultsStore(results, create=False)
    data = store.load_run(max(r.id for r in store.list_runs()))
    expected = [steady_state_json(data, s.step)["text"] for s in sorted(data.steps, key=lambda s: s.users)]
    assert all(t == "steady" or t.startswith("not steady (") for t in expected), expected

    def report(fmt: str) -> str:
        out = cli_in_process("report", "--results", results, "--format", fmt, cwd=folder)
        assert out.returncode == 0, out.stderr
        return out.stdout

    rows = list(csv.reader(io.StringIO(report("csv"))))
    assert [row[3:] for row in rows if row[2] == STEADY_ROW] == [expected]
    (line,) = [line for line in report("markdown").splitlines() if f"| {STEADY_ROW} |" in line]
    assert [cell.strip() for cell in line.split("|")[3:-1]] == expected
    doc = json.loads(report("json"))
    assert [s["steady_state"]["text"] for s in doc["runs"][0]["steps"]] == expected and conforms(doc) == []
    assert STEADY_ROW in report("rich") and f"<th scope=\"row\" class=\"text\">{STEADY_ROW}</th>" in report("html")


@pytest.mark.slow
def test_compare_of_real_runs_states_the_tps_interval(two_real_runs: tuple[Path, str]) -> None:
    folder, results = two_real_runs
    out = cli_in_process("compare", "A", "B", "--results", results, cwd=folder)
    assert out.returncode == 0, out.stderr
    last = out.stdout.splitlines()[-1]
    assert re.match(r"B vs A at 2 users: [+-]\d+% TPS \(95% CI [+-]\d+(\.\d+)?% to [+-]\d+(\.\d+)?%"
                    r"(: within the noise)?\), ", last), last
    assert re.search(r"^\|\s+\| TPS 95% CI +\| +\d+\.\d\d-\d+\.\d\dx +\|", out.stdout, re.MULTILINE), out.stdout
