"""Run a campaign: the same run on every target, one after another or all at once.

Why each target runs in a ``tpsbench run`` process of its own: a run owns its process's
signal handling, its worker pool and its observers' threads, so runs side by side are
runs in processes side by side, each exactly what ``tpsbench run`` would do alone (the
same checks, honesty check and stored record), and the results store takes two writers
(tpsbench.results.store). Each target's database URL goes to its process in the
environment, never on a command line another user could read in ``ps``. The runs name
the campaign in their record, so ``tpsbench report --campaign ID`` finds them.

Signals: each run is started in a process group of its own, so that a terminal's
Ctrl-C, a closed terminal's SIGHUP or ``kill -TERM -PGID`` reaches the campaign alone,
which passes it on to every run once (a run that got it twice, from the group and from
the campaign, would take the second for "stop waiting"). Each run then ends as
``tpsbench run`` ends (what finished is kept, the run stored as interrupted), no
further target is started, and the campaign is stored as interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tpsbench.core import watchdog
from tpsbench.core.campaign import Campaign, load_campaign, run_args
from tpsbench.core.errors import EXIT_CODES
from tpsbench.core.signals import leave_terminal, listened
from tpsbench.report.metrics import MetricsEndpoint, loopback_port, metrics_endpoint
from tpsbench.results.store import ResultsStore
from tpsbench.workloads import get_workload

#: how often the campaign looks for a signal to pass on while it waits for a run
PASS_ON_EVERY_S = 0.1


@dataclass
class TargetOutcome:
    storage: str
    exit_code: int
    #: the run's last line ("run 7: completed; honesty check matches"), or what ended it
    said: str


@dataclass
class CampaignOutcome:
    campaign_id: int
    status: str
    targets: list[TargetOutcome]
    store: ResultsStore
    #: what interrupted the campaign (SIGINT, SIGTERM, SIGHUP; a run's, if it alone got one); None if nothing did
    signal: int | None = None


class _PassOn:
    """The campaign's handler of the signals that end a command: the first is noted, and
    each is passed on to every run still going (see the module docstring) by the main
    thread as it waits (:meth:`forward`), not by the handler, which may come while a run
    is being started and not yet listed."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.procs: list[subprocess.Popen[str]] = []
        self.pending: list[int] = []

    def __call__(self, signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            leave_terminal()
        self.signal = self.signal or signum
        self.pending.append(signum)
        watchdog.handled()

    def forward(self) -> None:
        while self.pending:
            signum = self.pending.pop(0)
            for proc in self.procs:
                if proc.poll() is None:
                    proc.send_signal(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        previous = {}
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            previous = {sig: signal.signal(sig, self) for sig in listened()}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run_campaign(path: str | Path | Campaign, *, concurrent: bool = False, results_url: str | None = None,
                 live: Callable[[str], None] = print, metrics_addr: str | None = None,
                 allow_remote: bool = False) -> CampaignOutcome:
    """Run every target of the campaign in ``path`` (or a campaign loaded and checked
    already: the CLI checks its ``[options]`` against ``run``'s) and record them under one
    campaign id; with ``metrics_addr``, serve every run's figures from that one endpoint."""
    campaign = path if isinstance(path, Campaign) else load_campaign(path)
    get_workload(campaign.workload)  # an unknown workload is one line before anything starts
    endpoint = metrics_endpoint(metrics_addr, allow_remote)
    store = ResultsStore(results_url)
    pass_on = _PassOn()
    with pass_on.installed(), (endpoint.start() if endpoint else contextlib.nullcontext()):
        campaign_id = store.start_campaign(campaign.name, campaign.stored())
        outcomes: dict[int, TargetOutcome] = {}
        status = "failed"  # unless the targets' loop says otherwise
        try:
            live(f"campaign {campaign_id}: {len(campaign.targets)} target(s) of {campaign.workload}, "
                 f"{'all at once' if concurrent else 'one after another'}{_rounds_text(campaign, concurrent)}; "
                 f"results in {store.url}")
            status = _run_targets(campaign, campaign_id, concurrent, results_url, live, pass_on, outcomes, endpoint)
        finally:
            results = [outcomes[n] for n in sorted(outcomes)]
            ended = next((sig for sig, code in EXIT_CODES.items() for o in results if o.exit_code == code), None)
            signum = pass_on.signal or ended
            if signum is not None:
                status = "interrupted"
            elif status == "completed" and (any(o.exit_code for o in results)
                                            or len(results) < len(run_order(campaign, concurrent))):
                status = "failed"
            store.finish_campaign(campaign_id, status)
    return CampaignOutcome(campaign_id, status, results, store, signum)


def _run_targets(campaign: Campaign, campaign_id: int, concurrent: bool, results_url: str | None,
                 live: Callable[[str], None], pass_on: _PassOn, outcomes: dict[int, TargetOutcome],
                 endpoint: MetricsEndpoint | None) -> str:
    """Start the targets' runs (one after another, or all at once) and wait for them;
    "completed", or "interrupted" once a signal came or a run was interrupted."""
    readers: list[threading.Thread] = []
    for index, (number, rounds) in enumerate(run_order(campaign, concurrent), start=1):
        if pass_on.signal is not None:
            break
        proc = _start(campaign, number, campaign_id, results_url, endpoint, concurrent, rounds)
        pass_on.procs.append(proc)
        said = campaign.targets[number - 1].storage + (f" {rounds}/{campaign.repeat}" if rounds else "")
        reader = threading.Thread(target=_relay, args=(proc, said, index, outcomes, live), daemon=True)
        reader.start()
        readers.append(reader)
        if not concurrent:
            _wait(proc, reader, pass_on)
            if proc.returncode in EXIT_CODES.values():
                return "interrupted"
    for proc, reader in zip(pass_on.procs, readers):
        _wait(proc, reader, pass_on)
    return "interrupted" if pass_on.signal is not None else "completed"


def run_order(campaign: Campaign, concurrent: bool) -> list[tuple[int, int | None]]:
    """The runs a campaign starts, in order, as (target number, round or None): one after
    another with ``repeat = N``, round by round (A B C A B C), so that a slow drift of the
    host spreads over every target rather than reading as a difference between them; all
    at once, one run per target, each repeating its own steps (``--repeat N``)."""
    targets = range(1, len(campaign.targets) + 1)
    if concurrent or campaign.repeat == 1:
        return [(number, None) for number in targets]
    return [(number, rounds) for rounds in range(1, campaign.repeat + 1) for number in targets]


def _start(campaign: Campaign, number: int, campaign_id: int, results_url: str | None,
           endpoint: MetricsEndpoint | None, concurrent: bool = False,
           rounds: int | None = None) -> subprocess.Popen[str]:
    target = campaign.targets[number - 1]
    args = [sys.executable, "-m", "tpsbench", "run", campaign.workload, "--build-if-missing",
            "--scale", str(campaign.scale), "--users", ",".join(map(str, campaign.users)),
            "--rampup", f"{campaign.rampup_s}s", "--duration", f"{campaign.duration_s}s",
            # the default interval is cut to a shorter window, as run's own default is
            "--interval", f"{min(campaign.interval_s, campaign.duration_s)}s", "--storage", target.storage,
            "--campaign", f"{campaign_id}:{number}", "--cache", campaign.cache]
    args += run_args(campaign.options)
    if rounds is not None:
        args += ["--campaign-round", f"{rounds}/{campaign.repeat}"]
    elif concurrent and campaign.repeat > 1:
        args += ["--repeat", str(campaign.repeat)]
    if campaign.storage_file:
        args += ["--storage-file", campaign.storage_file]
    if target.data_path:
        args += ["--data-path", target.data_path]
    if campaign.seed is not None:
        args += ["--seed", str(campaign.seed)]
    if endpoint is not None:  # the run serves its own, on loopback, and the campaign's serves it on
        port = loopback_port()
        args += ["--metrics-addr", f"127.0.0.1:{port}"]
        endpoint.relay(port)
    env = {**os.environ, "TPSBENCH_DB": target.db}
    if results_url:
        env["TPSBENCH_RESULTS"] = results_url
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", process_group=0)  # signals come from the campaign alone


def _rounds_text(campaign: Campaign, concurrent: bool) -> str:
    """How the campaign's first line names its repeats ("" for none)."""
    if campaign.repeat == 1:
        return ""
    return (f", each repeating its steps {campaign.repeat} times" if concurrent
            else f", in {campaign.repeat} rounds")


def _relay(proc: subprocess.Popen[str], storage: str, number: int, outcomes: dict[int, TargetOutcome],
           live: Callable[[str], None]) -> None:
    """Each line of a run, prefixed with its storage (and round, in rounds: "SSD 2/3"; a
    campaign's run prints no table of its own: the campaign shows its targets side by side
    at the end); its outcome kept as the ``number``-th run the campaign started."""
    last = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        live(f"[{storage}] {line}")
        last = line
    proc.wait()
    outcomes[number] = TargetOutcome(storage, proc.returncode, last)


def _wait(proc: subprocess.Popen[str], reader: threading.Thread, pass_on: _PassOn) -> None:
    """Until the run and its relay are done, passing signals on meanwhile."""
    while True:
        pass_on.forward()
        try:
            proc.wait(PASS_ON_EVERY_S)
            break
        except subprocess.TimeoutExpired:
            continue
    reader.join()
