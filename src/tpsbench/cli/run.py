"""``tpsbench run WORKLOAD`` and the commands that read the results store.

``run`` has one subcommand per workload, so that each workload's own options (TPC-C's
--think and --warehouses, sysbench's --mode ...) appear in its --help, generated from
the options the workload declares.
"""

from __future__ import annotations

import signal
from typing import Any

import click

from tpsbench.cli.options import (
    DURATION_FORM,
    Decorator,
    WorkloadGroup,
    db_option,
    duration_option,
    given,
    metrics_options,
    refuse_orphans,
    results_option,
    scale_of,
    scale_option,
    stack,
    workload_option,
)
from tpsbench.core.delays import MIN_GAP_S
from tpsbench.core.errors import EXIT_CODES, TpsbenchError
from tpsbench.core.parse import (
    CACHE_MODES,
    MAX_STEPS,
    MIN_INTERVAL_S,
    check_timing,
    parse_duration,
    parse_rates,
    parse_users,
)
from tpsbench.core.repeats import MAX_REPEAT, MAX_REPEAT_STEPS, check_repeat
from tpsbench.core.workload import Workload
from tpsbench.engine.pacing import MAX_RATE_PER_PROCESS

PROCESSES = click.IntRange(min=1)


def common_run_options(cls: type[Workload]) -> Decorator:
    """The options every workload's run takes: the user-load steps, their timing, the
    driver's processes, and what to build first if the database has no build."""
    return stack(
        db_option,
        click.option("--users", default="1,20,50,100,300", show_default=True, metavar="LIST",
                     help="Virtual users of each step, a LIST like 1,20,50: the steps run one after the other"
                          f" (at most {MAX_STEPS})."),
        duration_option("rampup", "30s", "Per step: the users connect spread over this time, which is not measured."),
        duration_option("duration", "2m", "Per step: the steady-state window, the only time measured."),
        duration_option("interval", "10s", "How often the live line prints, and the length of a stored interval:"
                                           f" from {MIN_INTERVAL_S:g}s (what this host reports on time) to --duration"
                                           " (the default is cut to a shorter --duration)."),
        duration_option("warmup", "0s", "Before the first step: run its users (after its --rampup) this long,"
                                        " unmeasured, so that its figures start on warm caches, a full buffer pool"
                                        " and a settled WAL rather than measuring them filling (SNIA's"
                                        " preconditioning). Its intervals are stored and charted as the"
                                        " warm-up (step 0), never in a step's figures. 0s: none; refused with"
                                        " --cache cold, which empties the caches again."),
        click.option("--until-steady", default=None, metavar="MAX",
                     help="Per step: measure at least --duration, then go on interval by interval until the last"
                          " five steady intervals pass SNIA's steady-state test (TPS and p95 each within a 20%"
                          " range and a 10% slope of their average), at most MAX in all: a step that settles"
                          " fast ends early, a slow one gets the time it needs, and each says (and stores) which"
                          " happened. MAX is at least five --interval and --duration. With --warmup, the warm-up"
                          f" ends once steady too. A {DURATION_FORM}."),
        click.option("--repeat", type=int, default=1, show_default=True, metavar="N",
                     help="Run every step N times, the rounds interleaved: --users 1,20,50 --repeat 3 runs"
                          " 1,20,50,1,20,50,1,20,50, so that a slow drift (a cache filling, a drive warming)"
                          " spreads over every load alike rather than reading as a difference between them; the"
                          " steps are stored in that order, numbered on (7 is round 3's 1 user), and the report"
                          f" gives each load's figures over its repeats. From 1 to {MAX_REPEAT}, and at most"
                          f" {MAX_REPEAT_STEPS:,} steps in all. --warmup runs once, before the first step."),
        click.option("--storage", default="", metavar="LABEL",
                     help="Name of the storage configuration under test, e.g. 'RAID10 8x SSHD' (compare takes it)."),
        click.option("--storage-file", default=None, metavar="FILE",
                     help="A TOML file describing storage configurations as reviews do (drives, model, RPM, "
                          "interface, RAID level, controller, ...); --storage names the one under test, and its "
                          "description is stored with the run."),
        click.option("--data-path", default=None, metavar="PATH",
                     help="A folder of the database's data, for finding the devices whose I/O is read beside "
                          "every step. Default: the server's own data directory, tablespaces and log folders, "
                          "when it runs on this host."),
        click.option("--processes", type=PROCESSES, default=None, metavar="N",
                     help="Driver processes hosting the virtual users, every step spread over all of them. Default:"
                          " at most one per core, and for TPC-C with stored procedures one per 100 users of a step"
                          " (fuller processes take less CPU from a database on the same cores)."),
        click.option("--cluster", envvar="TPSBENCH_CLUSTER", default=None, metavar="ADDRESS",
                     help="Host the virtual users on the Dask workers of a Dask cluster (pip install"
                          " 'tpsbench[distributed]'): ADDRESS is its scheduler's, tcp://HOST:8786 [env"
                          " TPSBENCH_CLUSTER]. Start `dask scheduler` on one machine and `dask worker tcp://HOST:8786`"
                          " on each client machine; this one stays the coordinator, stores the results and prints"
                          " the live line. Each Dask worker must reach the database by the --db URL from its own host,"
                          " and this host at the port tpsbench listens on. --processes then counts driver processes"
                          " over the whole cluster; a SQLite --db needs its absolute path (sqlite:////data/tpcc.db)."
                          " The address carries no user or password. Default: processes on this host."),
        click.option("--cluster-workers", default=None, metavar="LIST",
                     help="With --cluster: only these Dask workers, a LIST of Dask worker names, addresses or hosts"
                          " (a host stands for all its Dask workers). Default: every Dask worker of the cluster."),
        click.option("--multiplex/--no-multiplex", default=True, show_default=True,
                     help="Let one thread per process wait on the sockets of all its users whose transactions go"
                          " statement by statement through libpq or mysqlclient (TPC-C with stored procedures,"
                          " every sysbench mode): less client CPU per transaction than a thread per user."
                          " --no-multiplex gives every user a thread of its own."),
        click.option("--rate", default=None, metavar="TPS[,TPS...]",
                     help="Pace each step: transactions start on a schedule of this many a second for all its users"
                          " (one rate, or one per step), whether or not earlier ones have answered; a transaction"
                          " waiting for a free user queues, and its latency counts from its scheduled start. The"
                          " report adds the offered and achieved rates, the queue, and the schedule lag and service"
                          " time apart. Each driver process takes at most"
                          f" {MAX_RATE_PER_PROCESS:,} a second (--processes spreads more). Default: no pacing, each"
                          " user starts its next transaction when its last one answered."),
        click.option("--arrivals", type=click.Choice(["poisson", "fixed"]), default="poisson", show_default=True,
                     help="With --rate: how a paced step's arrivals are spaced, exponential gaps (independent"
                          " arrivals, as clients send them) or evenly."),
        click.option("--trace", default=None, metavar="DIR",
                     help="Write every transaction of the paced steps to DIR/step<N>-worker<M>.csv: user, name,"
                          " scheduled start, start and end (ns since the step began), committed; for checking the"
                          " latencies against your own arithmetic."),
        click.option("--think", default="off", show_default=True, metavar="WAIT",
                     help="Each user's wait after a transaction: off, spec (the workload's rules: TPC-C's clause"
                          " 5.2.5), fixed:2s, uniform:1s..3s or negexp:2s[,cap=10x] (a negative exponential of that"
                          " mean, cut at 10 times it). Never part of a latency."),
        click.option("--keying", default=None, metavar="WAIT",
                     help="Each user's wait before a transaction, spelt as --think. Default: spec where --think is"
                          " spec, else off."),
        click.option("--interarrival", default="off", show_default=True, metavar="WAIT",
                     help="Pace each user on its own: its transactions start this far apart (fixed:2s,"
                          " uniform:1s..3s, negexp:2s), whether or not the last one has answered, and their latency"
                          " counts from the scheduled start, as with --rate. A mean gap of at least"
                          f" {MIN_GAP_S * 1000:g}ms: a shorter one a timed wait here does not keep."),
        click.option("--cache", type=click.Choice(CACHE_MODES), default="warm", show_default=True,
                     help="What the caches between the database and its storage hold at each step. warm: whatever"
                          " they hold, and a line before the run when the whole database fits in the server's buffer"
                          " pool or this host's page cache (reads will not reach the storage); cached: a run from"
                          " memory is the point, so no line; cold: before each step's ramp-up, as root on the"
                          " database's host, sync and drop the OS page cache and restart the server to empty its"
                          " buffer pool (the restart is stored as an outage before the step, outside every measured"
                          " window, and shown as 'Restart before (s)' in the report and before_step in its JSON); a"
                          " restart that leaves the server down ends the run there, failed, with the steps before"
                          " kept. Without root or on a remote server, cold says so in one line and runs warm."),
        metrics_options,
        click.option("--seed", type=int, default=None, metavar="SEED",
                     help="Random seed, 0 to 2^63-1 (default: drawn, and stored with the run)."),
        click.option("--force", is_flag=True,
                     help="Run even while another run is active on the same database (both honesty checks then"
                          " fail: each counts the other's commits)."),
        click.option("--notes", default="", metavar="NOTE", help="Free text stored with the run."),
        click.option("--campaign", "campaign", default=None, hidden=True, metavar="ID:N",
                     help="Set by `tpsbench campaign` for its runs: the campaign's id and the target's number."),
        click.option("--campaign-round", default=None, hidden=True, metavar="R/N",
                     help="Set by a sequential `tpsbench campaign` with repeat = N: this run's round of N."),
        click.option("--build-if-missing", is_flag=True,
                     help="Build the workload at --scale first when the database has no build of it."),
        scale_option(cls, "What --build-if-missing builds", required=False, alias=False),
        results_option,
    )


def waits(values: dict[str, Any]) -> dict[str, str]:
    """--think, --keying and --interarrival as the run's options (tpsbench.core.delays)."""
    chosen = {"think": values["think"], "interarrival": values["interarrival"]}
    return chosen | ({"keying": values["keying"]} if values["keying"] is not None else {})


def cluster_workers(cluster: str | None, text: str | None) -> list[str]:
    """``--cluster-workers`` as a list; given without --cluster it would do nothing, so it is refused."""
    if text is None:
        return []
    if not cluster:
        raise click.UsageError("--cluster-workers chooses among the workers of --cluster: give --cluster ADDRESS"
                               " too (or TPSBENCH_CLUSTER)")
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise click.BadParameter("must name at least one worker", param_hint="--cluster-workers")
    return names


def campaign_fields(text: str | None, round_text: str | None = None) -> dict[str, int | None]:
    """``ID:N`` of the hidden --campaign as RunConfig's campaign and campaign_target, and
    ``R/N`` of the hidden --campaign-round as its campaign_round and campaign_rounds."""
    rounds: dict[str, int | None] = {"campaign_round": None, "campaign_rounds": None}
    if round_text is not None:
        number, _, of = round_text.partition("/")
        if not (number.isdigit() and of.isdigit()) or text is None:
            raise click.BadParameter(f"must be R/N, with --campaign, not {round_text!r}", param_hint="--campaign-round")
        rounds = {"campaign_round": int(number), "campaign_rounds": int(of)}
    if text is None:
        return {"campaign": None, "campaign_target": None} | rounds
    campaign, _, target = text.partition(":")
    if not (campaign.isdigit() and target.isdigit()):
        raise click.BadParameter(f"must be ID:N, not {text!r}", param_hint="--campaign")
    return {"campaign": int(campaign), "campaign_target": int(target)} | rounds


def build_scale(cls: type[Workload], wanted: bool, scale: str | None) -> int | None:
    """The scale ``--build-if-missing --scale SCALE`` builds at (None: no build); either
    of the two without the other is a slip, said in one line."""
    if wanted and scale is None:
        raise click.UsageError(f"--build-if-missing needs --scale SCALE: a number of {cls.scale_unit},"
                               f" or a preset (tpsbench presets {cls.name})")
    if scale is not None and not wanted:
        raise click.UsageError("--scale is what --build-if-missing builds: give --build-if-missing too,"
                               " or neither to run on the database as it is")
    return None if scale is None else scale_of(cls, scale)


def warmup_seconds(values: dict[str, Any], cache: str, duration_s: float, interval_s: float) -> dict[str, Any]:
    """``--warmup`` and ``--until-steady`` in seconds, checked as the run checks them with the
    steps' timing (a campaign's too)."""
    from tpsbench.commands.warmup import check_warmup

    seconds = _seconds("warmup", values["warmup"])
    until = _seconds("until-steady", values["until_steady"]) if values["until_steady"] else None
    check_warmup(seconds, cache, until, duration_s, interval_s)
    return {"warmup_s": seconds, "until_steady_s": until}


def _seconds(flag: str, text: str) -> float:
    """A duration option's seconds, or one line naming the option and its value."""
    try:
        return parse_duration(text)
    except TpsbenchError as exc:
        raise TpsbenchError(f"--{flag} {text}: {exc}") from None


#: the honesty check's verdict as the last line says it (None: no step's counts came back)
HONESTY = {True: "matches", False: "FAILED", None: "skipped (no step finished)"}


def _make_run_command(cls: type[Workload]) -> click.Command:
    """``run <workload>``: the common options and the workload's own, from its declaration."""
    name, options = cls.name, cls.run_options
    doc = (cls.__doc__ or f"Run the {cls.name} workload.").strip()

    def command(**values: Any) -> None:
        from tpsbench.commands.run import RunConfig, run
        from tpsbench.report.table import render

        refuse_orphans(options, values)
        if given("arrivals") and not values["rate"]:
            raise click.UsageError("--arrivals spaces the arrivals of --rate: give --rate TPS too, or leave it out")
        timing: dict[str, Any] = {f"{key}_s": _seconds(key, values[key]) for key in ("rampup", "duration", "interval")}
        check_timing(**timing, interval_given=given("interval"))
        phases = warmup_seconds(values, values["cache"], timing["duration_s"], timing["interval_s"])
        users = parse_users(values["users"])
        config = RunConfig(
            workload=name, url=values["url"], users=users, **timing, **phases,
            storage=values["storage"], processes=values["processes"],
            seed=values["seed"], options={**{o.name: str(values[o.name]) for o in options}, **waits(values)},
            results_url=values["results_url"], notes=values["notes"],
            build_scale=build_scale(cls, values["build_if_missing"], values["scale"]),
            multiplex=values["multiplex"], force=values["force"],
            storage_file=values["storage_file"], data_path=values["data_path"],
            rates=parse_rates(values["rate"]), arrivals=values["arrivals"], trace_dir=values["trace"],
            cluster=values["cluster"], cluster_workers=cluster_workers(values["cluster"], values["cluster_workers"]),
            cache=values["cache"], metrics_addr=values["metrics_addr"], allow_remote=values["allow_remote"],
            repeat=check_repeat(values["repeat"], len(users)),
            **campaign_fields(values["campaign"], values["campaign_round"]),  # type: ignore[arg-type]  # campaign_id, campaign_step: int | None
        )
        record = run(config, live=lambda line: click.echo(line, err=True))
        if config.campaign is None:  # a campaign's run: the campaign shows its targets side by side
            click.echo(render([record.store.load_run(record.run_id)]), nl=False)
        short = [str(step.step) for step in record.outcome.steps if step.problems]
        click.echo(f"run {record.run_id}: {record.status}"
                   f"{'; step ' + ', '.join(short) + ' ran short of its plan (PROBLEM above)' if short else ''}"
                   f"; honesty check {HONESTY[record.honesty['match']]}")
        if record.status == "interrupted":
            raise SystemExit(EXIT_CODES[record.outcome.signal or signal.SIGINT])
        if not record.honesty["match"] or record.status != "completed" or short:
            raise SystemExit(1)

    decorate = stack(common_run_options(cls), *(workload_option(option) for option in options))
    return click.command(name=name, help=doc)(decorate(command))


class RunGroup(WorkloadGroup):
    """``run``, which also takes ``--like RUN`` in place of the workload: the stored run's
    options (tpsbench.commands.like), then those given beside it, which win."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and (args[0] == "--like" or args[0].startswith("--like=")):
            from tpsbench.commands.like import like_command_line

            args = like_command_line(args)
        return super().parse_args(ctx, args)


@click.group(cls=RunGroup, make_command=_make_run_command)
def run() -> None:
    """Run WORKLOAD at stepped user loads and record every step in the results store.

    \b
    Each step: users connect spread over --rampup, then the --duration window is
    measured; a live line prints every --interval; at the end, a table with user loads
    across and TPS, response times and percentiles down, and the host's CPU. Ctrl-C,
    SIGTERM or SIGHUP (to tpsbench or its whole process group) ends it within seconds,
    keeps every finished interval, stores it as interrupted and exits 130, 143 or 129.
    --warmup runs the first step's load before it, stored apart and never in a step's
    figures; --until-steady MAX measures each step on past --duration until SNIA's
    steady-state test holds over its last five intervals, or MAX; --repeat N runs the
    whole list of loads N times over, interleaved, so the report can say how much a
    figure varies between repeats.

    \b
      tpsbench run tpcc --build-if-missing --scale 1 --users 1,4,8 --duration 20s
      tpsbench run tpcc --users 1,20,50 --duration 5m --storage "RAID10 8x SSHD"
      tpsbench run tpcc --users 8,32 --warmup 5m --until-steady 20m   # preconditioned; each step until steady
      tpsbench run tpcc --users 1,20,50 --repeat 3   # 1,20,50,1,20,50,1,20,50: each load three times
      tpsbench run tpcc --storage "RAID10 8x SSHD" --storage-file pools.toml --data-path /srv/pg
      tpsbench run tpcc --think spec --delivery deferred   # TPC-C's queued Delivery
      tpsbench run sysbench --mode oltp_read_only --users 8,16 --processes 2
      tpsbench run tpcc --users 100,300 --cluster tcp://10.0.0.5:8786   # users on Dask workers
      tpsbench run sysbench --mode oltp_point_select --users 16 --rate 1000,2000   # paced, open loop
      tpsbench run tpcc --users 8 --interarrival negexp:2s --trace traces/   # each user paced
      tpsbench run tpcc --think uniform:1s..3s --keying fixed:500ms   # Benchmark Factory's waits
      tpsbench run tpcc --mix new_order=50,payment=40,order_status=4,delivery=3,stock_level=3
      tpsbench run tpce --users 1,20,50 --db sqlite:///tpce.db
      tpsbench run tpce --users 20 --db postgresql://postgres@127.0.0.1/tpce --procedures off   # statements, not calls
      tpsbench run custom --file docs/examples/order_entry.toml --users 1,8
      tpsbench run sysbench --mode oltp_point_select --client text --db mysql://root@127.0.0.1/sbtest   # not prepared
      tpsbench run tpcc --force     # even while another run is active on the database
      sudo tpsbench run tpcc --users 8,32 --cache cold   # page cache dropped, server restarted before each step
      TPSBENCH_WORKLOADS=~/my-workloads tpsbench run kvtoy   # a workload of your own
      tpsbench run --like 12 --db postgresql://postgres@10.0.0.7/tpcc   # run 12 again, on another server
      tpsbench run --like 12 --db ... --users 1,50 --storage "RAID10 SSD"   # its options, these two changed
      tpsbench run --like h810.tpsbench:3 --db postgresql://postgres@127.0.0.1/tpcc   # a bundle's run 3

    \b
    --like RUN (first, in place of WORKLOAD) repeats a stored run's configuration (or a
    bundle's, tpsbench export: --like FILE, or FILE:ID where it holds several): its
    workload, scale (a database without a build is built at it; one of another scale is
    refused), users, rampup, duration, interval, warm-up, until-steady, repeat, processes, seed,
    the workload's options (mix, client path ...), waits, rates, multiplexing and cache,
    read from --results; options given beside it override them. The database, storage
    label and file, cluster, trace folder, metrics endpoint, --force and notes are not
    carried: they belong to the place, not to the load. Then `tpsbench compare RUN NEW`
    lists what differs in their environments.
    """
