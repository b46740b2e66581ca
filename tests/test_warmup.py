"""``run --warmup``: a preconditioning phase before the first step, kept but never measured.

On PostgreSQL (a small sysbench database, read-write so that the warm-up changes what the
honesty check counts): the warm-up's intervals are in the store as step 0, before step 1's,
never steady; step 1's figures are its own steady intervals' and nothing of the warm-up's;
the honesty check still matches (the warm-up's transactions are the database's too); the
live lines and the HTML report's timeline name the warm-up.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from conftest import cli_in_process, copy_of

from tpsbench.commands.warmup import check_warmup, warmup_step
from tpsbench.core.errors import TpsbenchError
from tpsbench.engine.steps import LoadStep
from tpsbench.engine.until_steady import UNTIL_STEADY
from tpsbench.report.warmup import WARMUP_ROW, warmup_intervals, warmup_json, warmup_rows
from tpsbench.results.records import Run, RunData, StoredInterval, StoredObservation
from tpsbench.serve.views import plan, time_left


def tpsbench(folder: Path, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (a run starts workers) on ``db``, its store results.db in ``folder``."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")},
           "TPSBENCH_DB": db, "TPSBENCH_RESULTS": f"sqlite:///{folder / 'results.db'}"}
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], env=env, cwd=folder, capture_output=True,
                          text=True, timeout=180, check=False)


@pytest.mark.slow
def test_warmup_on_postgresql_is_stored_apart_from_every_step(pg_url: str, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    built = tpsbench(tmp_path, pg_url, "build", "sysbench", "--tables", "1", "--table-size", "1000")
    assert built.returncode == 0, built.stderr
    done = tpsbench(tmp_path, pg_url, "run", "sysbench", "--users", "2", "--rampup", "0.5s", "--warmup", "2s",
                    "--duration", "1.5s", "--interval", "0.5s", "--processes", "1")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].endswith("completed; honesty check matches"), done.stdout
    assert "after a 2s warm-up, 1 step(s) of 2 users" in done.stderr, done.stderr
    assert "step warm-up users: 2" in done.stderr and "step 1/1 users: 2" in done.stderr, done.stderr
    with sqlite3.connect(results) as db:
        intervals = db.execute("SELECT step, interval, t_start, t_end, steady, users, commits FROM intervals "
                               "ORDER BY step, interval").fetchall()
        steps = db.execute("SELECT step, users, commits, seconds FROM steps").fetchall()
        observed = {step for (step,) in db.execute("SELECT DISTINCT step FROM observations")}
    warmup = [i for i in intervals if i[0] == 0]
    first = [i for i in intervals if i[0] == 1]
    # the warm-up: its ramp-up and 2 s in 0.5 s intervals (and the in-flight tail), at the first step's users
    assert len(warmup) >= 5 and all(users == 2 for *_, users, _ in warmup), warmup
    assert not any(steady for *_, steady, _, _ in warmup), warmup
    assert sum(commits for *_, commits in warmup) > 0, warmup
    assert max(t_end for _, _, _, t_end, *_ in warmup) <= min(t_start for _, _, t_start, *_ in first), intervals
    assert 0 in observed  # what the observers read over the warm-up's intervals is kept with them
    # no step row for the warm-up; step 1's figures are its steady intervals' alone
    assert [s[0] for s in steps] == [1], steps
    ((_, users, commits, seconds),) = steps
    steady = [i for i in first if i[4]]
    assert users == 2 and seconds == pytest.approx(1.5, abs=0.2), steps
    assert commits == sum(i[6] for i in steady), (steps, steady)
    # the HTML report's timeline draws the warm-up, named as such
    page = tmp_path / "report.html"
    shown = cli_in_process("report", "--format", "html", "--output", str(page), "--results",
                           f"sqlite:///{results}", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert ">warm-up<" in page.read_text(), "the timeline does not name the warm-up"


@pytest.mark.slow  # a run in a process of its own
def test_a_run_without_warmup_has_no_step_0(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    done = tpsbench(tmp_path, copy_of(built_tpcc_sqlite, tmp_path), "run", "tpcc", "--users", "1", "--rampup", "0s",
                    "--duration", "1s", "--interval", "0.5s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "warm-up" not in done.stderr, done.stderr
    with sqlite3.connect(tmp_path / "results.db") as db:
        assert db.execute("SELECT count(*) FROM intervals WHERE step = 0").fetchone() == (0,)


@pytest.mark.parametrize(("seconds", "cache", "needle"), [
    (-1.0, "warm", "--warmup must be 0 (none) or from 0.1s to 30 days, not -1.0s"),
    (float("nan"), "warm", "not nans"),
    (float("inf"), "warm", "not infs"),
    (0.05, "warm", "not 0.05s"),
    (31 * 24 * 3600.0, "warm", "to 30 days"),
    (60.0, "cold", "--warmup warms the caches that --cache cold empties before each step"),
])
def test_a_warmup_that_cannot_be_run_is_refused_in_one_line(seconds: float, cache: str, needle: str) -> None:
    with pytest.raises(TpsbenchError) as refused:
        check_warmup(seconds, cache)
    assert needle in str(refused.value) and "\n" not in str(refused.value)


def test_the_warmup_step_is_the_first_step_for_its_own_time() -> None:
    first = LoadStep(users=8, duration_s=60.0, rampup_s=5.0, interval_s=2.0, rate=100.0)
    check_warmup(0.0, "cold")  # none: nothing to refuse, whatever the cache
    assert warmup_step(0.0, first) is None
    assert warmup_step(30.0, first) == LoadStep(users=8, duration_s=30.0, rampup_s=5.0, interval_s=2.0, rate=100.0)


@pytest.mark.slow
def test_a_campaign_warms_up_each_targets_run_until_steady(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    path = tmp_path / "campaign.toml"
    path.write_text('workload = "tpcc"\nscale = 1\nusers = [1]\nrampup = "0s"\nduration = "1s"\ninterval = "0.5s"\n'
                    '[options]\nprocesses = 1\nwarmup = "1.5s"\nuntil_steady = "2.5s"\n'
                    + "".join(f'[[target]]\ndb = "{copy_of(built_tpcc_sqlite, tmp_path, name + ".db")}"\n'
                              f'storage = "{name}"\n' for name in ("A", "B")))
    done = tpsbench(tmp_path, "", "campaign", str(path))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "results.db") as db:
        runs = db.execute("SELECT id, storage, json_extract(config, '$.warmup_s'), "
                          "json_extract(config, '$.until_steady_s') FROM runs ORDER BY id").fetchall()
        warm = db.execute("SELECT run_id, count(*), sum(steady) FROM intervals WHERE step = 0 "
                          "GROUP BY run_id").fetchall()
        watched = db.execute("SELECT DISTINCT run_id FROM observations WHERE step = 0 AND interval IS NULL "
                             "AND observer = 'until_steady'").fetchall()
        steps = db.execute("SELECT run_id, step FROM steps ORDER BY run_id").fetchall()
    # each target's run: the warm-up before its step, watched by --until-steady, in no step
    assert [(storage, w, u) for _, storage, w, u in runs] == [("A", 1.5, 2.5), ("B", 1.5, 2.5)], runs
    assert [(run, steady) for run, _, steady in warm] == [(r[0], 0) for r in runs] and all(n >= 3 for _, n, _ in warm)
    assert sorted(watched) == [(r[0],) for r in runs] and steps == [(r[0], 1) for r in runs], (watched, steps)
    assert done.stderr.count("the warm-up ") >= 2, done.stderr[-3000:]


def test_the_live_page_counts_the_warmup_in_the_time_left() -> None:
    """``tpsbench serve``: the warm-up (step 0) is as long as its ramp-up and --warmup, then every step."""
    run = Run(1, "tpcc", datetime(2026, 1, 1), None, "running", "",
              {"users": [1, 20], "rampup_s": 1.0, "duration_s": 9.0, "warmup_s": 30.0})
    assert plan(run)["warmup_s"] == 30.0
    assert time_left(run, None, 0.0, 0.0) == 31.0 + 20.0
    assert time_left(run, 0, 100.0, 111.0) == 20.0 + 20.0  # 20 s of the warm-up, then both steps
    assert time_left(run, 1, 200.0, 204.0) == 6.0 + 10.0


def _warm(index: int, seconds: float, tps: float) -> StoredInterval:
    """An interval of the warm-up (step 0) of ``seconds`` at ``tps``, p95 1 ms, never steady."""
    start = 100.0 + index
    return StoredInterval(0, index, start, start + seconds, False, 4, tps, 1.0, round(tps * seconds), 0, 0, 0, 0)


def test_the_warmup_is_judged_past_its_ramp_up_on_its_whole_intervals() -> None:
    """Ramp-up (2 x 1 s) and the cut-short tail are not judged; with --until-steady, what its watch took."""
    run = Run(1, "tpcc", datetime(2026, 1, 1), None, "completed", "",
              {"users": [4], "rampup_s": 2.0, "interval_s": 1.0, "warmup_s": 6.0})
    intervals = [_warm(0, 1.0, 10.0), _warm(1, 1.0, 50.0)] + [_warm(i, 1.0, 100.0) for i in range(2, 8)]
    data = RunData(run, intervals=[*intervals, _warm(8, 0.2, 5.0)])
    assert [i.interval for i in warmup_intervals(data)] == list(range(2, 8))
    found = warmup_json(data)
    assert found is not None and found["tps"] == pytest.approx(100.0) and found["seconds"] == pytest.approx(6.0)
    assert found["steady_state"]["steady"] is True and found["until_steady"] is None and found["intervals"] == 9
    assert warmup_rows(data, {"4": 1}) == [(WARMUP_ROW, ["4 users, 6s, 100.0 TPS: steady"])]
    # a warm-up that its watch ended after 5 intervals, the 6th cut short: only those 5 are judged
    watched = RunData(run, intervals=[*intervals[:7], _warm(7, 0.9, 20.0)], observations=[
        StoredObservation(0, None, UNTIL_STEADY, name, value)
        for name, value in (("steady", 1.0), ("measured_s", 5.0), ("intervals", 5.0))])
    assert [i.interval for i in warmup_intervals(watched)] == [2, 3, 4, 5, 6]
    assert warmup_rows(watched, {"8": 2, "4": 1}) == [
        (WARMUP_ROW, ["", "4 users, 5s, 100.0 TPS: steady; ended once steady after 5s"])]
    assert warmup_json(RunData(run)) is None and warmup_rows(RunData(run), {"4": 1}) == []
