"""The report as one self-contained HTML page: the storage-review table, charts, and what
each run was (configuration, server settings, storage described and detected).

Why one file with everything inline and no script: a review is mailed, attached and
archived, and opened where there is no network (a lab, an air-gapped host) or years
later when a CDN has moved; nothing in the page is fetched, so it renders the same
anywhere. Charts are inline SVG (tpsbench.report.charts), the style is one ``<style>``.

Why everything is escaped here: storage labels, notes, settings and error messages are
typed by users or come from servers, and the page is opened by others; every text goes
through :func:`html.escape`, and the SVG writer escapes the text it draws.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from tpsbench import __version__
from tpsbench.measure.honesty import honesty_text
from tpsbench.report import charts, environment
from tpsbench.report.limits import not_storage_warning, run_verdicts
from tpsbench.report.output import HTML_GENERATOR
from tpsbench.report.repeats import is_repeated
from tpsbench.report.table import (
    METRIC_HEADER,
    STORAGE_HEADER,
    ReportTable,
    build_table,
    error_lines,
)
from tpsbench.results.records import RunData
from tpsbench.results.references import source_lines

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 0 auto; padding: 1em 2em; max-width: 1280px; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; }
nav a { margin-right: 1em; } .scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 2px 8px; vertical-align: top; }
thead th { background: #f3f3f3; position: sticky; top: 0; } td { text-align: right; }
th.text, table.settings td, table.devices td, table.usl td:last-child { text-align: left; }
tbody th { text-align: left; font-weight: normal; }
tbody th[rowspan] { font-weight: bold; background: #fafafa; }
tr.differs td { background: #fff4d6; } .note { color: #555; font-size: .9em; margin-top: 0; }
figure.chart { margin: 1.2em 0; } figure.chart svg { max-width: 100%; height: auto; }
figcaption { font-weight: bold; margin-bottom: .3em; } .warn { color: #8a4b00; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _row(cells: Sequence[str], head: int = 0, cls: str = "", lead: str = "") -> str:
    """A table row of escaped text: the first ``head`` cells are row headers; ``lead`` is
    markup put before them (a header spanning rows)."""
    out = lead + "".join(f'<th scope="row" class="text">{_e(c)}</th>' if i < head else f"<td>{_e(c)}</td>"
                         for i, c in enumerate(cells))
    return f'<tr class="{cls}">{out}</tr>' if cls else f"<tr>{out}</tr>"


def _table(header: Sequence[str], rows: Sequence[str], cls: str = "") -> str:
    """A table from its header texts and rows made by :func:`_row`, scrolling when wide."""
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in header)
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def review_table(table: ReportTable) -> str:
    """The storage-review table of tpsbench.report.table as HTML: one block of metric rows
    per configuration, its label spanning the block, user loads across."""
    blocks = []
    for block in table.blocks:
        rows = []
        for i, (name, cells) in enumerate(zip(block.rows, block.cells)):
            label = f'<th scope="rowgroup" rowspan="{len(block.rows)}">{_e(block.label)}</th>' if i == 0 else ""
            rows.append(_row([name, *cells], head=1, lead=label))
        blocks.append(f"<tbody>{''.join(rows)}</tbody>")
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in [STORAGE_HEADER, METRIC_HEADER, *table.columns])
    return (f'<div class="scroll"><table class="review"><thead><tr>{head}</tr></thead>'
            f'{"".join(blocks)}</table></div>')


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested settings as ``a.b.c`` -> text, so that runs line up key by key in one table;
    lists of plain values become one comma-separated text."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list) and any(isinstance(v, Mapping | list) for v in value):
        items = list(enumerate(value))
    else:
        text = ", ".join(map(_text, value)) if isinstance(value, list) else _text(value)
        return {prefix: text}
    out: dict[str, str] = {}
    for key, item in items:
        out |= flatten(item, f"{prefix}.{key}" if prefix else str(key))
    return out


def compare_table(labels: Sequence[str], values: Sequence[Mapping[str, Any]], what: str = "setting") -> str:
    """One row per key, one column per run; rows whose values differ between runs are
    marked, since the difference is what a reader of a comparison looks for."""
    flat = [flatten(v) for v in values]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    if not keys:
        return '<p class="note">None recorded.</p>'
    rows = []
    for key in keys:
        cells = [f.get(key, "") for f in flat]
        rows.append(_row([key, *cells], head=1, cls="differs" if len(set(cells)) > 1 else ""))
    return _table([what, *labels], rows, cls="settings")


#: (header, device field, formatter) of the detected-devices table
DEVICE_COLUMNS: list[tuple[str, str, Callable[[Any], str]]] = [
    ("kind", "kind", _text),
    ("size", "size_bytes", lambda b: f"{b / 2**30:,.1f} GiB" if b else ""),
    ("model", "model", _text),
    ("rotational", "rotational", _text),
    ("scheduler", "scheduler", _text),
    ("queue depth", "queue_depth", _text),
    ("RAID level", "raid_level", _text),
    ("chunk", "chunk_bytes", lambda b: f"{b // 1024} KiB" if b else ""),
    ("backing file", "backing_file", _text),
    ("not resolved", "unresolved", _text),
]


def _device_rows(path: Mapping[str, Any], device: Mapping[str, Any], depth: int) -> list[list[str]]:
    where = [path.get("path"), path.get("mount_point"), path.get("fs_type"), path.get("source")]
    name = ("  " * depth + "└ " if depth else "") + _text(device.get("name"))
    rows = [[*map(_text, where), name, *(fmt(device.get(key)) for _, key, fmt in DEVICE_COLUMNS)]]
    for below in device.get("below") or []:
        rows += _device_rows(path, below, depth + 1)
    return rows


def devices_table(labels: Sequence[str], detected: Sequence[Mapping[str, Any]]) -> str:
    """The devices found under each run's database files, with the devices they are made
    of indented beneath (an LVM volume over a RAID over its disks); columns no device
    has a value for are left out, and what could not be found is said under the table."""
    rows: list[list[str]] = []
    said = []
    for label, found in zip(labels, detected):
        if found.get("remote"):
            said.append(f"{label}: the database is on another host ({_text(found.get('host'))}): no device read")
        for path in found.get("paths") or []:
            rows += [[label, *cells] for device in path.get("devices") or [] for cells in _device_rows(path, device, 0)]
            if path.get("unresolved"):
                said.append(f"{label}: {_text(path.get('path'))}: not resolved: {path['unresolved']}")
    header = ["configuration", "path", "mount point", "file system", "source", "device",
              *(h for h, _, _ in DEVICE_COLUMNS)]
    keep = [j for j in range(len(header)) if any(row[j] for row in rows)]
    table = _table([header[j] for j in keep], [_row([row[j] for j in keep], head=1) for row in rows],
                   cls="devices") if rows else '<p class="note">No device was found for these runs.</p>'
    return table + "".join(f'<p class="note">{_e(line)}</p>' for line in said)


def _number(value: float | None, fmt: str) -> str:
    if value is None:
        return ""
    return "∞" if math.isinf(value) else format(value, fmt)


def usl_fits(runs: Sequence[RunData], labels: Sequence[str]) -> tuple[dict[int, Any], list[str]]:
    """The Universal Scalability Law fitted to each run's TPS by user load (run index ->
    fit), and why a run got none. None at all where tpsbench.report.usl is not there (it
    needs scipy): the page is still complete without it."""
    try:
        from tpsbench.report.usl import fit_usl
    except ImportError:
        return {}, []
    fits: dict[int, Any] = {}
    skipped = []
    for i, (data, label) in enumerate(zip(runs, labels)):
        steps = charts.finished_steps(data)
        try:
            every = {"every": True} if is_repeated(data) else {}  # a run of --repeat: every repeat's point
            fits[i] = fit_usl([s.users for s in steps], [s.summary.tps for s in steps], **every)  # type: ignore[union-attr]  # finished steps have their summary
        except Exception as exc:  # noqa: BLE001 - a fit that fails leaves the rest of the page
            skipped.append(f"{label}: no fit ({exc})")
    return fits, skipped


def usl_section(runs: Sequence[RunData], labels: Sequence[str]) -> str:
    """The fitted law's chart and its parameters, with the fit's own warnings."""
    fits, skipped = usl_fits(runs, labels)
    chart = charts.usl("usl", runs, labels, fits)
    if chart is None and not skipped:
        return ""  # no usl module here: the page says nothing of it
    rows = [_row([labels[i], _number(f.sigma, ".4g"), _number(f.kappa, ".4g"), _number(f.lam, ".1f"),
                  _number(f.r2, ".3f"), _number(f.n_max, ".0f"), _number(f.peak_tps, ".1f"),
                  "; ".join(map(str, f.warnings))], head=1) for i, f in fits.items()]
    parts = [figure(chart)] if chart is not None else []
    if rows:
        parts.append(_table(["configuration", "σ (contention)", "κ (coherency)", "λ (TPS of one user)", "R²",
                             "N* (users at the peak)", "peak TPS", "warnings"], rows, cls="usl"))
    parts += [f'<p class="warn">{_e(line)}</p>' for line in skipped]
    return "".join(parts)


def figure(chart: charts.Chart) -> str:
    """A chart with its caption and notes; the SVG is the chart module's, already escaped."""
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in chart.notes)
    return (f'<figure class="chart" id="chart-{chart.key}"><figcaption>{_e(chart.title)}</figcaption>'
            f"{chart.svg}{notes}</figure>")


def limits_section(runs: Sequence[RunData], labels: Sequence[str]) -> str:
    """What limited each step, a row a step with its figures in words, and the warning when
    compared configurations were not limited by their storage (tpsbench.report.limits)."""
    rows = []
    for data, label in zip(runs, labels):
        verdicts = run_verdicts(data)
        rows += [_row([label, str(step.users), verdicts[step.step].short, verdicts[step.step].text], head=1)
                 for step in sorted(data.steps, key=lambda s: (s.users, s.step)) if step.step in verdicts]
    if not rows:
        return ""
    warning = not_storage_warning(runs)
    return (_table(["configuration", "users", "limited by", "why"], rows, cls="settings")
            + (f'<p class="warn">{_e(warning)}</p>' if warning else ""))


def environment_section(runs: Sequence[RunData]) -> str:
    """The facts of the runs' environments that differ (tpsbench.report.environment), "" if none."""
    labels, rows = environment.differences(runs)
    return _table(["fact", *labels], [_row([name, *values], head=1) for name, values in rows],
                  cls="settings") if rows else ""


def _when(at: datetime | None) -> str:
    return f"{at:%Y-%m-%d %H:%M:%S %Z}".strip() if at is not None else ""


def _run_facts(data: RunData) -> dict[str, Any]:
    run = data.run
    return {"run": run.id, "workload": run.workload, "status": run.status, "started": _when(run.started_at),
            "ended": _when(run.ended_at), "seed": run.seed, "tpsbench": run.tool_version, "database": run.db_url,
            "notes": run.notes, "honesty check": honesty_text(run.honesty) if run.honesty is not None else ""}


def to_html(runs: Sequence[RunData], histograms: charts.Histograms | None = None,
            title: str = "tpsbench report", *, txns: bool = False) -> str:
    """The report of ``runs`` as one HTML page that needs nothing else: no script, no
    network. ``histograms(run_id, step, txn)`` gives stored step histograms (the store's
    ``load_histogram``) for the latency distributions; without it they are left out.
    ``txns``: each transaction type's rows in the results table."""
    table = build_table(runs, txns=txns, histograms=histograms)
    labels = [block.label for block in table.blocks]
    notes = "".join(f"<li>{_e(line)}</li>" for line in [*source_lines(runs), *error_lines(runs)])
    per_run = [charts.timeline(f"time-{i}", data, label, i) for i, (data, label) in enumerate(zip(runs, labels))]
    if histograms is not None:
        per_run += [charts.distribution(f"dist-{i}", data, label, histograms)
                    for i, (data, label) in enumerate(zip(runs, labels))]
    drawn = [*charts.user_charts(runs, labels), *(c for c in per_run if c is not None)]
    storage = [data.run.config.get("storage") or {} for data in runs]
    sections = [
        ("results", "Results per user load", review_table(table) + (f'<ul class="warn">{notes}</ul>' if notes else "")),
        ("limits", "What limited each step", limits_section(runs, labels)),
        ("charts", "Charts", "".join(map(figure, drawn))),
        ("usl", "Scalability model", usl_section(runs, labels)),
        ("environment", environment.TITLE, environment_section(runs)),
        ("runs", "The runs", "".join([
            "<h3>Runs</h3>", compare_table(labels, [_run_facts(d) for d in runs], what=""),
            "<h3>Configuration</h3>",
            compare_table(labels, [{k: v for k, v in d.run.config.items() if k != "storage"} for d in runs]),
            "<h3>Server settings</h3>", compare_table(labels, [d.run.server for d in runs]),
            "<h3>Storage as described</h3>", compare_table(labels, [s.get("described") or {} for s in storage]),
            "<h3>Storage as detected</h3>", devices_table(labels, [s.get("detected") or {} for s in storage]),
        ])),
    ]
    shown = [(key, name, body) for key, name, body in sections if body]
    nav = "".join(f'<a href="#{key}">{_e(name)}</a>' for key, name, _ in shown)
    body = "".join(f'<section id="{key}"><h2>{_e(name)}</h2>{body}</section>' for key, name, body in shown)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">{HTML_GENERATOR}'
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
            f'<header><h1>{_e(title)}</h1><p class="note">{len(runs)} run(s), written by tpsbench '
            f"{_e(__version__)}</p><nav>{nav}</nav></header>{body}</body></html>\n")
