"""The storage-review table: user loads across, one block of metric rows per run.

Why this shape: it is the table storage reviewers publish: one column per user load,
rows ``TPS`` and ``Resp. time (s)`` with one decimal, one block per storage
configuration, blocks side by side. We add what those tables lack and readers ask for:
latency percentiles, the workload's main metric (tpmC), queries per second split as
sysbench splits them (for workloads whose sessions count statements), timings that are
not transactions (a deferred Delivery's queue time), the host's CPU beside every step,
and the rollbacks, retries, errors and reconnects that tell whether a step's figures can
be trusted.

Everything here is a pure function of :class:`~tpsbench.results.records.RunData`, so the
same data renders identically for a terminal (rich), a review (Markdown) and a
spreadsheet (CSV).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from tpsbench.engine.pacing import PACING
from tpsbench.measure.db_counters import DatabaseCounters
from tpsbench.measure.disk_io import DiskIo
from tpsbench.measure.honesty import honesty_text
from tpsbench.measure.host_cpu import FIGURES as CPU_FIGURES
from tpsbench.measure.host_cpu import HostCpu
from tpsbench.measure.reachability import Reachability
from tpsbench.measure.summary import SteadySummary, TxnSummary
from tpsbench.report.limits import limit_rows, verdict_lines
from tpsbench.report.outages import outage_lines
from tpsbench.report.repeats import Histograms, is_repeated, repeat_cells, repeat_columns, repeat_observer_rows
from tpsbench.report.steadiness import steady_rows
from tpsbench.report.warmup import warmup_rows
from tpsbench.results.records import RunData
from tpsbench.results.schema import BEFORE_STEP, PROBLEM
from tpsbench.workloads import workload_classes

FORMATS = ("rich", "markdown", "csv")
STORAGE_HEADER = "Storage configuration"
METRIC_HEADER = "metric"


def _key(name: str) -> str:
    """Transaction names compare without case or punctuation: New-Order = new_order."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def main_metric(workload: str, summary: SteadySummary) -> tuple[str, float] | None:
    """(label, value) of the workload's headline metric in a step (its ``main_metric``), or
    None if it has none or is not installed here."""
    cls = workload_classes().get(workload)
    known = cls.main_metric if cls is not None else None
    if known is None:
        return None
    label, txn, per = known
    found: TxnSummary | None = next((t for n, t in summary.txns.items() if _key(n) == _key(txn)), None)
    value = (found.commits * per / summary.seconds) if found is not None and summary.seconds else 0.0
    return label, value


def _one(v: float) -> str:
    return f"{v:.1f}"


def _seconds(v: float) -> str:
    """Seconds with one decimal, or as many more as two significant digits need: a 4 ms
    response time reads 0.0040, not the 0.0 of a review's one-decimal table."""
    if v <= 0:
        return "0"
    return f"{v:.{max(1, 1 - math.floor(math.log10(v)))}f}"


def _ms(v: float) -> str:
    """Milliseconds with three significant digits, enough for 0.1% histograms."""
    if v == 0:
        return "0"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def _int(v: float) -> str:
    return str(int(v))


#: (row label, value of a step summary, formatter); the main metric is inserted after them
Row = tuple[str, Callable[[SteadySummary], float], Callable[[float], str]]
ROWS: list[Row] = [
    ("TPS", lambda s: s.tps, _one),
    ("Resp. time (s)", lambda s: s.latency.mean / 1000.0, _seconds),
    ("avg (ms)", lambda s: s.latency.mean, _ms),
    ("p50 (ms)", lambda s: s.latency.p50, _ms),
    ("p90 (ms)", lambda s: s.latency.p90, _ms),
    ("p95 (ms)", lambda s: s.latency.p95, _ms),
    ("p99 (ms)", lambda s: s.latency.p99, _ms),
    ("p99.9 (ms)", lambda s: s.latency.p999, _ms),
    ("max (ms)", lambda s: s.latency.max, _ms),
]
#: the published review's rows (storage-reviews.md section 1): TPS and seconds, one decimal
REVIEW_ROWS: list[Row] = [("TPS", lambda s: s.tps, _one), ("Resp. time (s)", lambda s: s.latency.mean / 1000.0, _one)]
#: (row label suffix, figure of one transaction type) of the per-transaction rows (--txns)
TXN_ROWS: list[tuple[str, Callable[[TxnSummary, SteadySummary], float], Callable[[float], str]]] = [
    ("TPS", lambda t, s: t.commits / s.seconds if s.seconds else 0.0, _one),
    ("mix (%)", lambda t, s: 100.0 * t.mix, _one),
    ("avg (ms)", lambda t, s: t.latency.mean, _ms),
    ("p95 (ms)", lambda t, s: t.latency.p95, _ms),
    ("p99 (ms)", lambda t, s: t.latency.p99, _ms),
    ("errors", lambda t, s: t.errors, _int),
]
#: sysbench's "queries performed" split, as rates: shown for runs whose sessions count statements
QPS_KINDS = ("total", "read", "write", "other")
COUNT_ROWS: list[tuple[str, Callable[[SteadySummary], float]]] = [
    ("Expected rollbacks", lambda s: s.total("rollbacks")),
    ("Retries", lambda s: s.total("retries")),
    ("Errors", lambda s: s.total("errors")),
    ("Reconnects", lambda s: s.reconnects),
]
#: transactions lost with their connection (tpsbench.measure.honesty): a row where a run had some
IN_DOUBT_ROW: tuple[str, Callable[[SteadySummary], float]] = ("In doubt", lambda s: s.total("in_doubt"))
#: a figure of one observer's readings, or a sum of several (IOPS = reads + writes per second)
Figure = tuple[str, ...]
#: (row label, observer, figures summed, scale, formatter, shown only where some step's value
#: is not 0); the storage's rows are the database's devices as a whole (DiskIo's "total")
OBSERVER_ROWS: list[tuple[str, str, Figure, float, Callable[[float], str], bool]] = [
    ("IOPS", DiskIo.name, ("total.r_s", "total.w_s"), 1.0, _int, False),
    ("MB/s", DiskIo.name, ("total.r_kB_s", "total.w_kB_s"), 1 / 1024, _one, False),
    ("Device read latency (ms)", DiskIo.name, ("total.r_await_ms",), 1.0, _ms, False),
    ("Device write latency (ms)", DiskIo.name, ("total.w_await_ms",), 1.0, _ms, False),
    ("Device util (%)", DiskIo.name, ("total.util_pct",), 1.0, _one, False),
    ("Buffer hit (%)", DatabaseCounters.name, ("buffer_hit_pct",), 1.0, _one, False),
    *((f"Host CPU {figure} (%)", HostCpu.name, (figure,), 1.0, _one, False) for figure in CPU_FIGURES),
    ("Outage (s)", Reachability.name, ("down_s",), 1.0, _one, True),
    ("Offered rate (/s)", PACING, ("offered_per_s",), 1.0, _one, False),
    ("Achieved rate (/s)", PACING, ("achieved_per_s",), 1.0, _one, False),
    ("Queue at end", PACING, ("queue_end",), 1.0, _int, False),
]


@dataclass
class Block:
    """One run's rows: ``cells[i][j]`` is row i at user-load column j ("" where not run)."""

    label: str
    run_id: int
    rows: list[str]
    cells: list[list[str]]


@dataclass
class ReportTable:
    """The whole table: user-load column labels and one block per run."""

    columns: list[str]
    blocks: list[Block]


def _columns(data: RunData) -> list[tuple[str, SteadySummary | None, int]]:
    """(column label, summary, step number) per step in users order; repeated loads get
    "#2", "#3"; a run of ``--repeat``: per load of its list, its first repeat's."""
    if is_repeated(data):
        return [(c.label, c.steps[0].summary, c.steps[0].step) for c in repeat_columns(data)]
    seen: dict[int, int] = {}
    out = []
    for step in sorted(data.steps, key=lambda s: (s.users, s.step)):
        seen[step.users] = seen.get(step.users, 0) + 1
        label = str(step.users) if seen[step.users] == 1 else f"{step.users} #{seen[step.users]}"
        out.append((label, step.summary, step.step))
    return out


def _timing_rows(summaries: Sequence[SteadySummary]) -> list[Row]:
    """Mean and p90 of each timing the steps have (a deferred Delivery's queue time)."""
    names = list(dict.fromkeys(name for s in summaries for name in s.timings))
    return [row for name in names for row in (
        (f"{name} avg (ms)", lambda s, n=name: s.timings[n].mean if n in s.timings else 0.0, _ms),
        (f"{name} p90 (ms)", lambda s, n=name: s.timings[n].p90 if n in s.timings else 0.0, _ms))]


def _txn_rows(workload: str, summaries: Sequence[SteadySummary]) -> list[Row]:
    """TPS, realised mix, latency and errors of each transaction type, in the workload's
    report order (types it does not list after, as the steps name them)."""
    cls = workload_classes().get(workload)
    seen = list(dict.fromkeys(name for s in summaries for name in s.txns))
    known = [n for n in (cls.transaction_names if cls is not None else ()) if n in seen]
    names = known + [n for n in seen if n not in known]

    def value(get: Callable[[TxnSummary, SteadySummary], float], name: str) -> Callable[[SteadySummary], float]:
        return lambda s: get(s.txns[name], s) if name in s.txns else 0.0

    return [(f"{name} {label}", value(get, name), fmt) for name in names for label, get, fmt in TXN_ROWS]


def _rows(data: RunData, summaries: Sequence[SteadySummary], txns: bool) -> list[Row]:
    """The summary rows of one run's block: latency, its main metric, QPS where its sessions
    count statements, timings, counts, and each transaction type's rows when asked."""
    rows = list(ROWS)
    metric = next((main_metric(data.run.workload, s) for s in summaries), None)
    if metric is not None:
        rows.append((metric[0], lambda s, w=data.run.workload: (main_metric(w, s) or ("", 0.0))[1], _one))  # type: ignore[misc]  # a lambda's bound default is past mypy's inference
    if any(s.statements for s in summaries):
        rows += [("QPS" if kind == "total" else f"QPS {kind}", lambda s, k=kind: s.qps.get(k, 0.0), _one)  # type: ignore[misc]  # a lambda's bound default is past mypy's inference
                 for kind in QPS_KINDS]
    rows += _timing_rows(summaries)
    rows += [(name, get, _int) for name, get in COUNT_ROWS]
    if any(s.total("in_doubt") for s in summaries):
        rows.append((IN_DOUBT_ROW[0], IN_DOUBT_ROW[1], _int))
    if txns:
        rows += _txn_rows(data.run.workload, summaries)
    return rows


def _observer_rows(data: RunData, steps: dict[str, int]) -> list[tuple[str, list[str]]]:
    """The observers' readings over each step's steady window where the run has them (outages only
    where a step had one: a clean run's table stays short; the restarts of ``--cache cold`` before
    each step), what limited each step first and the I/O per transaction last (tpsbench.report.limits)."""
    readings = {label: data.readings(step) for label, step in steps.items()}
    rows = []
    for name, observer, figures, scale, fmt, if_any in OBSERVER_ROWS:
        values = {label: scale * sum(r[observer][f] for f in figures) for label, r in readings.items()
                  if all(f in r.get(observer, {}) for f in figures)}
        if values and (any(values.values()) or not if_any):
            rows.append((name, [fmt(values[label]) if label in values else "" for label in steps]))
    before = {label: data.readings(step, BEFORE_STEP).get(Reachability.name, {}) for label, step in steps.items()}
    if any("down_s" in figures for figures in before.values()):  # --cache cold: each step's restart before it
        rows.append(("Restart before (s)", [_one(f["down_s"]) if "down_s" in f else "" for f in before.values()]))
    if data.run.status == "published":  # tpsbench.results.references: its IOPS alone, no verdict
        return rows
    limited, per_txn = limit_rows(data, steps, _ms)
    return limited + steady_rows(data, steps) + rows + _worker_host_rows(readings) + per_txn


#: (row label, host_cpu figure, value shown) of each worker host's rows
_WORKER_HOST_ROWS: list[tuple[str, str, Callable[[float], float]]] = [
    ("CPU busy (%)", "idle", lambda idle: 100.0 - idle), ("driver CPU (%)", "driver", lambda share: share)]


def _worker_host_rows(readings: dict[str, dict[str, dict[str, float]]]) -> list[tuple[str, list[str]]]:
    """Each Dask worker host's CPU (tpsbench.engine.dask.worker: ``host_cpu@HOST``): how busy
    the host was and the driver's share of it, which tells whether a client machine, not
    the database, was the limit."""
    hosts = sorted({name for r in readings.values() for name in r if name.startswith(f"{HostCpu.name}@")})
    rows = []
    for name in hosts:
        host = name.partition("@")[2]
        for label, figure, value in _WORKER_HOST_ROWS:
            values = {column: value(r[name][figure]) for column, r in readings.items() if figure in r.get(name, {})}
            if values:
                rows.append((f"Worker host {host} {label}", [_one(values[c]) if c in values else "" for c in readings]))
    return rows


def run_labels(runs: Sequence[RunData]) -> list[str]:
    """A label per run: its storage configuration, made unique, with an unfinished status."""
    base = [r.run.storage or f"run {r.run.id}" for r in runs]
    labels = []
    for data, label in zip(runs, base):
        if base.count(label) > 1 and label != f"run {data.run.id}":
            label = f"{label} (run {data.run.id})"
        if data.run.status != "completed":
            label = f"{label} [{data.run.status}]"
        labels.append(label)
    return labels


def build_table(runs: Sequence[RunData], *, review: bool = False, txns: bool = False,
                histograms: Histograms | None = None) -> ReportTable:
    """The report's cells as text, the same for every output format.

    ``review``: only the published review's two rows, TPS and response time in seconds
    with one decimal (a 40 ms response time then reads 0.0, as it does in the reviews);
    ``txns``: each transaction type's rows under the run's own. A run of ``--repeat``
    shows each figure over its repeats (tpsbench.report.repeats; its percentiles from the
    stored ``histograms(run id, step, txn)`` merged, where given).
    """
    per_run = [_columns(r) for r in runs]
    order: dict[str, tuple[int, int]] = {}
    for cols in per_run:
        for label, _, _ in cols:
            users, _, nth = label.partition(" #")
            order.setdefault(label, (int(users), int(nth or 1)))
    columns = sorted(order, key=order.__getitem__)
    blocks = []
    for data, cols, label in zip(runs, per_run, run_labels(runs)):
        by_label = {column: summary for column, summary, _ in cols}
        summaries = [s for s in by_label.values() if s is not None]
        rows = REVIEW_ROWS if review else ROWS[:2] if data.run.status == "published" else _rows(data, summaries, txns)
        cells = [["" if (sm := by_label.get(c)) is None or math.isnan(v := get(sm)) else fmt(v)  # NaN: not published
                  for c in columns] for _, get, fmt in rows]
        names = [r[0] for r in rows]
        steps = {column: step for column, _, step in cols}
        if is_repeated(data):
            found = [c.label for c in repeat_columns(data)]
            names, by_column = repeat_cells(data, repeat_columns(data), rows, histograms)
            cells = [[row[found.index(c)] if c in found else "" for c in columns] for row in by_column]
        below = repeat_observer_rows(data, repeat_columns(data), OBSERVER_ROWS) if is_repeated(data) \
            else _observer_rows(data, steps)
        below = warmup_rows(data, steps) + below
        for name, row_cells in ([] if review else below):
            names.append(name)
            cells.append([row_cells[list(steps).index(c)] if c in steps else "" for c in columns])
        blocks.append(Block(label=label, run_id=data.run.id, rows=names, cells=cells))
    return ReportTable(columns=columns, blocks=blocks)


def to_markdown(table: ReportTable) -> str:
    """GitHub-flavoured Markdown, the layout of the published reviews."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    out = [line([STORAGE_HEADER, METRIC_HEADER, *table.columns]),
           "|---|---|" + "---:|" * len(table.columns)]
    for block in table.blocks:
        for i, (row, cells) in enumerate(zip(block.rows, block.cells)):
            out.append(line([block.label if i == 0 else "", row, *cells]))
    return "\n".join(out) + "\n"


def to_csv(table: ReportTable) -> str:
    """One row per (run, metric), every row labelled, for spreadsheets and scripts."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["storage", "run", METRIC_HEADER, *table.columns])
    for block in table.blocks:
        for row, cells in zip(block.rows, block.cells):
            writer.writerow([block.label, block.run_id, row, *cells])
    return buf.getvalue()


def to_rich(table: ReportTable, title: str | None = None) -> Table:
    """A rich Table for terminals: one section per run."""
    out = Table(title=title, show_lines=False)
    out.add_column(STORAGE_HEADER, style="bold")
    out.add_column(METRIC_HEADER)
    for column in table.columns:
        out.add_column(column, justify="right")
    for block in table.blocks:
        last = len(block.rows) - 1
        for i, (row, cells) in enumerate(zip(block.rows, block.cells)):
            out.add_row(block.label.replace("[", r"\[") if i == 0 else "", row, *cells, end_section=i == last)
    return out


def error_lines(runs: Sequence[RunData], most: int = 5) -> list[str]:
    """Under the table: each step's problems (the load ran short of its plan), its outages,
    its ``most`` commonest error messages, which a count in the table does not explain, and
    the honesty check where it was not a plain match (doubt, a mismatch, skipped)."""
    lines = []
    for data in runs:
        lines += outage_lines(data)
        honesty = data.run.honesty
        if honesty is not None and (not honesty.get("match") or honesty.get("in_doubt")):
            lines.append(f"run {data.run.id} honesty check {honesty_text(honesty)}")
        steps = sorted({e.step for e in data.errors})
        for step in steps:
            here = [e for e in data.errors if e.step == step]
            for e in (e for e in here if e.txn == PROBLEM):
                lines.append(f"run {data.run.id} step {step} PROBLEM: {e.message}")
            errors = sorted((e for e in here if e.txn != PROBLEM), key=lambda e: -e.count)
            for e in errors[:most]:
                lines.append(f"run {data.run.id} step {step}: {e.count:,} x {e.txn}: {e.message}")
            if len(errors) > most:
                lines.append(f"run {data.run.id} step {step}: {len(errors) - most} more kinds of error in the store")
    return lines


def render(runs: Sequence[RunData], format: str = "rich", width: int = 160, *, review: bool = False,
           txns: bool = False, histograms: Histograms | None = None) -> str:
    """The report of ``runs`` side by side as text: "rich" (terminal), "markdown" or "csv"
    (``review``, ``txns`` and ``histograms``: see :func:`build_table`)."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    table = build_table(runs, review=review, txns=txns, histograms=histograms)
    if format == "markdown":
        return to_markdown(table)
    if format == "csv":
        return to_csv(table)
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    console.print(to_rich(table))
    for line in [*error_lines(runs), *([] if review else verdict_lines(runs))]:
        console.print(line, markup=False, highlight=False, overflow="fold")
    return console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given to the Console above
