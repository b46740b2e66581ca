"""The charts of the HTML report, drawn with matplotlib as SVG text to inline in the page.

Why static SVG: a storage review is read, printed, attached to a ticket and archived;
inline SVG needs no JavaScript, so the page opens in any browser with no network, its
text stays text (searchable, copyable: ``svg.fonttype`` "none"), it scales without
blur, and it is small: a whole report with every chart weighs less than a JavaScript
charting library's bundle alone. The exact
figures are in the page's tables, so hovering for values, what interactivity would add, is not needed.

Why no pyplot: it keeps global figures and picks a GUI backend; a ``Figure`` made on
its own is freed with its chart and needs no display. Every chart is drawn under the
report's style (:data:`RC`) and is a pure function of the run records (and histograms).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.colors import TABLEAU_COLORS
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from tpsbench.measure.disk_io import DiskIo
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.repeats import mean_interval
from tpsbench.measure.reports import ALL
from tpsbench.report.repeats import is_repeated
from tpsbench.results.records import RunData, StoredStep
from tpsbench.results.schema import WARMUP_STEP

#: one colour per configuration, the same in every chart of a page
PALETTE = [str(c) for c in TABLEAU_COLORS.values()]
#: percentile curves run from the median to 99.99%, evenly spaced in "nines"
NINES = np.linspace(0.0, 4.0, 81)
#: about how wide a character of a 9-point legend is
LEGEND_INCHES_PER_CHAR = 0.075
#: the report's style; one short font list, since every text element of the SVG repeats it
RC: dict[Any, Any] = {"svg.fonttype": "none", "font.size": 9, "font.sans-serif": ["DejaVu Sans", "Arial"],
                      "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False}

#: a step's figure for a chart; None where the step has none (it did not finish, no readings)
StepValue = Callable[[RunData, StoredStep], float | None]
Histograms = Callable[[int, int, str], LatencyHistogram | None]


@dataclass
class Chart:
    """One chart of the page: ``key`` is unique in the page (element ids), ``svg`` inline SVG."""

    key: str
    title: str
    svg: str
    notes: Sequence[str] = ()


@dataclass
class Panel:
    """One axes of a chart against user load: its title, y axis and one value per step."""

    title: str
    ylabel: str
    value: StepValue


def colour(index: int) -> str:
    """The colour of the ``index``-th configuration of the page."""
    return PALETTE[index % len(PALETTE)]


def _text(label: str) -> str:
    """A user's label as matplotlib must get it to draw it literally: "$" would start math."""
    return label.replace("$", r"\$")


def _svg(fig: Figure, key: str) -> str:
    """The figure as an ``<svg>`` element for an HTML page.

    The XML prolog, DOCTYPE and metadata go (they name http URLs and the date, and the
    page must be the same for the same runs), and every id gets the chart's key as a
    prefix: ids of several inline SVGs share one document and must not collide.
    """
    buf = io.StringIO()
    with mpl.rc_context({"svg.hashsalt": key}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.DOTALL)
    text = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", text)
    text = text.replace("xlink:href=", "href=")
    used = set(re.findall(r'(?:href="#|url\(#)([^")]+)', text))
    text = re.sub(r'\s+id="([^"]+)"', lambda m: m.group(0) if m.group(1) in used else "", text)
    return re.sub(r'(id="|href="#|url\(#)', rf"\g<1>{key}-", text)


def _figure(rows: int, cols: int, width: float, height: float, sharex: bool = False) -> tuple[Figure, list[Any]]:
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=sharex)
    return fig, [ax for row in axes for ax in row]


def _legend(fig: Figure, labels: Sequence[str], colours: Sequence[Any], marker: str = "o") -> None:
    """One legend for the whole figure, under it, in as many columns as fit its width;
    handles are given, so no label is dropped (matplotlib skips labels that start with "_")."""
    handles = [Line2D([], [], color=c, marker=marker) for c in colours]
    inches = 0.6 + LEGEND_INCHES_PER_CHAR * max(map(len, labels))  # the handle, then the text
    cols = max(1, min(len(labels), 6, int(fig.get_figwidth() // inches)))
    fig.legend(handles, [_text(label) for label in labels], loc="outside lower center", ncols=cols, frameon=False)


def finished_steps(data: RunData) -> list[StoredStep]:
    """The steps of a run that have figures, in user-load order."""
    return sorted((s for s in data.steps if s.summary is not None), key=lambda s: (s.users, s.step))


@mpl.rc_context(RC)
def versus_users(key: str, title: str, runs: Sequence[RunData], labels: Sequence[str],
                 panels: Sequence[Panel], notes: Sequence[str] = ()) -> Chart | None:
    """Panels of a figure against user load, one line per configuration; None when no
    step of any run has a value for any panel (a chart of nothing is not drawn)."""
    points = [[_line(data, panel) for data in runs] for panel in panels]
    if not any(line for panel in points for line in panel):
        return None
    fig, axes = _figure(1, len(panels), max(3.4 * len(panels) + 0.6, 6.0), 3.2)
    loads = sorted({s.users for data in runs for s in finished_steps(data)})
    for ax, panel, lines in zip(axes, panels, points):
        for i, line in enumerate(lines):
            if line:
                xs, ys, errors = zip(*line)
                if any(errors):  # a run of --repeat: its means with their intervals
                    ax.errorbar(xs, ys, yerr=errors, marker="o", color=colour(i), capsize=3, clip_on=False)
                else:
                    ax.plot(xs, ys, marker="o", color=colour(i), clip_on=False)
        ax.set(title=panel.title, xlabel="virtual users", ylabel=panel.ylabel)
        if len(loads) <= 12:
            ax.set_xticks(loads)  # the loads that were run, not a round scale
        ax.set_ylim(bottom=0)
    _legend(fig, labels, [colour(i) for i in range(len(runs))])
    if any(is_repeated(data) for data in runs):
        notes = [*notes, "A run of --repeat: each point is the mean over its repeats, its bar the mean's 95% "
                         "interval (Student t)."]
    return Chart(key, title, _svg(fig, key), notes)


def _line(data: RunData, panel: Panel) -> list[tuple[float, float, float]]:
    """A run's points on a panel: (users, value, half-width of its 95% interval), 0 for a
    step of a run without repeats; a run of --repeat: the mean over each load's repeats."""
    found = [(s.users, v) for s in finished_steps(data) if (v := panel.value(data, s)) is not None]
    if not is_repeated(data):
        return [(users, v, 0.0) for users, v in found]
    by_users: dict[int, list[float]] = {}
    for users, v in found:
        by_users.setdefault(users, []).append(v)
    return [(users, m.mean, m.half or 0.0) for users, values in sorted(by_users.items())
            if (m := mean_interval(values))]


def _disk(figures: Sequence[str]) -> StepValue:
    """The sum of device I/O figures over a step's steady window (IOPS = r/s + w/s)."""
    def value(data: RunData, step: StoredStep) -> float | None:
        read = data.readings(step.step).get(DiskIo.name, {})
        return sum(read[f] for f in figures) if all(f in read for f in figures) else None
    return value


def user_charts(runs: Sequence[RunData], labels: Sequence[str]) -> list[Chart]:
    """Throughput, response time and the storage's work against user load."""
    def summary(get: Callable[[Any], float]) -> StepValue:
        return lambda data, step: get(step.summary)

    charts = [
        versus_users("tps", "Throughput against user load", runs, labels,
                     [Panel("TPS", "committed transactions / s", summary(lambda s: s.tps))]),
        versus_users("latency", "Response time against user load", runs, labels,
                     [Panel(name, "ms", summary(get)) for name, get in (
                         ("average", lambda s: s.latency.mean), ("p95", lambda s: s.latency.p95),
                         ("p99", lambda s: s.latency.p99))]),
        versus_users("io", "Storage: IOPS and device latency against user load", runs, labels,
                     [Panel("IOPS (reads + writes)", "I/O / s", _disk(("total.r_s", "total.w_s"))),
                      Panel("device read latency", "ms", _disk(("total.r_await_ms",))),
                      Panel("device write latency", "ms", _disk(("total.w_await_ms",)))],
                     notes=[("The devices under the database's files (all of them together), as "
                            "/proc/diskstats counts them over each step's steady window.")]),
    ]
    return [c for c in charts if c is not None]


@mpl.rc_context(RC)
def timeline(key: str, data: RunData, label: str, index: int) -> Chart | None:
    """TPS and p95 of every interval across the run, steps shaded, ramp-up hollow:
    whether a step's figures were steady shows here.

    Intervals shorter than half the usual one are left out: the last of a step is often
    a few milliseconds of transactions still in flight when the load stopped, whose rate
    and p95 are noise that would set the scale of the whole chart."""
    lengths = sorted(iv.t_end - iv.t_start for iv in data.intervals)
    shown = [iv for iv in data.intervals if lengths and iv.t_end - iv.t_start >= lengths[len(lengths) // 2] / 2]
    if not shown:
        return None
    t0 = min(iv.t_start for iv in shown)
    fig, (tps_ax, p95_ax) = _figure(2, 1, 8.0, 4.2, sharex=True)
    for n, step in enumerate(sorted({iv.step for iv in shown})):
        here = sorted((iv for iv in shown if iv.step == step), key=lambda iv: iv.interval)
        start, end = here[0].t_start - t0, here[-1].t_end - t0
        users = here[0].users if here[0].users is not None else "?"
        for ax, get in ((tps_ax, lambda iv: iv.tps), (p95_ax, lambda iv: iv.p95_ms)):
            if n % 2:
                ax.axvspan(start, end, color="0.93", lw=0)
            mid = [(iv.t_start + iv.t_end) / 2 - t0 for iv in here]
            ax.plot(mid, [get(iv) for iv in here], color=colour(index), lw=1)
            steady = [iv.steady for iv in here]
            ax.scatter(mid, [get(iv) for iv in here], s=14, zorder=3, edgecolors=colour(index),
                       facecolors=[colour(index) if s else "white" for s in steady])
        tps_ax.annotate("warm-up" if step == WARMUP_STEP else f"{users} u", ((start + end) / 2, 1.0),
                        xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=8)
    tps_ax.set(ylabel="TPS")
    p95_ax.set(ylabel="p95 (ms)", xlabel="seconds since the run's first interval")
    for ax in (tps_ax, p95_ax):
        ax.set_ylim(bottom=0)
    return Chart(key, f"TPS and p95 over time: {label}", _svg(fig, key),
                 [("Filled points are steady intervals (the step's figures); hollow ones are ramp-up, or the "
                   "warm-up before the first step (--warmup), which no step's figures count. "
                  "'u': virtual users. Intervals shorter than half the usual one (the in-flight tail "
                  "at a step's end) are left out.")])


def _percentile_curve(hist: LatencyHistogram) -> tuple[np.ndarray, list[float]]:
    """(nines, latency ms) of a histogram, only as far as its count supports: past
    1 - 1/count every percentile is the maximum."""
    nines = NINES[NINES <= math.log10(max(hist.count(), 1))]
    values = hist.percentiles(100.0 * (1.0 - 10.0 ** -nines))
    return nines, [v / 1000.0 for v in values]


@mpl.rc_context(RC)
def distribution(key: str, data: RunData, label: str, histograms: Histograms) -> Chart | None:
    """Percentile curves of each transaction type (and all together), one line per user
    load: how the tail grows with load, where a mean or a single p95 hides it."""
    steps = finished_steps(data)
    names = [ALL, *dict.fromkeys(n for s in steps for n in s.summary.txns)]  # type: ignore[union-attr]  # finished steps have their summary
    curves = {name: [(i, h) for i, s in enumerate(steps) if (h := histograms(data.run.id, s.step, name)) is not None
                     and h.count()] for name in names}
    curves = {name: found for name, found in curves.items() if found}
    if not curves:
        return None
    cols = min(len(curves), 3)
    rows = math.ceil(len(curves) / cols)
    fig, axes = _figure(rows, cols, 3.2 * cols + 0.4, 2.6 * rows + 0.6)
    shades = mpl.colormaps["viridis"](np.linspace(0.0, 0.85, len(steps)))  # light: more users
    for ax, (name, found) in zip(axes, curves.items()):
        for i, hist in found:
            ax.plot(*_percentile_curve(hist), color=shades[i], lw=1.3)
        ax.set(title="all transactions" if name == ALL else _text(name), yscale="log", ylabel="ms",
               xticks=range(5), xticklabels=["0%", "90%", "99%", "99.9%", "99.99%"], xlim=(0, 4))
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 1, 2, 5, 10 ms: read at a glance
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
    for ax in axes[len(curves):]:
        ax.set_axis_off()
    _legend(fig, [f"{s.users} user{'s' if s.users != 1 else ''}" for s in steps], list(shades), marker="")
    return Chart(key, f"Latency distribution per transaction type: {label}", _svg(fig, key),
                 [("Latency at each percentile of the step's steady window (HdrHistogram, 0.1%), "
                  "drawn as far as the count of transactions supports.")])


@mpl.rc_context(RC)
def usl(key: str, runs: Sequence[RunData], labels: Sequence[str], fits: dict[int, Any]) -> Chart | None:
    """Measured TPS (points) with the Universal Scalability Law fitted to them (lines) of
    each configuration in ``fits`` (run index -> fit), drawn beyond the largest load to
    show where the model expects throughput to go."""
    if not fits:
        return None
    fig, (ax,) = _figure(1, 1, 6.4, 3.6)
    top = max(s.users for i in fits for s in finished_steps(runs[i]))
    grid = np.linspace(1, max(top * 1.5, top + 2), 120)
    for i, fit in fits.items():
        steps = finished_steps(runs[i])
        ax.scatter([s.users for s in steps], [s.summary.tps for s in steps],  # type: ignore[union-attr]  # finished steps have their summary
                   color=colour(i), zorder=3)
        ax.plot(grid, [fit.predict(float(n)) for n in grid], color=colour(i), lw=1.3)
    ax.set(xlabel="virtual users", ylabel="TPS")
    ax.set_ylim(bottom=0)
    _legend(fig, [labels[i] for i in fits], [colour(i) for i in fits])
    return Chart(key, "Universal Scalability Law fitted to the measured TPS", _svg(fig, key),
                 [("Points: measured TPS; lines: X(N) = λN / (1 + σ(N−1) + κN(N−1)). The law models "
                  "mean throughput only: read latency percentiles from the measured steps.")])
