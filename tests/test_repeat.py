"""``run --repeat N`` and a campaign's ``repeat = N``: every step run N times, interleaved.

Real runs (TPC-C on SQLite copies, sysbench on PostgreSQL) read back from the store: the
steps in run order are the round's loads once per round, the config holds the round and
``repeat``, a sequential campaign's runs go A B A B by their start; and every bad repeat
is one line with nothing stored.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from conftest import copy_of
from test_cli_help import invoke

from tpsbench.commands.run import RunConfig, run
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.repeats import (
    MAX_REPEAT,
    campaign_round,
    check_campaign_round,
    check_repeat,
    repeat_groups,
    repeat_of,
    repeat_round,
    step_loads,
)
from tpsbench.results.records import Run
from tpsbench.results.store import ResultsStore
from tpsbench.serve.views import plan, time_left


def tpsbench(folder: Path, *args: str, db: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (a run starts workers), its store results.db in ``folder``."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")},
           "TPSBENCH_RESULTS": f"sqlite:///{folder / 'results.db'}", **({"TPSBENCH_DB": db} if db else {})}
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], env=env, cwd=folder, capture_output=True,
                          text=True, timeout=300, check=False)


# -- the stored form, read back ------------------------------------------------------------------

def test_rounds_and_groups_read_the_stored_form() -> None:
    config = {"users": [1, 20, 50], "repeat": 3}
    assert step_loads(config) == [1, 20, 50] * 3
    assert [repeat_round(config, step) for step in range(10)] == [0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    # whatever carries a step number; the warm-up (0) and unplanned steps are left out; an interrupted
    # run's groups hold what it stored
    steps = [{"step": n} for n in (0, 9, 1, 2, 4, 5, 7, 8, 10)]
    groups = repeat_groups(config, steps, lambda s: s["step"])
    assert [[s["step"] for s in group] for group in groups] == [[1, 4, 7], [2, 5, 8], [9]]
    # no repeat key, or 1: each load once
    assert repeat_of({"users": [4, 8]}) == 1 and step_loads({"users": [4, 8], "repeat": 1}) == [4, 8]
    assert repeat_groups({"users": [4, 8]}, [1, 2, 3], int) == [[1], [2]]
    assert campaign_round({"campaign_round": 2, "campaign_rounds": 3}) == (2, 3)
    assert campaign_round({"repeat": 3}) is None


@pytest.mark.parametrize(("repeat", "loads", "needle"), [
    (0, 3, "must be from 1 (no repeats) to 100, not 0"),
    (-2, 3, "not -2"),
    (MAX_REPEAT + 1, 1, "to 100, not 101"),
    (2.5, 3, "must be a whole number of rounds, from 1 to 100, not 2.5"),
    (True, 3, "not True"),
    ("3", 3, "not '3'"),
    (60, 20, "--repeat 60 of 20 loads makes 1,200 steps; a run takes at most 1,000"),
])
def test_a_repeat_out_of_range_is_refused_in_one_line(repeat: object, loads: int, needle: str) -> None:
    with pytest.raises(TpsbenchError) as refused:
        check_repeat(repeat, loads)
    assert needle in str(refused.value) and "\n" not in str(refused.value)


def test_a_campaign_round_is_both_keys_within_range_and_no_repeat_beside_it() -> None:
    check_campaign_round(None, None, 5)
    check_campaign_round(2, 3, 1)
    for number, rounds in ((None, 3), (2, None), (0, 3), (4, 3), (1, MAX_REPEAT + 1)):
        with pytest.raises(TpsbenchError, match="round must be from 1"):
            check_campaign_round(number, rounds, 1)
    with pytest.raises(TpsbenchError, match="takes no --repeat"):
        check_campaign_round(1, 2, 2)


def test_a_live_page_plans_every_step_of_every_round() -> None:
    """The live page names step k's users from its plan, and counts the time left over every round."""
    run = Run(1, "tpcc", datetime(2026, 1, 1), None, "running", "",
              {"users": [1, 20], "repeat": 3, "rampup_s": 1.0, "duration_s": 9.0})
    assert plan(run)["users"] == [1, 20, 1, 20, 1, 20]
    assert time_left(run, None, 0.0, 0.0) == 60.0
    assert time_left(run, 5, 100.0, 104.0) == 16.0  # 6 s of step 5, and step 6


# -- real runs --------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_repeated_paced_run_stores_its_steps_interleaved(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    """With --warmup (once, as step 0), --rate (one per load, repeated with the loads) and --trace."""
    done = tpsbench(tmp_path, "run", "tpcc", "--users", "1,2", "--repeat", "2", "--rampup", "0s", "--duration", "1s",
                    "--interval", "0.5s", "--processes", "1", "--warmup", "0.5s", "--rate", "10,40",
                    "--arrivals", "fixed", "--trace", "traces", db=copy_of(built_tpcc_sqlite, tmp_path))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "warm-up, 2 rounds of 2 step(s) of 1, 2 users" in done.stderr, done.stderr
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}", create=False)
    (run,) = store.list_runs()
    assert (run.config["users"], run.config["repeat"], run.config["rates"]) == ([1, 2], 2, [10.0, 40.0])
    assert "campaign_round" not in run.config and "campaign_rounds" not in run.config
    with sqlite3.connect(tmp_path / "results.db") as db:
        steps = db.execute("SELECT step, users FROM steps ORDER BY step").fetchall()
        firsts = db.execute("SELECT step, min(t_start), max(users) FROM intervals "
                            "GROUP BY step ORDER BY step").fetchall()
        offered = dict(db.execute("SELECT step, value FROM observations WHERE name = 'offered_per_s' "
                                  "AND interval IS NULL").fetchall())
    assert steps == [(1, 1), (2, 2), (3, 1), (4, 2)]
    # the warm-up once, before step 1, at its load; then the steps in their numbers' order
    assert [s for s, _, _ in firsts] == [0, 1, 2, 3, 4] and firsts[0][2] == 1
    assert [t for _, t, _ in firsts] == sorted(t for _, t, _ in firsts), firsts
    # each load's rate in every round
    assert [round(offered[s] / 10) * 10 for s in (1, 2, 3, 4)] == [10, 40, 10, 40], offered
    assert {f"step{s}" for s in (1, 2, 3, 4)} <= {p.name.partition("-")[0] for p in (tmp_path / "traces").iterdir()}


@pytest.mark.slow
def test_a_repeated_run_on_postgresql_until_steady(pg_url: str, tmp_path: Path) -> None:
    built = tpsbench(tmp_path, "build", "sysbench", "--tables", "1", "--table-size", "1000", db=pg_url)
    assert built.returncode == 0, built.stderr
    done = tpsbench(tmp_path, "run", "sysbench", "--mode", "oltp_point_select", "--users", "1,2", "--repeat", "2",
                    "--rampup", "0s", "--duration", "0.5s", "--interval", "0.1s", "--until-steady", "1s",
                    "--processes", "1", db=pg_url)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].endswith("completed; honesty check matches"), done.stdout
    with sqlite3.connect(tmp_path / "results.db") as db:
        steps = db.execute("SELECT step, users FROM steps ORDER BY step").fetchall()
        (config,) = db.execute("SELECT json_extract(config, '$.repeat') FROM runs").fetchone()
    assert steps == [(1, 1), (2, 2), (3, 1), (4, 2)] and config == 2


@pytest.mark.slow
def test_a_repeated_run_on_a_dask_cluster(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    """Every round's steps go to the cluster's workers like any step (an absolute SQLite path, as --cluster asks)."""
    import distributed  # the test extra has it

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            distributed.Client(c) as client:
        client.wait_for_workers(1, timeout=60)
        scheduler = client.scheduler.address
        record = run(RunConfig("tpcc", copy_of(built_tpcc_sqlite, tmp_path), users=[1, 2], repeat=2, rampup_s=0.0,
                               duration_s=0.5, interval_s=0.5, processes=1, seed=3, cluster=scheduler,
                               results_url=f"sqlite:///{tmp_path / 'results.db'}"), live=None)
    assert record.status == "completed" and record.honesty["match"] is True, record.honesty
    data = record.store.load_run(record.run_id)
    assert [(s.step, s.users) for s in data.steps] == [(1, 1), (2, 2), (3, 1), (4, 2)]
    assert data.run.config["repeat"] == 2 and data.run.config["cluster"]["scheduler"] == scheduler


# -- campaigns ----------------------------------------------------------------------------------

CAMPAIGN = """workload = "tpcc"
scale = 1
users = [1]
rampup = "0s"
duration = "0.5s"
interval = "0.5s"
repeat = 2
[options]
processes = 1
"""


@pytest.mark.slow
@pytest.mark.parametrize("concurrent", [False, True])
def test_a_repeated_campaign_runs_rounds_or_repeats_each_run(built_tpcc_sqlite: Path, tmp_path: Path,
                                                             concurrent: bool) -> None:
    path = tmp_path / "campaign.toml"
    path.write_text(CAMPAIGN + "".join(f'[[target]]\ndb = "{copy_of(built_tpcc_sqlite, tmp_path, name + ".db")}"\n'
                                       f'storage = "{name}"\n' for name in ("A", "B")))
    done = tpsbench(tmp_path, "campaign", str(path), *(["--concurrent"] if concurrent else []))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    runs = sorted(ResultsStore(f"sqlite:///{tmp_path / 'results.db'}", create=False).list_runs(),
                  key=lambda r: r.started_at)
    with sqlite3.connect(tmp_path / "results.db") as db:
        steps = db.execute("SELECT run_id, step, users FROM steps ORDER BY run_id, step").fetchall()
        (stored,) = db.execute("SELECT json_extract(config, '$.repeat') FROM campaigns").fetchone()
    assert stored == 2
    if concurrent:  # one run per target, each with its steps repeated
        assert sorted(r.storage for r in runs) == ["A", "B"]
        assert all(r.config["repeat"] == 2 and "campaign_round" not in r.config for r in runs)
        assert sorted(steps) == sorted((r.id, s, 1) for r in runs for s in (1, 2))
    else:  # A B A B: a run per target and round, one step each
        assert [(r.storage, r.config["campaign_round"], r.config["campaign_rounds"]) for r in runs] == \
            [("A", 1, 2), ("B", 1, 2), ("A", 2, 2), ("B", 2, 2)]
        assert all("repeat" not in r.config for r in runs)
        assert steps == [(r.id, 1, 1) for r in sorted(runs, key=lambda r: r.id)]
        assert "[A 2/2] " in done.stderr and "in 2 rounds" in done.stderr, done.stderr[-2000:]


# -- bad input: one line, nothing stored ----------------------------------------------------------------

@pytest.mark.parametrize(("repeat", "needle"), [
    ("0", "--repeat must be from 1 (no repeats) to 100, not 0"),
    ("-3", "--repeat must be from 1 (no repeats) to 100, not -3"),
    ("2.5", "'2.5' is not a valid integer"),
    ("1000000000000", "to 100, not 1,000,000,000,000"),
    ("80", "--repeat 80 of 20 loads makes 1,600 steps; a run takes at most 1,000"),
])
def test_a_bad_repeat_is_one_line_and_no_run_is_stored(built_tpcc_sqlite: Path, bare_cwd: Path, repeat: str,
                                                       needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    results = f"sqlite:///{bare_cwd / 'results.db'}"
    ResultsStore(results)  # a store that exists, so that a run stored in it would show
    db = copy_of(built_tpcc_sqlite, bare_cwd)
    twenty = ",".join(map(str, range(1, 21)))
    code, _, lines = invoke(["run", "tpcc", "--db", db, "--results", results, "--users", twenty,
                             "--repeat", repeat, "--duration", "1s"], capsys)
    assert code == 2 and len(lines) == 1 and needle in lines[0], lines
    assert ResultsStore(results, create=False).list_runs() == []


@pytest.mark.parametrize(("line", "needle"), [
    ("repeat = 0", "repeat must be from 1 (no repeats) to 100, not 0"),
    ("repeat = -1", "not -1"),
    ("repeat = 1.5", "repeat must be a whole number of rounds, from 1 to 100, not 1.5"),
    ('repeat = "2"', "not '2'"),
    ("repeat = 101", "to 100, not 101"),
])
def test_a_bad_campaign_repeat_is_one_line_and_nothing_is_stored(bare_cwd: Path, line: str, needle: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = bare_cwd / "c.toml"
    path.write_text(f'workload = "tpcc"\nscale = 1\nusers = [1, 2]\n{line}\n[[target]]\ndb = "sqlite:///a.db"\n')
    code, _, lines = invoke(["campaign", str(path)], capsys)
    assert code != 0 and len(lines) == 1 and needle in lines[0] and str(path) in lines[0], lines
    assert list(bare_cwd.iterdir()) == [path]


def test_a_campaign_takes_repeat_at_its_top_not_in_its_options(bare_cwd: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = bare_cwd / "c.toml"
    path.write_text('workload = "tpcc"\nscale = 1\n[options]\nrepeat = 2\n[[target]]\ndb = "sqlite:///a.db"\n')
    code, _, lines = invoke(["campaign", str(path)], capsys)
    assert code != 0 and len(lines) == 1 and "repeat is set at the top of the campaign file (repeat = ...)" in lines[0]
    assert list(bare_cwd.iterdir()) == [path]
