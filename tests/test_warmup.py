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
from pathlib import Path

import pytest
from conftest import cli_in_process, copy_of

from tpsbench.commands.warmup import check_warmup, warmup_step
from tpsbench.core.errors import TpsbenchError
from tpsbench.engine.steps import LoadStep


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
