"""Run a campaign: the same run on every target, one after another or all at once.

Why each target runs in a ``tpsbench run`` process of its own: a run owns its process's
signal handling, its worker pool and its observers' threads, so runs side by side are
runs in processes side by side, each exactly what ``tpsbench run`` would do alone (the
same checks, honesty check and stored record), and the results store takes two writers
(tpsbench.results.store). Each target's database URL goes to its process in the
environment, never on a command line another user could read in ``ps``. The runs name
the campaign in their record, so ``tpsbench report --campaign ID`` finds them.

Ctrl-C reaches every process of the terminal's group at once; SIGTERM sent to the
campaign alone is passed on. Either way each run ends as ``tpsbench run`` ends (what
finished is kept, the run stored as interrupted), and no further target is started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tpsbench.core.campaign import Campaign, load_campaign
from tpsbench.core.errors import Terminated
from tpsbench.results.store import ResultsStore
from tpsbench.workloads import get_workload


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


def run_campaign(path: str | Path, *, concurrent: bool = False, results_url: str | None = None,
                 live: Callable[[str], None] = print) -> CampaignOutcome:
    """Run every target of the campaign in ``path`` and record them under one campaign id."""
    campaign = load_campaign(path)
    get_workload(campaign.workload)  # an unknown workload is one line before anything starts
    store = ResultsStore(results_url)
    campaign_id = store.start_campaign(campaign.name, campaign.stored())
    live(f"campaign {campaign_id}: {len(campaign.targets)} target(s) of {campaign.workload}, "
         f"{'all at once' if concurrent else 'one after another'}; results in {store.url}")
    procs: list[subprocess.Popen[str]] = []
    outcomes: dict[int, TargetOutcome] = {}
    readers: list[threading.Thread] = []
    status = "completed"
    try:
        for number, target in enumerate(campaign.targets, start=1):
            proc = _start(campaign, number, campaign_id, results_url)
            procs.append(proc)
            reader = threading.Thread(target=_relay, args=(proc, target.storage, number, outcomes, live), daemon=True)
            reader.start()
            readers.append(reader)
            if not concurrent:
                _wait(proc, reader)
                if proc.returncode in (130, 143):
                    status = "interrupted"
                    break
        for proc, reader in zip(procs, readers):
            _wait(proc, reader)
    except KeyboardInterrupt as exc:  # Ctrl-C reached the runs too; SIGTERM is passed on
        status = "interrupted"
        for proc in procs:
            if isinstance(exc, Terminated) and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, reader in zip(procs, readers):
            _wait(proc, reader)
    results = [outcomes[n] for n in sorted(outcomes)]
    if status == "completed" and (any(o.exit_code for o in results) or len(results) < len(campaign.targets)):
        status = "failed"
    store.finish_campaign(campaign_id, status)
    return CampaignOutcome(campaign_id, status, results, store)


def _start(campaign: Campaign, number: int, campaign_id: int, results_url: str | None) -> subprocess.Popen[str]:
    target = campaign.targets[number - 1]
    args = [sys.executable, "-m", "tpsbench", "run", campaign.workload, "--build-if-missing",
            "--scale", str(campaign.scale), "--users", ",".join(map(str, campaign.users)),
            "--rampup", f"{campaign.rampup_s}s", "--duration", f"{campaign.duration_s}s",
            "--interval", f"{campaign.interval_s}s", "--storage", target.storage,
            "--campaign", f"{campaign_id}:{number}", "--cache", campaign.cache]
    for name, value in campaign.options.items():
        args += [f"--{name.replace('_', '-')}", value]
    if campaign.storage_file:
        args += ["--storage-file", campaign.storage_file]
    if target.data_path:
        args += ["--data-path", target.data_path]
    if campaign.seed is not None:
        args += ["--seed", str(campaign.seed)]
    env = {**os.environ, "TPSBENCH_DB": target.db}
    if results_url:
        env["TPSBENCH_RESULTS"] = results_url
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")


def _relay(proc: subprocess.Popen[str], storage: str, number: int, outcomes: dict[int, TargetOutcome],
           live: Callable[[str], None]) -> None:
    """Each line of a run, prefixed with its storage (a campaign's run prints no table of
    its own: the campaign shows its targets side by side at the end)."""
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


def _wait(proc: subprocess.Popen[str], reader: threading.Thread) -> None:
    """Until the run and its relay are done; a Ctrl-C meanwhile is the caller's to handle."""
    proc.wait()
    reader.join()
