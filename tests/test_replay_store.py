"""A replay recorded in the results store as a run of workload "replay": one step whose
transaction types are the trace's normalised statements, shown by ``report`` as any run;
nothing stored when the replay is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from conftest import cli_in_process
from test_export import conforms
from test_replay import _plain, make_trace, one_line, replay

from tpsbench.commands.replay_store import NAME_MOST, txn_name
from tpsbench.results.store import ResultsStore


def test_a_long_statement_gets_a_name_the_store_keeps_and_no_other_shares():
    short = "SELECT 1"
    a, b = "SELECT " + "x, " * 40 + "a FROM t", "SELECT " + "x, " * 40 + "b FROM t"
    assert txn_name(short) == short
    assert len(txn_name(a)) == NAME_MOST and txn_name(a) != txn_name(b)


def test_refused_replays_store_nothing(tmp_path: Path):
    make_trace(tmp_path / "good.trace", [["SELECT 1"]])
    db = "postgresql://postgres@127.0.0.1/none"
    for args, words in ((["--interval", "0s"], "--interval"), (["--interval", "soon"], "--interval"),
                        (["--storage", "x" * 300], "storage label"), (["--speed", "0"], "--speed")):
        one_line(replay(tmp_path, "good.trace", "--db", db, *args), *words)
    one_line(replay(tmp_path, "missing.trace", "--db", db), "no trace file")
    assert not (tmp_path / "tpsbench-results.db").exists()


@pytest.mark.postgresql
def test_a_replay_is_stored_as_a_run_report_shows(tmp_path: Path, pg_url: str):
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE hits (n int)")
    texts = [["INSERT INTO hits VALUES (1)", "SELECT count(*) FROM hits", "INSERT INTO hits VALUES (2)"],
             ["SELECT count(*) FROM hits", "SELECT 1/0", "INSERT INTO hits VALUES (5)"],
             ["INSERT INTO hits VALUES (7)"]]
    make_trace(tmp_path / "t.trace", texts, gap=0.15)
    result = replay(tmp_path, "t.trace", "--db", pg_url, "--interval", "0.1s", "--storage", "scratch disk")
    assert result.returncode == 0, result.stderr
    store = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}")
    (run,) = store.list_runs()
    data = store.load_run(run.id)
    assert (run.workload, run.status, run.storage) == ("replay", "completed", "scratch disk")
    assert run.config["trace"] == "t.trace" and run.config["speed"] == 1.0 and len(run.config["trace_sha256"]) == 64
    (step,) = data.steps
    assert step.users == 3 and len(data.intervals) >= 3
    assert step.summary is not None
    by_name = step.summary.txns
    assert {n: t.commits for n, t in by_name.items()} == {
        "INSERT INTO hits VALUES (?)": 4, "SELECT count(*) FROM hits": 2, "SELECT ?/?": 0}
    assert by_name["SELECT ?/?"].errors == 1
    assert sum(i.commits for i in data.intervals) == 6
    live = [line for line in result.stderr.splitlines() if line.startswith("[ ")]
    assert len(live) == len(data.intervals) and all(" step 1/1 users: 3 tps: " in line for line in live), live
    assert "host_cpu" in data.readings(1)
    shown = cli_in_process("report", str(run.id), "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert conforms(doc) == []
    assert "SELECT count(*) FROM hits" in json.dumps(doc["runs"][0]["steps"][0])


@pytest.mark.postgresql
@pytest.mark.slow  # a replay in a process of its own
def test_ctrl_c_ends_the_stored_replay_interrupted_with_what_was_measured(tmp_path: Path, pg_url: str):
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE hits (n int)")
    make_trace(tmp_path / "t.trace", [[f"INSERT INTO hits VALUES ({i})" for i in range(400)]] * 2, gap=0.01)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1] / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "replay", "t.trace", "--db", pg_url, "--interval",
                             "0.5s"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # a live line while the replay runs, its first interval's
    assert first.startswith("[ 0s ] step 1/1 users: 2 tps: "), first
    deadline = time.monotonic() + 30
    with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
        while conn.execute("SELECT count(*) FROM hits").fetchone()[0] < 200 and time.monotonic() < deadline:
            time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "Traceback" not in err, err
    store = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}")
    (run,) = store.list_runs()
    data = store.load_run(run.id)
    kept = sum(i.commits for i in data.intervals)
    with psycopg.connect(_plain(pg_url)) as conn:
        inserted = conn.execute("SELECT count(*) FROM hits").fetchone()[0]
    summary = data.steps[0].summary
    assert run.status == "interrupted" and 200 <= kept < 800 and summary is not None
    # a statement in flight at Ctrl-C is counted in doubt: it may have run or not
    assert summary.total("commits") == kept and kept <= inserted <= kept + summary.total("in_doubt")
    assert summary.total("in_doubt") <= 2 * 16  # at most the pipeline's depth a session
