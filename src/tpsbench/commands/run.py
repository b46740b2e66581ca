"""Run a workload at stepped user loads and record it: the API behind ``tpsbench run``.

The runner ties the parts together and adds what no single part can know: the run's
identity in the results store (configuration, seed, server settings, storage label),
the step observers that read beside every step (host CPU by default), and the honesty
check (tpsbench.measure.honesty): the database's own counts read before the first step
and after the last, against what the driver counted.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from tpsbench import __version__
from tpsbench.commands.build import build_if_missing
from tpsbench.commands.cache import ServerDown, cold_refused, empty_caches
from tpsbench.commands.pacing_options import make_trace_folder, step_rates, trace_folder
from tpsbench.commands.step_end import all_failed, finish_step
from tpsbench.commands.storage import storage_facts
from tpsbench.commands.warmup import check_warmup, keep_warmup, measured_text, warmup_step, warmup_text, warmup_total
from tpsbench.core.errors import TpsbenchError, signal_of
from tpsbench.core.meta import active_run, describe_mark, note_run_ended, note_run_started, read_meta
from tpsbench.core.parse import check_cache, check_seed, check_text
from tpsbench.core.redact import scrub_text, secrets_of
from tpsbench.core.repeats import check_campaign_round, check_repeat
from tpsbench.core.session import RunContext
from tpsbench.core.signals import Deferred
from tpsbench.core.target import Target
from tpsbench.core.workload import Workload
from tpsbench.engine.coordinator import RunOutcome, RunStatus, StepOutcome, plan_run, run_plan
from tpsbench.engine.steps import LoadStep, check_steps
from tpsbench.measure.db_counters import DatabaseCounters
from tpsbench.measure.db_waits import DbWaits
from tpsbench.measure.devices import Device
from tpsbench.measure.disk_io import DiskIo
from tpsbench.measure.honesty import honesty_check, honesty_text
from tpsbench.measure.host_cpu import HostCpu
from tpsbench.measure.host_info import driver_host
from tpsbench.measure.memory import MemoryFit, memory_fit
from tpsbench.measure.observers import Readings, StepObserver
from tpsbench.measure.reachability import Reachability, outage_figures
from tpsbench.measure.reports import IntervalReport, clock
from tpsbench.report.metrics import metrics_endpoint
from tpsbench.results.schema import BEFORE_STEP, STORAGE_LABEL_MOST, WARMUP_STEP
from tpsbench.results.store import ResultsStore, StoreUnwritable
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload

if TYPE_CHECKING:
    from tpsbench.engine.dask.transport import DaskTransport

DEFAULT_USERS = (1, 20, 50, 100, 300)


@dataclass
class RunConfig:
    """What a run does; stored whole with the run (without the database password)."""

    workload: str
    url: str | None = None
    users: list[int] = field(default_factory=lambda: list(DEFAULT_USERS))
    rampup_s: float = 30.0
    duration_s: float = 120.0
    interval_s: float = 10.0
    #: a warm-up at the first step's load before it, stored as step 0, never measured (0: none)
    warmup_s: float = 0.0
    #: --until-steady: each step measures at least duration_s, then ends once steady, or at this (None: off)
    until_steady_s: float | None = None
    storage: str = ""
    #: a TOML file describing storage configurations (tpsbench.core.storage); ``storage`` names one
    storage_file: str | None = None
    #: a folder of the database's data, where the server cannot say (or is not asked)
    data_path: str | None = None
    #: the campaign this run belongs to, and its target's number in it (tpsbench.commands.campaign)
    campaign: int | None = None
    campaign_target: int | None = None
    #: a sequential campaign's round of this run and its rounds (tpsbench.core.repeats; None: not one)
    campaign_round: int | None = None
    campaign_rounds: int | None = None
    #: each load is run this many times, the rounds interleaved: 1,20,1,20 (tpsbench.core.repeats)
    repeat: int = 1
    workers: int | None = None
    #: None draws a seed, which is stored with the run so that it can be repeated
    seed: int | None = None
    options: dict[str, str] = field(default_factory=dict)
    results_url: str | None = None
    notes: str = ""
    #: build the workload at this scale first when the database has no build of it
    build_scale: int | None = None
    #: users of single-call sessions share one thread per worker (tpsbench.engine.multiplex)
    multiplex: bool = True
    #: run even while another run is active on the same data (both honesty checks then fail)
    force: bool = False
    #: paced steps (tpsbench.engine.pacing): arrivals per second, one per step or one for
    #: all (empty: closed loops), and how they are spaced ("poisson" or "fixed")
    rates: list[float] = field(default_factory=list)
    arrivals: str = "poisson"
    #: a folder where paced steps write every transaction's timestamps (None: no trace)
    trace_dir: str | None = None
    #: the Dask scheduler whose workers host the users (tpsbench.engine.dask.cluster; None:
    #: processes on this host), and the workers to use by name, address or host (empty: all)
    cluster: str | None = None
    cluster_workers: list[str] = field(default_factory=list)
    #: "warm" (say when the database fits in memory), "cached" (that is the point: say
    #: nothing) or "cold" (empty the caches before each step: tpsbench.commands.cache)
    cache: str = "warm"
    #: serve the run's figures to Prometheus at [HOST:]PORT (tpsbench.report.metrics), and
    #: whether HOST may be other than this host's loopback
    metrics_addr: str | None = None
    allow_remote: bool = False


@dataclass
class RunRecord:
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
    (default: :func:`default_observers`).
    """
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
    # everything the config alone can refuse, before anything is written
    check_steps(steps, None if config.cluster else config.workers or len(os.sched_getaffinity(0)))
    if config.seed is not None:
        check_seed(config.seed)
    check_text("the storage label", config.storage, STORAGE_LABEL_MOST)
    check_text("the notes", config.notes)
    check_cache(config.cache)
    check_warmup(config.warmup_s, config.cache, config.until_steady_s, config.duration_s, config.interval_s)
    endpoint = metrics_endpoint(config.metrics_addr, config.allow_remote)
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
    seed = config.seed if config.seed is not None else secrets.randbelow(2**31)
    ctx = RunContext(
        workload=wl.name,
        url=target.url.render_as_string(hide_password=False),
        scale=int(meta.get("scale", "1")),
        seed=seed,
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
    cache, memory = _cache_mode(config.cache, target)
    for note in facts.notes if live is not None else ():
        live(note)  # type: ignore[misc]  # not None: the loop runs only then
    cluster = _cluster(config, ctx.url, live)
    waiting = Deferred()
    try:
        if endpoint is not None:
            endpoint.start()
        plan = plan_run(ctx, wl, steps, workers=config.workers, target=target,
                        warmup=warmup_step(config.warmup_s, steps[0]), beside=sum(o.connections for o in watch),
                        capacity=cluster.capacity if cluster else None)
        make_trace_folder(trace_dir)
        prepared = wl.prepare_run(target, ctx.options)
        if prepared and live is not None:
            live(prepared)
        store = ResultsStore(config.results_url)
        for note in memory.notes if live is not None else ():  # once nothing can refuse the run
            live(note)  # type: ignore[misc]  # not None: the loop runs only then
        stored_config = stored_form(config)
        stored_config |= {"options": ctx.options, "scale": ctx.scale, "driver_host": driver_host(),
                          "storage": facts.stored(), "cache": cache, "memory": memory.fit.stored(),
                          **({"cluster": cluster.facts()} if cluster else {})}
        row: dict[str, Any] = {"db_url": target.describe(), "storage": label, "seed": seed,
                               "server": target.server_info(), "notes": config.notes, "tool_version": __version__,
                               "config": stored_config}
        # from the run's row to the try below that ends it, a signal waits: one that came
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
    users_by_step = dict(enumerate(loads, start=1)) | {WARMUP_STEP: config.users[0]}
    outcome = RunOutcome(RunStatus.INTERRUPTED, [])
    status = "failed"
    kept: list[int] = []  # the steps the store holds in full
    stopped: StoreUnwritable | ServerDown | None = None  # a write failed, or a restart: the run stopped there
    mark = ""
    failed: str | None = None  # why a run that went through its steps failed: not one transaction did
    before: dict[str, int] | None = None  # the database's own counts, once read
    seen: list[Readings] = []  # the finished steps' steady readings, for the verdicts' unloaded awaits

    series = endpoint.add(run_id, config.campaign, target.describe(), label) if endpoint else None
    rates = dict(enumerate(paced, start=1)) | {WARMUP_STEP: paced[0]}

    def store_interval(report: IntervalReport) -> None:
        store.add_interval(run_id, report, users_by_step[report.step])
        if series is not None:
            series.interval(report, users_by_step[report.step], rates[report.step] or None)

    def store_step(result: StepOutcome) -> None:
        said = finish_step(store, run_id, result, live, secrets_of(target.url), config=stored_config, seen=seen,
                            db_url=target.describe())
        kept.append(result.step)
        if series is not None and said is not None:
            series.step_ended(result.step, said.kind, said.subject)

    def empty(step: int) -> None:  # before each step of a cold run: outside every measured window
        emptied = empty_caches(target, step)
        if live is not None:
            live(emptied.line)
        if emptied.outage is not None:
            store.add_readings(run_id, step, BEFORE_STEP, {Reachability.name: outage_figures([emptied.outage],
                                                                                             *emptied.outage)})

    # the run is stored as running from here: whatever ends it now (a signal, a lost database) must end it there
    try:
        waiting.release()  # a signal that waited ends the run from here
        if live is not None:
            live(plan_line(run_id, config, store.url))
        mark = note_run_started(target, wl.name, run_id) if read_meta(target, wl.name) else ""
        before = _database_counts(wl, target)
        outcome = run_plan(
            plan,
            on_interval=store_interval,
            on_step=store_step,
            live=live, observers=watch, transport=cluster, before_step=empty if cache == "cold" else None,
        )
        keep_warmup(store, run_id, outcome, live, secrets_of(target.url))
        status = outcome.status.value
        failed = all_failed(outcome) if status == "completed" else None
        status = "failed" if failed else status
    except KeyboardInterrupt:  # a second Ctrl-C, or a signal while workers start: what finished is kept
        status = "interrupted"
        raise
    except (StoreUnwritable, ServerDown) as exc:  # the workers are stopped; said below once the run is cleaned up
        stopped = exc
    finally:
        if cluster is not None:  # run_plan closed it, unless the run ended before it
            cluster.close(0.0)
        if endpoint is not None:
            endpoint.close()
        if stopped is not None:  # no step outcome comes back from a run_plan that raised
            honesty: dict[str, Any] = {"match": None, "skipped": f"the run stopped: {stopped}"}
        elif before is None or (status == "interrupted" and not outcome.steps):  # cut short before any step came back
            honesty = {"match": None, "skipped": f"{status} before the steps' counts were in"}
        else:
            try:
                honesty = honesty_check(wl, before, _database_counts(wl, target),
                                        (result.total() for result in outcome.phases()),
                                        [why for result in outcome.phases() for why in result.unreported])
            except KeyboardInterrupt as exc:  # the run's steps are done and kept; it ends interrupted, unchecked
                status, outcome.signal = "interrupted", signal_of(exc)
                honesty = {"match": None, "skipped": "interrupted during the honesty check"}
        unended: StoreUnwritable | None = None
        with Deferred():  # a signal now waits until the run's end is written (else it stays running)
            try:
                store.finish_run(run_id, status, honesty)
            except StoreUnwritable as exc:
                unended = exc
            if mark and not isinstance(stopped, ServerDown):  # a down server's mark is ignored once we are gone
                note_run_ended(target, wl.name, mark)
        failure = stopped or unended
        if failure is not None:  # also in place of a second Ctrl-C: what the store holds is the news
            # steps run in order and the first failed write (or restart) stops the run: in the step after those kept
            raise failure.run_ended(run_id, kept, during=len(kept) + 1 if stopped else None,
                                    end_written=unended is None) from failure
    if failed and live is not None:
        live(f"run {run_id} FAILED: {scrub_text(failed, secrets_of(target.url))}")
    if honesty["match"] is False and live is not None:
        live(f"HONESTY CHECK {honesty_text(honesty)}")
    return RunRecord(run_id, status, outcome, honesty, store)


def stored_form(config: RunConfig) -> dict[str, Any]:
    """The config as the run stores it: no URL (it may hold a password), and one key for
    repeats (tpsbench.core.repeats): ``repeat``, or a sequential campaign's round keys."""
    drop = {"url", "results_url"} | ({"repeat"} if config.campaign_rounds else {"campaign_round", "campaign_rounds"})
    return {k: v for k, v in asdict(config).items() if k not in drop}


def _cluster(config: RunConfig, url: str, live: Callable[[str], None] | None) -> DaskTransport | None:
    """The Dask cluster's workers, checked, when the run has one. Imported here only, so
    that tpsbench without the ``distributed`` extra never imports Dask."""
    if not config.cluster:
        return None
    from tpsbench.engine.dask.cluster import connect, describe

    cluster = connect(config.cluster, config.cluster_workers, url)
    if live is not None:
        live(describe(cluster))
    return cluster


@dataclass(frozen=True)
class MemoryNotes:
    fit: MemoryFit
    notes: list[str]


def _cache_mode(asked: str, target: Target) -> tuple[str, MemoryNotes]:
    """The cache mode the run gets, and what to say of it before the run: why ``cold``
    cannot be (the run goes on warm), and whether the whole database fits in memory
    (unless a cached run is the point)."""
    notes = []
    why = cold_refused(target) if asked == "cold" else ""
    if why:
        notes.append(f"--cache cold: {why}, so the page cache and the server's buffer pool stay warm")
    cache = "warm" if why else asked
    fit = memory_fit(target)
    if cache == "warm" and fit.line():
        notes.append(fit.line())
    return cache, MemoryNotes(fit, notes)


def default_observers(target: Target, devices: Sequence[Device]) -> list[StepObserver]:
    """What reads beside every step unless told otherwise: the host's CPU (the server's
    share apart where it runs here, its process found once per run), the database's
    outages, its own counters and its sessions' waits (where it has sessions), and the
    I/O of the devices its data lives on."""
    watch: list[StepObserver] = [HostCpu(find_server=target.server_pid), Reachability(target),
                                 DatabaseCounters(target)]
    if target.wait_kinds:
        watch.append(DbWaits(target))
    return watch + [DiskIo(devices)] if devices else watch


def plan_line(run_id: int, config: RunConfig, results: str) -> str:
    """What the run will do, said before it starts: its steps, their timing, about how long
    in all (each step's start takes about a second more) and where its results go."""
    each = config.rampup_s + (config.until_steady_s or config.duration_s)
    total = len(config.users) * config.repeat * (each + 1.0) + warmup_total(config.warmup_s, config.rampup_s)
    rounds = f"{config.repeat} rounds of " if config.repeat > 1 else ""
    return (f"run {run_id}: {warmup_text(config.warmup_s)}{rounds}{len(config.users)} step(s) of "
            f"{', '.join(map(str, config.users))} users, each "
            f"{measured_text(config.rampup_s, config.duration_s, config.until_steady_s)}, a line every "
            f"{clock(config.interval_s)}: about {clock(total)} in all; results in {results}")


def _database_counts(wl: Workload, target: Target) -> dict[str, int]:
    with target.translate_errors("reading the database's own counters"):
        conn = target.connect()
        try:
            return wl.database_counts(conn)
        finally:
            conn.close()
