"""Run a workload at stepped user loads and record it: the API behind ``tpsbench run``.

The runner ties the parts together and adds what no single part can know: the run's
identity in the results store (configuration, seed, server settings, storage label),
the step observers that read beside every step (host CPU by default), and the honesty
check (tpsbench.measure.honesty): the database's own counts read before the first step
and after the last, against what the driver counted.

:func:`run` goes through five steps, each a function below: validate (the config alone),
prepare (the database), plan (the worker pool, the run stored as running), execute (the
steps) and reconcile (the honesty check and the run's end, however it ended).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpsbench import __version__
from tpsbench.commands.build import build_if_missing
from tpsbench.commands.cache import ServerDown, empty_caches
from tpsbench.commands.pacing_options import make_trace_folder, step_rates, trace_folder
from tpsbench.commands.run_config import DEFAULT_USERS, RunConfig, plan_line, stored_form
from tpsbench.commands.run_setup import MemoryNotes, cache_mode, connect_cluster, database_counts, default_observers
from tpsbench.commands.step_end import all_failed, finish_step
from tpsbench.commands.storage import StorageFacts, storage_facts
from tpsbench.commands.warmup import check_warmup, keep_warmup, warmup_step
from tpsbench.core.errors import TpsbenchError, signal_of
from tpsbench.core.meta import active_run, describe_mark, note_run_ended, note_run_started, read_meta
from tpsbench.core.parse import check_cache, check_seed, check_text
from tpsbench.core.redact import scrub_text, secrets_of
from tpsbench.core.repeats import check_campaign_round, check_repeat
from tpsbench.core.session import RunContext
from tpsbench.core.signals import Deferred
from tpsbench.core.target import Target
from tpsbench.core.workload import Workload
from tpsbench.engine.coordinator import RunOutcome, RunPlan, RunStatus, StepOutcome, plan_run, run_plan
from tpsbench.engine.steps import LoadStep, check_steps
from tpsbench.measure.honesty import honesty_check, honesty_text
from tpsbench.measure.host_info import driver_host
from tpsbench.measure.observers import Readings, StepObserver
from tpsbench.measure.reachability import Reachability, outage_figures
from tpsbench.measure.reports import IntervalReport
from tpsbench.report.metrics import MetricsEndpoint, metrics_endpoint
from tpsbench.results.schema import BEFORE_STEP, STORAGE_LABEL_MOST, WARMUP_STEP
from tpsbench.results.store import ResultsStore, StoreUnwritable
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload

if TYPE_CHECKING:
    from tpsbench.engine.dask.transport import DaskTransport

#: what the runner's callers import from here (the config lives in tpsbench.commands.run_config)
__all__ = ["DEFAULT_USERS", "RunConfig", "RunRecord", "default_observers", "plan_line", "run", "stored_form"]


@dataclass
class RunRecord:
    """What :func:`run` returns: the run's id and status, its steps, its honesty check and
    the store that holds it, so that a caller reports without reading the store back."""

    run_id: int
    status: str
    outcome: RunOutcome
    honesty: dict[str, Any]
    store: ResultsStore


def run(config: RunConfig, live: Callable[[str], None] | None = print,
        observers: Sequence[StepObserver] | None = None) -> RunRecord:
    """Run ``config`` and record it; returns the run id and what happened.

    Everything that can be refused (schema, connection limit, results store) is
    checked before the first user connects, so a refused run leaves no trace.
    ``observers`` read beside every step and their readings are stored with the run
    (default: :func:`default_observers`). The steps, in order: :func:`_validate`,
    :func:`_prepare`, :func:`_plan`, :func:`_execute` and :func:`_reconcile`.
    """
    checked = _validate(config)
    prepared = _prepare(config, checked, live, observers)
    started = _plan(config, prepared, live)
    # the run is stored as running from here: whatever ends it now (a signal, a lost database) must end it there
    progress = Progress()
    try:
        _execute(config, prepared, started, progress, live)
    finally:
        honesty = _reconcile(prepared, started, progress)
    if progress.failed and live is not None:
        live(f"run {started.run_id} FAILED: {scrub_text(progress.failed, secrets_of(prepared.target.url))}")
    if honesty["match"] is False and live is not None:
        live(f"HONESTY CHECK {honesty_text(honesty)}")
    return RunRecord(started.run_id, progress.status, progress.outcome, honesty, started.store)


@dataclass(frozen=True)
class Checked:
    """What the config alone decides: the workload and the steps, each round's loads
    interleaved (1,20,50,1,20,50) with their arrival rates (0: a closed loop)."""

    workload: Workload
    steps: list[LoadStep]
    loads: list[int]
    paced: list[float]
    trace_dir: str
    endpoint: MetricsEndpoint | None


def _validate(config: RunConfig) -> Checked:
    """Everything the config alone can refuse, before any database is opened or anything
    written: a bad value costs one line and leaves no trace."""
    wl = get_workload(config.workload)
    trace_dir = trace_folder(config.trace_dir, config.rates, config.options)
    repeat = check_repeat(config.repeat, len(config.users))
    check_campaign_round(config.campaign_round, config.campaign_rounds, repeat)
    loads = config.users * repeat  # the rounds interleave: 1,20,50,1,20,50
    paced = step_rates(config.rates, config.users, config.options) * repeat
    steps = [LoadStep(users=u, duration_s=config.until_steady_s or config.duration_s, rampup_s=config.rampup_s,
                      least_s=config.duration_s if config.until_steady_s else None,
                      interval_s=config.interval_s, multiplex=config.multiplex, rate=rate, arrivals=config.arrivals,
                      trace_dir=trace_dir)
             for u, rate in zip(loads, paced)]
    check_steps(steps, None if config.cluster else config.processes or len(os.sched_getaffinity(0)))
    if config.seed is not None:
        check_seed(config.seed)
    check_text("the storage label", config.storage, STORAGE_LABEL_MOST)
    check_text("the notes", config.notes)
    check_cache(config.cache)
    check_warmup(config.warmup_s, config.cache, config.until_steady_s, config.duration_s, config.interval_s)
    endpoint = metrics_endpoint(config.metrics_addr, config.allow_remote)
    return Checked(wl, steps, loads, paced, trace_dir, endpoint)


@dataclass(frozen=True)
class Prepared:
    """The run's database and what goes with it, read before anything is stored."""

    checked: Checked
    target: Target
    ctx: RunContext
    facts: StorageFacts
    #: the storage label stored with the run: the one given, else the described configuration's
    label: str
    watch: list[StepObserver]
    cache: str
    memory: MemoryNotes
    cluster: DaskTransport | None


def _prepare(config: RunConfig, checked: Checked, live: Callable[[str], None] | None,
             observers: Sequence[StepObserver] | None) -> Prepared:
    """The database: built if asked and missing, its schema verified for the options, the
    run's context (scale, seed, constants) read from it; refused if another run is active
    on it. Whatever this opens (a Dask cluster) is the caller's to close."""
    wl = checked.workload
    target = open_target(config.url)
    facts = storage_facts(target, config.storage, config.storage_file, config.data_path)
    label = config.storage or (facts.described.name if facts.described else "")
    if config.build_scale is not None:
        build_if_missing(wl, config.build_scale, target, config.url, config.seed or 0, config.options)
    options = {**{o.name: o.default for o in wl.run_options}, **config.options}
    wl.configure(options)  # first: the schema is verified for the options (sysbench's --tables)
    if "client" in options:  # a statement path the database lacks: one line now, not one per user
        target.client_path(str(options["client"]))
    meta = wl.verify_schema(target)
    ctx = RunContext(
        workload=wl.name,
        url=target.url.render_as_string(hide_password=False),
        scale=int(meta.get("scale", "1")),
        seed=config.seed if config.seed is not None else secrets.randbelow(2**31),
        constants={k[len("const_"):]: int(v) for k, v in meta.items() if k.startswith("const_")},
        options=options,
    )
    if meta.get("note") and live is not None:
        live(meta["note"])
    other = active_run(target, wl.name)
    if other and not config.force:
        raise TpsbenchError(f"another run is active on the {wl.name} database at {target.describe()} "
                            f"({describe_mark(other)}): two runs at once fail each other's honesty check; "
                            "wait for it, or add --force")
    watch = default_observers(target, facts.devices) if observers is None else list(observers)
    cache, memory = cache_mode(config.cache, target)
    for note in facts.notes if live is not None else ():
        live(note)  # type: ignore[misc]  # not None: the loop runs only then
    cluster = connect_cluster(config, ctx.url, live)
    return Prepared(checked, target, ctx, facts, label, watch, cache, memory, cluster)


@dataclass(frozen=True)
class Started:
    """The run as stored (running), and the plan its steps follow. ``waiting`` holds any
    signal until the run's end is sure to be written (released by :func:`_execute`)."""

    plan: RunPlan
    store: ResultsStore
    run_id: int
    stored_config: dict[str, Any]
    waiting: Deferred


def _plan(config: RunConfig, prepared: Prepared, live: Callable[[str], None] | None) -> Started:
    """The worker pool sized, the workload's run prepared, and the run stored as running
    with its configuration. The last refusals come here (the connection limit, the results
    store), so on any error the cluster and the endpoint are closed and nothing is stored."""
    checked, target, ctx = prepared.checked, prepared.target, prepared.ctx
    wl, endpoint, cluster = checked.workload, checked.endpoint, prepared.cluster
    waiting = Deferred()
    try:
        if endpoint is not None:
            endpoint.start()
        plan = plan_run(ctx, wl, checked.steps, processes=config.processes, target=target,
                        warmup=warmup_step(config.warmup_s, checked.steps[0]),
                        beside=sum(o.connections for o in prepared.watch),
                        capacity=cluster.capacity if cluster else None)
        make_trace_folder(checked.trace_dir)
        prepared_run = wl.prepare_run(target, ctx.options, max(step.users for step in checked.steps))
        if prepared_run and live is not None:
            live(prepared_run)
        store = ResultsStore(config.results_url)
        for note in prepared.memory.notes if live is not None else ():  # once nothing can refuse the run
            live(note)  # type: ignore[misc]  # not None: the loop runs only then
        stored_config = stored_form(config)
        stored_config |= {"options": ctx.options, "scale": ctx.scale, "driver_host": driver_host(),
                          "storage": prepared.facts.stored(), "cache": prepared.cache,
                          "memory": prepared.memory.fit.stored(), **({"cluster": cluster.facts()} if cluster else {})}
        row: dict[str, Any] = {"db_url": target.describe(), "storage": prepared.label, "seed": ctx.seed,
                               "server": target.server_info(), "notes": config.notes, "tool_version": __version__,
                               "config": stored_config}
        # from the run's row to the try in _execute that ends it, a signal waits: one that came
        # between them left the run stored as running for ever
        waiting.hold()
        run_id = store.start_run(wl.name, **row)
    except BaseException:
        waiting.release()
        if cluster is not None:
            cluster.close(0.0)
        if endpoint is not None:
            endpoint.close()
        raise
    return Started(plan, store, run_id, stored_config, waiting)


@dataclass
class Progress:
    """How far :func:`_execute` got, filled in as it goes, for :func:`_reconcile` to end
    the run by whatever ended it."""

    outcome: RunOutcome = field(default_factory=lambda: RunOutcome(RunStatus.INTERRUPTED, []))
    status: str = "failed"
    #: the steps the store holds in full
    kept: list[int] = field(default_factory=list)
    #: a write failed, or a restart: the run stopped there
    stopped: StoreUnwritable | ServerDown | None = None
    #: the run's mark in the database (tpsbench.core.meta; "": none)
    mark: str = ""
    #: why a run that went through its steps failed: not one transaction did
    failed: str | None = None
    #: the database's own counts before the first step, once read
    before: dict[str, int] | None = None


def _execute(config: RunConfig, prepared: Prepared, started: Started, progress: Progress,
             live: Callable[[str], None] | None) -> None:
    """The steps, each interval and step stored as it ends (and served to the metrics
    endpoint), the database's counts read before them for the honesty check. A failed
    write or a server restart stops the run, noted in ``progress`` for :func:`_reconcile`."""
    checked, target, store, run_id = prepared.checked, prepared.target, started.store, started.run_id
    users_by_step = dict(enumerate(checked.loads, start=1)) | {WARMUP_STEP: config.users[0]}
    seen: list[Readings] = []  # the finished steps' steady readings, for the verdicts' unloaded awaits
    endpoint = checked.endpoint
    series = endpoint.add(run_id, config.campaign, target.describe(), prepared.label) if endpoint else None
    rates = dict(enumerate(checked.paced, start=1)) | {WARMUP_STEP: checked.paced[0]}

    def store_interval(report: IntervalReport) -> None:
        store.add_interval(run_id, report, users_by_step[report.step])
        if series is not None:
            series.interval(report, users_by_step[report.step], rates[report.step] or None)

    def store_step(result: StepOutcome) -> None:
        said = finish_step(store, run_id, result, live, secrets_of(target.url), config=started.stored_config,
                           seen=seen, db_url=target.describe())
        progress.kept.append(result.step)
        if series is not None and said is not None:
            series.step_ended(result.step, said.kind, said.subject)

    def empty(step: int) -> None:  # before each step of a cold run: outside every measured window
        emptied = empty_caches(target, step)
        if live is not None:
            live(emptied.line)
        if emptied.outage is not None:
            store.add_readings(run_id, step, BEFORE_STEP, {Reachability.name: outage_figures([emptied.outage],
                                                                                             *emptied.outage)})

    wl = checked.workload
    try:
        started.waiting.release()  # a signal that waited ends the run from here
        if live is not None:
            live(plan_line(run_id, config, store.url))
        progress.mark = note_run_started(target, wl.name, run_id) if read_meta(target, wl.name) else ""
        progress.before = database_counts(wl, target)
        progress.outcome = run_plan(
            started.plan,
            on_interval=store_interval,
            on_step=store_step,
            live=live, observers=prepared.watch, transport=prepared.cluster,
            before_step=empty if prepared.cache == "cold" else None,
        )
        keep_warmup(store, run_id, progress.outcome, live, secrets_of(target.url))
        status = progress.outcome.status.value
        progress.failed = all_failed(progress.outcome) if status == "completed" else None
        progress.status = "failed" if progress.failed else status
    except KeyboardInterrupt:  # a second Ctrl-C, or a signal while workers start: what finished is kept
        progress.status = "interrupted"
        raise
    except (StoreUnwritable, ServerDown) as exc:  # the workers are stopped; said once the run is cleaned up
        progress.stopped = exc


def _reconcile(prepared: Prepared, started: Started, progress: Progress) -> dict[str, Any]:
    """However the run ended: the cluster and endpoint closed, the database's counts
    checked against the driver's (unless the run stopped before any step came back), and
    the run's end and mark written, even on a signal. Raises what stopped the run once
    the store says so; returns the honesty check."""
    checked, target, wl = prepared.checked, prepared.target, prepared.checked.workload
    stopped, outcome = progress.stopped, progress.outcome
    if prepared.cluster is not None:  # run_plan closed it, unless the run ended before it
        prepared.cluster.close(0.0)
    if checked.endpoint is not None:
        checked.endpoint.close()
    if stopped is not None:  # no step outcome comes back from a run_plan that raised
        honesty: dict[str, Any] = {"match": None, "skipped": f"the run stopped: {stopped}"}
    elif progress.before is None or (progress.status == "interrupted" and not outcome.steps):
        honesty = {"match": None, "skipped": f"{progress.status} before the steps' counts were in"}
    else:
        try:
            honesty = honesty_check(wl, progress.before, database_counts(wl, target),
                                    (result.total() for result in outcome.phases()),
                                    [why for result in outcome.phases() for why in result.unreported])
        except KeyboardInterrupt as exc:  # the run's steps are done and kept; it ends interrupted, unchecked
            progress.status, outcome.signal = "interrupted", signal_of(exc)
            honesty = {"match": None, "skipped": "interrupted during the honesty check"}
    unended: StoreUnwritable | None = None
    with Deferred():  # a signal now waits until the run's end is written (else it stays running)
        try:
            started.store.finish_run(started.run_id, progress.status, honesty)
        except StoreUnwritable as exc:
            unended = exc
        if progress.mark and not isinstance(stopped, ServerDown):  # a down server's mark is ignored once we are gone
            note_run_ended(target, wl.name, progress.mark)
    failure = stopped or unended
    if failure is not None:  # also in place of a second Ctrl-C: what the store holds is the news
        # steps run in order and the first failed write (or restart) stops the run: in the step after those kept
        kept = progress.kept
        raise failure.run_ended(started.run_id, kept, during=len(kept) + 1 if stopped else None,
                                end_written=unended is None) from failure
    return honesty
