"""What a run does (:class:`RunConfig`), the form in which it is stored with the run, and
the line that says it before the run starts: apart from the runner (tpsbench.commands.run)
so that readers of a stored configuration need not import the engine."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tpsbench.commands.warmup import measured_text, warmup_text, warmup_total
from tpsbench.measure.reports import clock

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
    #: driver processes hosting the users, every step spread over all of them (None: the engine's default)
    processes: int | None = None
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
    #: the Dask scheduler whose Dask workers host the users (tpsbench.engine.dask.cluster; None:
    #: processes on this host), and the Dask workers to use by name, address or host (empty: all)
    cluster: str | None = None
    cluster_workers: list[str] = field(default_factory=list)
    #: "warm" (say when the database fits in memory), "cached" (that is the point: say
    #: nothing) or "cold" (empty the caches before each step: tpsbench.commands.cache)
    cache: str = "warm"
    #: serve the run's figures to Prometheus at [HOST:]PORT (tpsbench.report.metrics), and
    #: whether HOST may be other than this host's loopback
    metrics_addr: str | None = None
    allow_remote: bool = False


def stored_form(config: RunConfig) -> dict[str, Any]:
    """The config as the run stores it: no URL (it may hold a password), and one key for
    repeats (tpsbench.core.repeats): ``repeat``, or a sequential campaign's round keys."""
    drop = {"url", "results_url"} | ({"repeat"} if config.campaign_rounds else {"campaign_round", "campaign_rounds"})
    return {k: v for k, v in asdict(config).items() if k not in drop}


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
