"""What limited each step of a stored run, and what the storage did per transaction.

Why here, once: the report table (terminal, Markdown, CSV), the JSON export, the HTML
page, the comparison's warning and the live line at the end of a step all say the same
verdict (tpsbench.measure.bottleneck) and the same I/O per transaction
(tpsbench.measure.io_per_txn); each format only lays them out. The verdict's context is
read from what a run stores with itself (its options, pacing readings, the storage it
detected), so a run read back years later gets the verdict it got live, save that the
unloaded awaits come from all its steps rather than those run so far.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tpsbench.core.delays import waits_of
from tpsbench.core.errors import TpsbenchError
from tpsbench.engine.pacing import PACING
from tpsbench.measure.bottleneck import verdict
from tpsbench.measure.io_per_txn import FIGURES as IO_FIGURES
from tpsbench.measure.io_per_txn import io_per_txn
from tpsbench.measure.step_context import StepContext, Verdict, unloaded_awaits
from tpsbench.measure.summary import SteadySummary
from tpsbench.report.repeats import repeat_columns
from tpsbench.results.records import RunData
from tpsbench.workloads import workload_classes

#: the table row of the verdicts
LIMITED_BY = "Limited by"
#: how the I/O per transaction figures read as rows ("KB written / txn")
IO_LABELS = {"reads": "Reads", "writes": "Writes", "read_kB": "KB read", "written_kB": "KB written",
             "wal_bytes": "WAL bytes", "redo_bytes": "Redo bytes"}
#: the key of the figures per committed transaction (any type) in :func:`step_io`
PER_TXN = "transaction"
#: the URL scheme of the databases that run inside the driver's processes
EMBEDDED = "sqlite"

Readings = Mapping[str, Mapping[str, float]]


def _device_names(detected: Mapping[str, Any]) -> tuple[str, ...]:
    """The database's devices as its run detected them: its own first, then those beneath."""
    tops = [d for path in detected.get("paths") or [] for d in path.get("devices") or []]
    names: list[str] = []
    level = tops
    while level:
        names += [d["name"] for d in level if d.get("name")]
        level = [b for d in level for b in d.get("below") or []]
    return tuple(dict.fromkeys(names))


def working_share(summary: SteadySummary | None) -> float | None:
    """The share of a step's users' time spent in transactions: TPS x mean response time /
    users (Little's law); None without a summary."""
    if summary is None or not summary.users:
        return None
    return summary.tps * summary.latency.mean / 1000.0 / summary.users


def context_of(config: Mapping[str, Any], users: int, readings: Readings, unloaded: Mapping[str, float],
               db_url: str | None, working: float | None = None, seconds: float = 0.0) -> StepContext:
    """A step's verdict context from its run's stored configuration (options, detected
    storage), its database's URL (SQLite is embedded in the driver) and its steady readings
    (pacing), the ``working`` share of its users' time (:func:`working_share`) and its steady
    window's ``seconds``; a run stored before a key existed reads as a closed loop without
    waits on a local server."""
    pacing = readings.get(PACING, {})
    try:
        waits = waits_of(config.get("options") or {})
        waited = waits.around or waits.interarrival.waits
    except TpsbenchError:  # options stored by another version: no wait is known
        waited = False
    detected = (config.get("storage") or {}).get("detected") or {}
    return StepContext(users=users, offered_per_s=pacing.get("offered_per_s"),
                       achieved_per_s=pacing.get("achieved_per_s"), queue_end=pacing.get("queue_end"),
                       seconds=seconds, waits=bool(waited),
                       local=not detected.get("remote"), host=str(detected.get("host") or ""),
                       devices=_device_names(detected), unloaded=unloaded,
                       embedded=(db_url or "").startswith(EMBEDDED), working=working)


def step_verdict(config: Mapping[str, Any], db_url: str, users: int, readings: Readings,
                 earlier: Iterable[Readings], summary: SteadySummary | None = None) -> Verdict:
    """A step's verdict as the run goes (the live line): each device's unloaded await the
    lowest of this step's and the ``earlier`` steps' steady readings."""
    unloaded = unloaded_awaits([*earlier, readings])
    return verdict(readings, context_of(config, users, readings, unloaded, db_url, working_share(summary),
                                         summary.seconds if summary else 0.0))


def run_verdicts(data: RunData) -> dict[int, Verdict]:
    """The verdict of every finished step of a stored run (step number -> verdict), each
    device's unloaded await the lowest of all the run's steps; none for a published run
    (tpsbench.results.references), whose figures were not measured here."""
    if data.run.status == "published":
        return {}
    finished = [s for s in data.steps if s.summary is not None]
    readings = {s.step: data.readings(s.step) for s in finished}
    unloaded = unloaded_awaits(readings.values())
    return {s.step: verdict(readings[s.step],
                            context_of(data.run.config, s.users, readings[s.step], unloaded, data.run.db_url,
                                       working_share(s.summary), s.summary.seconds if s.summary else 0.0))
            for s in finished}


def step_io(workload: str, summary: SteadySummary, readings: Readings) -> dict[str, dict[str, float]]:
    """I/O per committed transaction (:data:`PER_TXN`), and per committed transaction of the
    workload's headline type where it has one (TPC-C's ``new_order``, TPC-E's
    ``trade_result``): figure -> value; nothing where the step read no I/O."""
    out = {PER_TXN: io_per_txn(readings, summary.tps)}
    cls = workload_classes().get(workload)
    main = cls.main_metric[1] if cls is not None and cls.main_metric is not None else None
    if main is not None and main in summary.txns and summary.seconds:
        out[main] = io_per_txn(readings, summary.txns[main].commits / summary.seconds)
    return {per: figures for per, figures in out.items() if figures}


def limit_rows(data: RunData, steps: Mapping[str, int],
               fmt: Callable[[float], str]) -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]]]:
    """The table's rows for a run whose columns are ``steps`` (column -> step number): the
    "Limited by" row where some step had readings, and the I/O per transaction rows where
    the run read I/O (``fmt`` formats their values)."""
    verdicts = run_verdicts(data)
    limited = [(LIMITED_BY, [verdicts[n].short if n in verdicts else "" for n in steps.values()])]
    if not any(v.figures for v in verdicts.values()):
        limited = []  # a run without readings (built by hand, imported): a row of "undetermined" says nothing
    by_step = {s.step: s.summary for s in data.steps if s.summary is not None}
    io = {n: step_io(data.run.workload, by_step[n], data.readings(n)) for n in steps.values() if n in by_step}
    pers = list(dict.fromkeys(per for found in io.values() for per in found))
    rows = []
    for per in pers:
        for name, _, _ in IO_FIGURES:
            cells = [fmt(io[n][per][name]) if name in io.get(n, {}).get(per, {}) else "" for n in steps.values()]
            if any(cells):
                rows.append((f"{IO_LABELS[name]} / {'txn' if per == PER_TXN else per}", cells))
    return limited, rows


def verdict_lines(runs: Sequence[RunData]) -> list[str]:
    """Each step's verdict in full, under a table whose cells say it short."""
    lines = []
    for data in runs:
        verdicts = run_verdicts(data)
        if not any(v.figures for v in verdicts.values()):
            continue  # no readings: nothing to say (as the table has no row for it)
        for step in sorted(data.steps, key=lambda s: (s.users, s.step)):
            if step.step in verdicts:
                users = f"{step.users} user" if step.users == 1 else f"{step.users} users"
                lines.append(f"run {data.run.id} step {step.step} ({users}) limited by: "
                             f"{verdicts[step.step].text}")
    return lines


def _kinds_text(verdicts: Iterable[Verdict]) -> str:
    """"every step: server CPU", or "steps: 4 server CPU, 2 undetermined"."""
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.short] = counts.get(v.short, 0) + 1
    if len(counts) == 1:
        return f"every step: {next(iter(counts))}"
    return "steps: " + ", ".join(f"{n} {label}" for label, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _compared_steps(data: RunData) -> dict[int, tuple[list[int], float]]:
    """users -> (the steps compared, their TPS) as compare takes them: a run with repeats
    by all its repeats of the load and their mean TPS, any other by its first finished step."""
    columns = repeat_columns(data)
    if columns:
        found = {}
        for c in columns:
            if c.users not in found and c.summaries:
                found[c.users] = ([s.step for s in c.steps], sum(x.tps for x in c.summaries) / len(c.summaries))
        return found
    first: dict[int, tuple[list[int], float]] = {}
    for s in sorted(data.steps, key=lambda s: s.step):
        if s.summary is not None and s.users not in first:
            first[s.users] = ([s.step], s.summary.tps)
    return first


def not_storage_warning(runs: Sequence[RunData]) -> str | None:
    """The warning that compared configurations were not limited by their storage: at least
    two runs with a user load in common, some compared step with readings, and no compared
    step's verdict storage."""
    if len(runs) < 2:
        return None
    verdicts = [run_verdicts(data) for data in runs]
    first = [_compared_steps(data) for data in runs]  # per run: users -> (steps, tps) compared
    shared = [u for u in dict.fromkeys(u for found in first for u in found) if sum(u in f for f in first) >= 2]
    compared = [verdicts[i][step] for u in shared for i, found in enumerate(first) if u in found
                for step in found[u][0] if step in verdicts[i]]
    if not any(v.figures for v in compared) or any(v.kind == "storage" for v in compared):
        return None  # nothing read, nothing to say; or the storage was a limit
    # a load at which a run committed nothing differs by no ratio: it is left out of the figure
    spreads = [max(tps) / min(tps) - 1 for u in shared for tps in [[found[u][1] for found in first if u in found]]
               if min(tps) > 0]
    # an undetermined step may be bound by the storage's latency (one user's commit flushes)
    # without saturating it: the warning then says less
    ending = ("nothing shows the difference to be the storage's" if any(v.kind == "undetermined" for v in compared)
              else "the difference is not the storage's")
    differ = f"differ by up to {max(spreads):.0%} TPS" if spreads else "differ in TPS (one committed nothing)"
    return f"these configurations {differ} but no step was limited by storage ({_kinds_text(compared)}): {ending}"
