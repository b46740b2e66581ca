"""Every report format carries the numbers of the results store, read back from each.

It is also the test of a concurrent campaign on two servers (tpsbench.commands.campaign).

One real concurrent campaign over two configurations (PostgreSQL and MariaDB, built and
run at the same time by ``tpsbench campaign --concurrent``), then ``tpsbench report``
in rich, Markdown, CSV, JSON and HTML, each parsed back and compared figure by figure
with the store's own records: TPS, average and percentile latency, tpmC, errors and
the I/O rows, to the precision each format prints.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import cli_in_process, scratch_mysql_database, scratch_pg_database

from tpsbench.measure.summary import SteadySummary
from tpsbench.report.table import main_metric, run_labels
from tpsbench.results.records import RunData
from tpsbench.results.schema import SCHEMA_VERSION, store_info_table
from tpsbench.results.store import ResultsStore

pytestmark = pytest.mark.slow

CAMPAIGN = """name = "two pools"
workload = "tpcc"
scale = 1
users = [1, 3]
rampup = "0.5s"
duration = "2s"
interval = "0.5s"
[options]
think = "off"
[[target]]
db = "{pg}"
storage = "pool <PG>"
[[target]]
db = "{mysql}"
storage = "pool MariaDB"
"""
#: (report row, its value in a stored step: summary and the observers' steady readings)
FIGURES: dict[str, Any] = {
    "TPS": lambda s, r: s.tps,
    "Resp. time (s)": lambda s, r: s.latency.mean / 1000,
    "avg (ms)": lambda s, r: s.latency.mean,
    "p95 (ms)": lambda s, r: s.latency.p95,
    "p99 (ms)": lambda s, r: s.latency.p99,
    "max (ms)": lambda s, r: s.latency.max,
    "tpmC": lambda s, r: (main_metric("tpcc", s) or ("", 0.0))[1],
    "Errors": lambda s, r: s.total("errors"),
    "Expected rollbacks": lambda s, r: s.total("rollbacks"),
    "IOPS": lambda s, r: r["disk_io"]["total.r_s"] + r["disk_io"]["total.w_s"],
    "new_order TPS": lambda s, r: s.txns["new_order"].commits / s.seconds,
    "payment p95 (ms)": lambda s, r: s.txns["payment"].latency.p95,
}


def tpsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[RunData]]]:
    """The campaign's folder (with its results store) and its runs as the store has them."""
    folder = tmp_path_factory.mktemp("formats")
    with scratch_pg_database() as pg, scratch_mysql_database() as mysql:
        (folder / "pools.toml").write_text(CAMPAIGN.format(pg=pg, mysql=mysql))
        result = tpsbench("campaign", "pools.toml", "--concurrent", cwd=folder)
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.rstrip().endswith("campaign 1: completed")
        assert "[pool <PG>] run" in result.stdout and "[pool MariaDB] run" in result.stdout  # each child relayed
        relayed = [line for line in result.stdout.splitlines() if line.startswith("[pool ")]
        assert not any("TPS" in line and "step" not in line for line in relayed), relayed  # but no table of its own
        assert "[pool <PG>] build tpcc" in result.stderr and "[pool MariaDB] build tpcc" in result.stderr
        store = ResultsStore(f"sqlite:///{folder / 'tpsbench-results.db'}", create=False)
        runs = [store.load_run(r.id) for r in store.campaign_runs(1)]
        yield folder, runs


def stored(runs: list[RunData]) -> dict[tuple[str, str], dict[str, float]]:
    """(label, users column) -> report row -> the store's value."""
    out = {}
    for data, label in zip(runs, run_labels(runs)):
        for step in data.steps:
            summary = step.summary
            assert isinstance(summary, SteadySummary)
            readings = data.readings(step.step)
            out[(label, str(step.users))] = {row: float(get(summary, readings)) for row, get in FIGURES.items()}
    return out


def agrees(text: str, value: float, row: str) -> bool:
    """Whether ``text`` is ``value`` as printed: to its last digit, whole numbers truncated."""
    number = float(text.replace(",", ""))
    if row in ("IOPS", "Errors", "Expected rollbacks"):
        return int(value) == number
    decimals = len(text.partition(".")[2])
    return abs(number - value) <= 0.5 * 10 ** -decimals + 1e-9


def check(cells: dict[tuple[str, str, str], str], runs: list[RunData]) -> None:
    """Every figure of the store is in ``cells`` ((label, row, users) -> text) as printed."""
    expected = stored(runs)
    assert len(expected) == 4  # two configurations, two user loads each
    for (label, users), figures in expected.items():
        for row, value in figures.items():
            text = cells[(label, row, users)]
            assert agrees(text, value, row), (label, users, row, text, value)


def grid(header: list[str], rows: list[list[str]]) -> dict[tuple[str, str, str], str]:
    """(label, row, users) -> text of a table whose first columns are label and metric and
    whose label is given only on each block's first row."""
    cells, label = {}, ""
    for row in rows:
        label = row[0] or label
        for users, text in zip(header[2:], row[2:]):
            cells[(label, row[1], users)] = text
    return cells


def test_all_five_formats_carry_the_stores_numbers(campaign: tuple[Path, list[RunData]]) -> None:
    folder, runs = campaign
    assert [d.run.storage for d in runs] == ["pool <PG>", "pool MariaDB"]
    assert all(d.run.status == "completed" and d.run.honesty and d.run.honesty["match"] for d in runs)
    assert abs((runs[0].run.started_at - runs[1].run.started_at).total_seconds()) < 20  # at the same time

    def report(fmt: str, *more: str) -> str:
        result = cli_in_process("report", "--campaign", "1", "--txns", "--format", fmt, *more, cwd=folder)
        assert result.returncode == 0, result.stderr
        return result.stdout

    text = report("markdown")
    lines = [[c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")] for line in text.splitlines()]
    check(grid(lines[0], lines[2:]), runs)

    rows = list(csv.reader(io.StringIO(report("csv"))))
    check(grid(rows[0][:1] + rows[0][2:], [r[:1] + r[2:] for r in rows[1:]]), runs)

    lines = report("rich").splitlines()
    header = next([c.strip() for c in line.split("┃")[1:-1]] for line in lines if "┃" in line)
    body = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if "│" in line]
    check(grid(header, body), runs)

    document = json.loads(report("json"))
    assert document["schema"] == "tpsbench-report/2"
    for data, out in zip(runs, document["runs"]):
        assert out["label"] == data.run.storage and out["honesty"] == data.run.honesty
        for step, exported in zip(data.steps, out["steps"]):
            assert step.summary is not None
            assert SteadySummary.from_dict(exported["summary"]) == step.summary  # every figure, exactly
            assert exported["readings"] == data.readings(step.step)
            assert len(exported["intervals"]) == len([i for i in data.intervals if i.step == step.step])

    page = folder / "pools.html"
    assert report("html", "--output", str(page)) == ""
    parser = TableReader()
    parser.feed(page.read_text())
    header, *html_rows = parser.rows
    check(grid(header, [[""] + r if len(r) == len(header) - 1 else r for r in html_rows]), runs)
    assert "pool &lt;PG&gt;" in page.read_text() and "pool <PG>" not in page.read_text()


class TableReader(HTMLParser):
    """The text of each row of the page's first table (the review table)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.depth = 0
        self.done = False
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.done:
            return
        if tag == "table":
            self.depth += 1
        elif tag == "tr" and self.depth:
            self.rows.append([])
        elif tag in ("td", "th") and self.depth:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None
        elif tag == "table" and self.depth:
            self.done = True

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def test_compare_a_campaign_says_it_as_a_review_with_the_stores_figures(
        campaign: tuple[Path, list[RunData]]) -> None:
    folder, runs = campaign
    result = cli_in_process("compare", "--campaign", "1", cwd=folder)
    assert result.returncode == 0, result.stderr
    base, other = (stored([d]) for d in runs)
    at = {row: other[("pool MariaDB", "3")][row] / base[("pool <PG>", "3")][row] for row in ("TPS", "avg (ms)")}
    sentence = result.stdout.rstrip().splitlines()[-1]
    assert sentence.startswith("pool MariaDB vs pool <PG> at 3 users: ")  # the baseline named, the largest load
    parts = [re.fullmatch(r"([+-]\d+%) ([^(]+?)(?: \((.+)\))?", part)
             for part in sentence.split(": ", 1)[1].split(", ")]
    said = {m[2]: m[1] for m in parts if m is not None}
    assert said["TPS"] == f"{round((at['TPS'] - 1) * 100):+d}%"
    ci = next(m[3] for m in parts if m is not None and m[2] == "TPS")  # 4 steady intervals a step: enough
    assert re.fullmatch(r"95% CI [+-]\d+(\.\d+)?% to [+-]\d+(\.\d+)?%(: within the noise)?", ci), ci
    assert said["avg latency"] == f"{round((at['avg (ms)'] - 1) * 100):+d}%"
    ratios = next(line for line in result.stdout.splitlines() if line.startswith("| pool MariaDB vs pool <PG>"))
    cells = [c.strip() for c in ratios.strip("|").split("|")]
    assert cells[1] == "TPS" and cells[3] == f"{at['TPS']:.2f}x"  # the ratio at 3 users


def newer_store(folder: Path) -> None:
    url = f"sqlite:///{folder / 'tpsbench-results.db'}"
    ResultsStore(url)
    with sa.create_engine(url).begin() as conn:
        conn.execute(store_info_table.update().values(value=str(SCHEMA_VERSION + 1)))


@pytest.mark.parametrize(("store", "command", "needle"), [
    # each case through another reading command: they choose runs alike (select_runs)
    ("none", ["report", "--format", "html", "--output", "r.html"], "has no runs yet"),
    ("empty", ["plan"], "has no runs yet"),
    ("newer", ["compare"], "written by a newer tpsbench"),
    ("one", ["report", "99", "--format", "json"], "has no run 99"),
    ("one", ["plan", "--campaign", "7"], "has no runs of campaign 7"),
    ("one", ["compare", "NVMe"], "no completed run for storage label(s) 'NVMe'"),
    ("one", ["report", "--storage", "NVMe", "--format", "html", "--output", "r.html"], "labels with one: 'SSD'"),
])
def test_what_a_report_cannot_show_is_one_line(tmp_path: Path, store: str, command: list[str], needle: str) -> None:
    if store == "empty":
        ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}")
    elif store == "newer":
        newer_store(tmp_path)
    elif store == "one":
        results = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}")
        results.finish_run(results.start_run("tpcc", db_url="sqlite:///x.db", storage="SSD"), "completed")
    result = cli_in_process(*command, cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert not (tmp_path / "r.html").exists()
    assert (tmp_path / "tpsbench-results.db").exists() == (store != "none")  # a reader creates no store
