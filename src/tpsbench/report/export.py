"""Runs as one JSON document: everything the results store keeps of them, for scripts,
notebooks and other tools.

Why JSON beside the table: reviewers re-plot, re-compare and archive their runs with
their own tools, and a table's rounded cells are not data. The document carries every
stored figure exactly as stored (floats are not rounded: Python writes the shortest text
that reads back as the same float), under a versioned layout that says every key and its
unit, so that a script written against ``tpsbench-report/2`` keeps reading later files of
that version. Any change to the layout (a key added, removed or changed in meaning) is a
new version with a new schema file; ``report-schema-2.json`` (JSON Schema, draft 2020-12)
is this one, and is strict (no undocumented key) so that the tests catch a change that
was not versioned. Version 1 was this layout without a step's ``verdict`` and
``io_per_txn``; a run stored before they existed gets them all the same, from what it
stored. A step's ``before_step`` came later within version 2: it is optional, so that
every earlier file of version 2 still validates, and absent from runs that have none. Open
maps (config, server, readings ...) are as the run stored them.

No password reaches the document: the store scrubbed what it kept, and everything is
scrubbed again here (tpsbench.core.redact), since runs may be built by hand or come from
a store written by another tool.

A document with a run of ``--repeat`` in it is version 3 (``report-schema-3.json``):
version 2 with every run's ``repeats`` (null for a run without repeats; else each load's
figures over its repeats, tpsbench.report.repeats.repeats_json: the mean TPS and mean
latency with their 95% Student t intervals, the latency percentiles and maximum of the
repeats' histograms merged with the range of the repeats' own) and ``config.repeat``; a
sequential campaign's rounds of one target are exported as one run of ``--repeat``
(tpsbench.report.rounds: its steps round after round, ``config.round_runs`` the rounds'
run ids, ``id`` the first round's). A
document without repeats stays version 2, key for key, so every reader of version 2
reads it as before.

Layout ``tpsbench-report/2``; times are ISO 8601 in UTC ("2024-05-01T12:00:00.000000Z"),
durations in seconds, latencies in milliseconds, rates per second unless named otherwise:

``schema``      "tpsbench-report/2"
``tpsbench``    version of the tpsbench that wrote the document
``runs``        list of Run, in the order asked for
``environment_differences`` (only where two runs or more differ; added within version 2, so
                optional) fact -> run id -> value (str, or null: not recorded), each fact of the
                runs' environments that is not the same in all (tpsbench.report.environment)

Run:
``id`` (int) the run's id in its store; ``label`` (str) its name in the report table
(storage label, made unique, with an unfinished status); ``workload`` (str); ``status``
("running": never finished, "completed", "interrupted", "failed"); ``storage`` (str) the
storage configuration's label, "" if none; ``started_at``, ``ended_at`` (time; ended_at
null while running); ``seed`` (int or null) that repeats the run; ``tool_version`` (str or
null) the tpsbench that ran it; ``db_url`` (str or null, without password); ``notes``
(str); ``config`` (object) the run's configuration as stored: users (list of int),
rampup_s, duration_s, interval_s (s), processes (runs stored before: workers), options (the workload's, name -> value),
driver_host (the load host: cpu, cores, memory_mb, os, package versions), campaign and
campaign_target (or null), storage_file, data_path, and ``config.storage``:
``described`` (the configuration from the storage file, or null) and ``detected`` (the
database's folders resolved to devices: paths, each with its file system and devices;
or {"remote": true, "host": ...}); ``server`` (object) the database server's settings
read at the start, name -> value; ``honesty`` (object or null: no check recorded) the
check of the database's own counts against the driver's: ``match`` (true, false, or null
when skipped), ``expected`` and ``actual`` (counter -> int), ``skipped`` (why), and with
transactions in doubt ``in_doubt`` (transaction -> int) and ``most`` (counter -> int);
``steps`` (list of Step, by step number).

Step:
``step`` (int, from 1); ``users`` (int, or null if not recorded); ``rampup_s``,
``duration_s`` (s, planned; null where not recorded); ``summary`` (Summary, or null: the
step did not finish); ``main_metric`` ({"name": "tpmC", "value": per minute} for
workloads that have one, else null); ``readings`` (Readings over the steady window);
``before_step`` (Readings before the step's ramp-up, only where there are some: the
server's restart of ``--cache cold``, as ``outage``, which no measured window holds);
``verdict`` (what limited the step, tpsbench.measure.bottleneck: ``kind`` one of storage,
server_cpu, driver_cpu, host_cpu, locks, rate, think, undetermined; ``text`` the sentence
with its figures; ``figures`` "observer.figure" -> value it rests on; ``subject`` the
device, table or lock it names, or ""; null where the step did not finish);
``io_per_txn`` (per -> figure -> value: per committed transaction under "transaction",
and per committed transaction of the workload's headline type under its name, e.g.
"new_order": reads, writes, read_kB, written_kB (device I/O of the database's storage),
wal_bytes (PostgreSQL) or redo_bytes (MariaDB, MySQL); only the figures the step read);
``errors`` (list of {"txn", "count", "message"}: transactions that failed, by message,
over the whole step); ``problems`` (list of str: the engine's, e.g. the load ran short of
its plan); ``intervals`` (list of Interval, ramp-up and tail included); ``steady_state``
(whether the step reached SNIA steady state, tpsbench.report.steadiness: ``window``,
``intervals``, ``steady`` (null: too few intervals), ``text``, and ``tps``, ``p95_ms``
with ``range_pct``, ``slope_pct``, ``steady``; null where the step did not finish; an
optional key, added within version 2: documents written before it lack it); ``histograms``
(only when exported with them: transaction or "*" (all) -> HdrHistogram V2 encoding of
the steady window's latencies in microseconds, "HISTFAAA...").

Summary (the steady-state intervals merged, tpsbench.measure.summary.SteadySummary):
``step``, ``users`` (int); ``seconds`` (s measured); ``intervals`` (int, steady ones);
``tps`` (commits of every transaction per second); ``reconnects`` (int); ``latency``
(Latency of all transactions); ``txns`` (transaction name -> Txn); ``statements``
(statement kind, e.g. read/write/other -> count; {} where not counted); ``timings`` (name
-> Latency of spans that are not transactions, e.g. a deferred Delivery's queue time).

Latency: ``count`` (int), ``mean``, ``p50``, ``p90``, ``p95``, ``p99``, ``p999`` (99.9th
percentile), ``max`` (ms).

Txn: ``name``; ``commits``, ``rollbacks`` (expected ones, e.g. TPC-C's 1% New-Order),
``retries``, ``errors``, ``in_doubt`` (connection lost before the outcome came back),
``clipped`` (latencies beyond the histogram's range) (int); ``tpm`` (commits per minute);
``mix`` (share of completed transactions, 0..1); ``latency`` (Latency).

Interval:
``interval`` (int, from 0); ``start``, ``end`` (time, microseconds); ``seconds`` (s,
end - start); ``steady`` (bool: part of the steady window); ``users`` (int or null);
``tps`` (commits per second); ``p95_ms`` (ms, all transactions); ``commits``,
``rollbacks``, ``retries``, ``errors``, ``reconnects`` (int); ``readings`` (Readings over
the interval).

Readings: observer -> figure -> number, as the step observers read them:
``host_cpu``: user, system, iowait, idle, steal, driver (percent of all cores' time;
driver is tpsbench's own processes), server (a server on this host), others (every
other process), driver_peak (percent of one core), busy_allowed, allowed_pct (those
CPUs' share of the host's), io_pressure (percent);
``db_waits``: active (sessions), cpu_pct, lock_pct, lwlock_pct, io_pct, ipc_pct,
client_pct, other_pct, ``lock_on.<table>``, ``event.<Type>:<Event>`` (percent of active
sessions); ``disk_io``: ``<device>.<figure>`` and
``total.<figure>`` (the database's storage as a whole) with the figures r_s, w_s (I/Os
per second), r_kB_s, w_kB_s (kB per second), r_await_ms, w_await_ms (ms), aqu_sz
(requests), util_pct (percent); ``database``: ``<counter>_s`` (per second) and
buffer_hit_pct (percent); ``outage``: down_s (s unreachable), outages (count),
first_at (Unix time in seconds, as stored: when the first outage began).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any

from tpsbench import __version__
from tpsbench.core.redact import scrub, secrets_of
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.reports import ALL
from tpsbench.measure.step_context import Verdict
from tpsbench.report import environment
from tpsbench.report.limits import run_verdicts, step_io
from tpsbench.report.repeats import Histograms as StoredHistograms
from tpsbench.report.repeats import is_repeated, repeats_json
from tpsbench.report.steadiness import steady_state_json
from tpsbench.report.table import main_metric, run_labels
from tpsbench.report.warmup import warmup_json
from tpsbench.results.records import RunData, StoredInterval, StoredStep
from tpsbench.results.schema import BEFORE_STEP, PROBLEM, WARMUP_STEP
from tpsbench.results.store import ResultsStore

SCHEMA = "tpsbench-report/2"
#: the JSON Schema of SCHEMA, beside this module (it ships with the package)
SCHEMA_FILE = "report-schema-2.json"
#: the layout of a document with a run of ``--repeat`` in it: version 2 with each run's ``repeats``
SCHEMA_3 = "tpsbench-report/3"
#: each layout's JSON Schema file, beside this module
SCHEMA_FILES = {SCHEMA: SCHEMA_FILE, SCHEMA_3: "report-schema-3.json"}
#: a run's step histograms: (run id, step) -> transaction or "*" -> histogram
Histograms = Mapping[tuple[int, int], Mapping[str, LatencyHistogram]]


def _time(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a "Z"; naive times are the store's, which keeps UTC."""
    if value is None:
        return None
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return aware.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _epoch(seconds: float) -> str:
    """An interval's wall-clock bound (Unix seconds, as stored) as a time."""
    return _time(datetime.fromtimestamp(seconds, UTC)) or ""


#: observer readings by (step, interval), interval None for the steady window
Readings = dict[tuple[int, int | None], dict[str, dict[str, float]]]


def _readings(data: RunData) -> Readings:
    """Every reading of a run, grouped once: what :meth:`RunData.readings` gives for one
    (step, interval), which asked per interval would read all observations each time (an
    hour's step at 1 s intervals has 3,600 intervals of some 40 figures each)."""
    out: Readings = {}
    for o in data.observations:
        out.setdefault((o.step, o.interval), {}).setdefault(o.observer, {})[o.name] = o.value
    return out


def _interval(i: StoredInterval, readings: Readings) -> dict[str, Any]:
    return {"interval": i.interval, "start": _epoch(i.t_start), "end": _epoch(i.t_end),
            "seconds": i.t_end - i.t_start, "steady": i.steady, "users": i.users, "tps": i.tps,
            "p95_ms": i.p95_ms, "commits": i.commits, "rollbacks": i.rollbacks, "retries": i.retries,
            "errors": i.errors, "reconnects": i.reconnects, "readings": readings.get((i.step, i.interval), {})}


def _step(data: RunData, number: int, record: StoredStep | None, readings: Readings, verdict: Verdict | None,
          histograms: Mapping[str, LatencyHistogram] | None) -> dict[str, Any]:
    """One step; ``record`` is None for a step the store has intervals of but no row (a
    run stopped before the step ended), whose users are then its intervals'."""
    intervals = [i for i in data.intervals if i.step == number]
    summary = record.summary if record is not None else None
    metric = main_metric(data.run.workload, summary) if summary is not None else None
    errors = [e for e in data.errors if e.step == number]
    out = {"step": number,
           "users": record.users if record is not None else next((i.users for i in intervals), None),
           "rampup_s": record.rampup_s if record is not None else None,
           "duration_s": record.duration_s if record is not None else None,
           "summary": summary.to_dict() if summary is not None else None,
           "main_metric": {"name": metric[0], "value": metric[1]} if metric is not None else None,
           "readings": readings.get((number, None), {}),
           **({"before_step": readings[(number, BEFORE_STEP)]} if (number, BEFORE_STEP) in readings else {}),
           "verdict": asdict(verdict) if verdict is not None else None,
           "io_per_txn": step_io(data.run.workload, summary, readings.get((number, None), {})) if summary else {},
           "errors": [{"txn": e.txn, "count": e.count, "message": e.message} for e in errors if e.txn != PROBLEM],
           "problems": [e.message for e in errors if e.txn == PROBLEM],
           "intervals": [_interval(i, readings) for i in intervals]}
    out["steady_state"] = steady_state_json(data, number) if summary is not None else None
    if histograms is not None:
        out["histograms"] = {txn: h.encode().decode("ascii") for txn, h in histograms.items()}
    return out


def _run(data: RunData, label: str, histograms: Histograms | None, repeats: bool) -> dict[str, Any]:
    """One run, scrubbed of every secret its URL names."""
    r = data.run
    records = {s.step: s for s in data.steps}
    readings = _readings(data)
    verdicts = run_verdicts(data)
    numbers = sorted(n for n in set(records) | {i.step for i in data.intervals} | {e.step for e in data.errors}
                     | {step for step, _ in readings} if n != WARMUP_STEP)  # the warm-up is no step
    steps = [_step(data, n, records.get(n), readings, verdicts.get(n),
                   histograms.get((r.id, n)) if histograms is not None else None) for n in numbers]
    record = {"id": r.id, "label": label, "workload": r.workload, "status": r.status, "storage": r.storage,
              "started_at": _time(r.started_at), "ended_at": _time(r.ended_at), "seed": r.seed,
              "tool_version": r.tool_version, "db_url": r.db_url, "notes": r.notes, "config": r.config,
              "server": r.server, "honesty": r.honesty, "steps": steps}
    warm = warmup_json(data)
    if warm is not None:  # optional within versions 2 and 3: a run without a warm-up is as before
        record["warmup"] = warm
    if repeats:
        record["repeats"] = repeats_json(data, None if histograms is None else
                                         lambda run, step, txn: histograms.get((run, step), {}).get(txn))
    return scrub(record, secrets_of(r.db_url or ""))


def to_dict(runs: Sequence[RunData], histograms: Histograms | None = None) -> dict[str, Any]:
    """The document of ``runs`` as plain data (see the module docstring for the layout);
    with ``histograms`` (:func:`load_histograms`) each step also carries its histograms."""
    repeats = any(is_repeated(data) for data in runs)
    doc = {"schema": SCHEMA_3 if repeats else SCHEMA, "tpsbench": __version__,
           "runs": [_run(data, label, histograms, repeats) for data, label in zip(runs, run_labels(runs))]}
    differ = environment.to_dict(runs)
    return doc | ({"environment_differences": differ} if differ else {})


def to_json(runs: Sequence[RunData], histograms: Histograms | None = None) -> str:
    """The document of ``runs`` as JSON text, indented for people and diffs."""
    return json.dumps(to_dict(runs, histograms), indent=2, ensure_ascii=False) + "\n"


def load_histograms(store: ResultsStore, runs: Sequence[RunData], find: StoredHistograms | None = None,
                    ) -> dict[tuple[int, int], dict[str, LatencyHistogram]]:
    """The stored steady-window histograms of every finished step of ``runs``, for
    :func:`to_json`: they are not part of :class:`RunData` (a report rarely needs them and
    they are the bulk of a store). ``find`` in place of the store's ``load_histogram``:
    a campaign's rounds put together (tpsbench.report.rounds) find their steps' own."""
    find = store.load_histogram if find is None else find
    out: dict[tuple[int, int], dict[str, LatencyHistogram]] = {}
    for data in runs:
        for step in data.steps:
            if step.summary is None:
                continue
            found = {txn: find(data.run.id, step.step, txn) for txn in [*step.summary.txns, ALL]}
            out[(data.run.id, step.step)] = {txn: h for txn, h in found.items() if h is not None}
    return out


def json_schema(schema: str = SCHEMA) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) that every document of layout ``schema`` (a
    document's ``schema`` key, version 2 or 3) validates against."""
    return json.loads(files(__package__).joinpath(SCHEMA_FILES[schema]).read_text(encoding="utf-8"))
