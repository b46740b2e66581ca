"""The storage-review table: loads across, one block per run, three output formats."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.summary import LatencyStats, SteadySummary, TxnSummary
from tpsbench.report.table import build_table, main_metric, render
from tpsbench.results.store import ResultsStore, Run, RunData, StoredStep

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def summary(users: int, tps: float, resp_s: float, new_orders: int = 0, seconds: float = 60.0,
            name: str = "new_order", **counts: int) -> SteadySummary:
    lat = LatencyStats(count=100, mean=resp_s * 1000, p50=resp_s * 900, p90=resp_s * 1500, p95=resp_s * 1800,
                       p99=resp_s * 2500, p999=resp_s * 4000, max=resp_s * 9000)
    txns = {name: TxnSummary(name=name, commits=new_orders, rollbacks=counts.get("rollbacks", 0),
                             retries=counts.get("retries", 0), errors=counts.get("errors", 0),
                             tpm=new_orders * 60 / seconds, latency=lat)}
    return SteadySummary(step=users, users=users, seconds=seconds, intervals=6, tps=tps,
                       reconnects=counts.get("reconnects", 0), latency=lat, txns=txns)


def run(run_id: int, storage: str, steps: list[SteadySummary | tuple[int, None]], workload: str = "tpcc",
        status: str = "completed") -> RunData:
    records = []
    for i, s in enumerate(steps, 1):
        if isinstance(s, tuple):
            records.append(StoredStep(step=i, users=s[0], rampup_s=0, duration_s=60, summary=None))
        else:
            records.append(StoredStep(step=i, users=s.users, rampup_s=0, duration_s=60, summary=s))
    return RunData(run=Run(id=run_id, workload=workload, started_at=T0, ended_at=T0, status=status,
                           storage=storage), steps=records)


#: two drives of a published one-database-per-drive TPC-C review
DRIVES = [
    run(1, 'ENT 10K V3 2.5"', [summary(1, 14.8, 0.0), summary(20, 50.9, 0.4), summary(50, 30.3, 1.6),
                               summary(100, 39.9, 1.7)]),
    run(2, "ENT 15K V4 2.5\"", [summary(1, 19.7, 0.0), summary(20, 119.8, 0.1), summary(50, 75.3, 0.6),
                                summary(100, 69.2, 1.0)]),
]


def test_markdown_has_the_shape_of_the_published_review() -> None:
    lines = render(DRIVES, format="markdown", review=True).splitlines()
    assert lines[0] == "| Storage configuration | metric | 1 | 20 | 50 | 100 |"
    assert lines[1] == "|---|---|---:|---:|---:|---:|"
    assert lines[2] == '| ENT 10K V3 2.5" | TPS | 14.8 | 50.9 | 30.3 | 39.9 |'
    assert lines[3] == "|  | Resp. time (s) | 0.0 | 0.4 | 1.6 | 1.7 |"
    second = lines.index('| ENT 15K V4 2.5" | TPS | 19.7 | 119.8 | 75.3 | 69.2 |')
    assert lines[second + 1] == "|  | Resp. time (s) | 0.0 | 0.1 | 0.6 | 1.0 |"
    assert len(lines) == 2 + 2 * 2
    lines = render(DRIVES, format="markdown").splitlines()
    second = lines.index('| ENT 15K V4 2.5" | TPS | 19.7 | 119.8 | 75.3 | 69.2 |')
    assert lines[3] == "|  | Resp. time (s) | 0 | 0.40 | 1.6 | 1.7 |"
    rows = [line.split("|")[2].strip() for line in lines[2:second]]
    assert rows == ["TPS", "Resp. time (s)", "avg (ms)", "p50 (ms)", "p90 (ms)", "p95 (ms)", "p99 (ms)",
                    "p99.9 (ms)", "max (ms)", "tpmC", "Expected rollbacks", "Retries", "Errors", "Reconnects"]
    assert len(lines) == 2 + 2 * len(rows)
    p95 = next(line for line in lines if "| p95 (ms) |" in line)
    assert p95 == "|  | p95 (ms) | 0 | 720 | 2880 | 3060 |"


def test_review_format_is_the_two_published_rows_alone() -> None:
    table = build_table(DRIVES, review=True)
    assert [b.rows for b in table.blocks] == [["TPS", "Resp. time (s)"]] * 2


def test_response_time_has_the_precision_that_makes_it_non_zero() -> None:
    fast = run(3, "NVMe", [summary(1, 900.0, 0.0042), summary(20, 800.0, 0.0381), summary(50, 700.0, 0.4),
                           summary(100, 60.0, 1.64), summary(300, 50.0, 12.34)])
    cells = dict(zip(build_table([fast]).blocks[0].rows, build_table([fast]).blocks[0].cells))
    assert cells["Resp. time (s)"] == ["0.0042", "0.038", "0.40", "1.6", "12.3"]
    review = build_table([fast], review=True).blocks[0].cells[1]
    assert review == ["0.0", "0.0", "0.4", "1.6", "12.3"]


def test_per_transaction_rows_only_when_asked_in_the_workloads_order() -> None:
    step = summary(20, 100.0, 0.05, new_orders=2700, seconds=60.0)
    step.txns["payment"] = TxnSummary(name="payment", commits=2400, errors=3, mix=0.43,
                                      latency=LatencyStats(count=2400, mean=12.5, p95=30.0, p99=41.0))
    step.txns["new_order"].mix = 0.45
    data = run(4, "SSD", [step])
    assert not any("payment" in row for row in build_table([data]).blocks[0].rows)
    block = build_table([data], txns=True).blocks[0]
    cells = {row: c[0] for row, c in zip(block.rows, block.cells)}
    names = [row for row in block.rows if row.startswith(("new_order", "payment"))]
    assert names[0] == "new_order TPS" and names[-1] == "payment errors"
    assert cells["new_order TPS"] == "45.0" and cells["payment TPS"] == "40.0"
    assert cells["new_order mix (%)"] == "45.0" and cells["payment mix (%)"] == "43.0"
    assert cells["payment avg (ms)"] == "12.5" and cells["payment p99 (ms)"] == "41.0"
    assert cells["payment errors"] == "3"


def test_loads_are_the_union_of_all_runs_and_missing_cells_stay_empty() -> None:
    a = run(1, "A", [summary(1, 10.0, 0.1), summary(50, 40.0, 0.2)])
    b = run(2, "B", [summary(20, 30.0, 0.3), (100, None)], status="interrupted")
    table = build_table([a, b])
    assert table.columns == ["1", "20", "50", "100"]
    assert table.blocks[0].cells[0] == ["10.0", "", "40.0", ""]
    assert table.blocks[1].cells[0] == ["", "30.0", "", ""]
    assert table.blocks[1].label == "B [interrupted]"


def test_main_metric_counts_new_order_commits_per_minute() -> None:
    s = summary(20, 100.0, 0.1, new_orders=2700, seconds=60.0, name="New-Order", rollbacks=27)
    assert main_metric("tpcc", s) == ("tpmC", pytest.approx(2700.0))
    assert main_metric("sysbench", s) is None
    table = build_table([run(1, "X", [s])])
    rows = dict(zip(table.blocks[0].rows, table.blocks[0].cells))
    assert rows["tpmC"] == ["2700.0"]
    assert rows["Expected rollbacks"] == ["27"]
    sysbench = build_table([run(2, "Y", [summary(4, 900.0, 0.004)], workload="sysbench")])
    assert "tpmC" not in sysbench.blocks[0].rows


def test_counts_rows() -> None:
    s = summary(8, 50.0, 0.05, retries=4, errors=2, reconnects=1)
    rows = dict(zip(*[(b.rows, b.cells) for b in build_table([run(1, "Z", [s])]).blocks][0]))
    assert (rows["Retries"], rows["Errors"], rows["Reconnects"]) == (["4"], ["2"], ["1"])


def test_same_storage_label_twice_and_repeated_loads_are_told_apart() -> None:
    a = run(3, "SSD", [summary(10, 1.0, 0.1), summary(10, 2.0, 0.1)])
    b = run(4, "SSD", [summary(10, 3.0, 0.1)])
    table = build_table([a, b])
    assert table.columns == ["10", "10 #2"]
    assert [blk.label for blk in table.blocks] == ["SSD (run 3)", "SSD (run 4)"]
    assert table.blocks[0].cells[0] == ["1.0", "2.0"]
    assert table.blocks[1].cells[0] == ["3.0", ""]


def test_csv_labels_every_row() -> None:
    rows = list(csv.reader(io.StringIO(render(DRIVES, format="csv"))))
    assert rows[0] == ["storage", "run", "metric", "1", "20", "50", "100"]
    tps = [r for r in rows[1:] if r[2] == "TPS"]
    assert tps == [['ENT 10K V3 2.5"', "1", "TPS", "14.8", "50.9", "30.3", "39.9"],
                   ['ENT 15K V4 2.5"', "2", "TPS", "19.7", "119.8", "75.3", "69.2"]]
    assert all(r[0] and r[1] for r in rows[1:])


def test_rich_rendering_for_terminals() -> None:
    text = render(DRIVES, format="rich")
    assert "Storage configuration" in text and "ENT 15K V4" in text
    tps_lines = [line for line in text.splitlines() if " TPS " in line]
    assert len(tps_lines) == 2 and "119.8" in tps_lines[1]
    with pytest.raises(ValueError):
        render(DRIVES, format="html")


def test_qps_rows_split_statements_like_sysbench_and_only_where_counted() -> None:
    counted = summary(8, 1000.0, 0.008, name="oltp_read_write", seconds=10.0)
    counted.statements = {"read": 140_000, "write": 40_000, "other": 20_000}
    plain = run(2, "tpcc on NVMe", [summary(8, 50.0, 0.1)])
    table = build_table([run(1, "NVMe", [counted], workload="sysbench"), plain])
    sb, tpcc = (dict(zip(b.rows, b.cells)) for b in table.blocks)
    assert (sb["QPS"], sb["QPS read"], sb["QPS write"], sb["QPS other"]) == (["20000.0"], ["14000.0"],
                                                                             ["4000.0"], ["2000.0"])
    assert "QPS" not in tpcc and "tpmC" in tpcc


def test_report_of_runs_loaded_from_the_store(tmp_path: Path) -> None:
    store = ResultsStore(f"sqlite:///{tmp_path / 'r.db'}")
    names = ("new_order", "payment")
    ids = []
    for storage, scale in (("HDD", 8.0), ("NVMe", 1.0)):
        run_id = store.start_run("tpcc", db_url="sqlite:///t.db", storage=storage)
        for number, users in enumerate((1, 10), 1):
            rec = IntervalRecorder(names)
            for i, v in enumerate(np.random.default_rng(users).integers(1000, 5000, 600 * users).tolist()):
                rec.record(names[i % 2], int(v * scale), True)
            report = rec.take(number, 0, 0.0, 10.0)
            report.statements = {"read": 3000 * users, "write": 1000 * users, "other": 0}
            store.add_interval(run_id, report, users)
            store.finish_step(run_id, number, SteadySummary.from_reports([report], users))
        store.finish_run(run_id, "completed")
        ids.append(run_id)
    loaded = [store.load_run(i) for i in ids]
    text = render(loaded, format="markdown")
    assert "| HDD | TPS | 60.0 | 600.0 |" in text
    assert "| NVMe | TPS | 60.0 | 600.0 |" in text
    assert "|  | tpmC | 1800.0 | 18000.0 |" in text
    assert "|  | QPS | 400.0 | 4000.0 |" in text and "|  | QPS write | 100.0 | 1000.0 |" in text
    hdd, nvme = (dict(zip(b.rows, b.cells)) for b in build_table(loaded).blocks)
    assert float(hdd["p95 (ms)"][0]) == pytest.approx(8 * float(nvme["p95 (ms)"][0]), rel=0.01)
