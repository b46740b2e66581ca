"""``--cache cold`` on a PostgreSQL cluster of the test's own (tests/private_servers.py, a
free port): the restart before each step is in the JSON and CSV exports, and a restart
that leaves the server down ends the run in one line, failed, with the steps before kept.

The shared servers are never restarted; the cluster is removed afterwards.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
from conftest import unavailable
from private_servers import PrivatePostgres, private_server, wait_until_answering

from tpsbench.commands.build import build
from tpsbench.results.store import ResultsStore

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]
STEPS = ["--rampup", "1s", "--duration", "2s", "--interval", "1s", "--seed", "1", "--cache", "cold"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[PrivatePostgres, str]]:
    """The private cluster with sysbench built in its ``tpsbench`` database, and that database's URL."""
    if os.geteuid() != 0:
        unavailable("a cold run", "needs root (restarts a server, drops the page cache)")
    with private_server("postgresql") as server:
        assert isinstance(server, PrivatePostgres)
        url = f"postgresql://postgres@127.0.0.1:{server.port}/tpsbench"
        build("sysbench", 1, url)
        yield server, url


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, check=False)


def test_an_exported_cold_run_shows_its_restarts(cluster: tuple[PrivatePostgres, str], tmp_path: Path) -> None:
    _, url = cluster
    results = f"sqlite:///{tmp_path / 'r.db'}"
    done = _cli(["run", "sysbench", "--db", url, "--users", "1,2", "--results", results, *STEPS], tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = ResultsStore(results).list_runs()
    doc = _cli(["report", str(run.id), "--results", results, "--format", "json"], tmp_path)
    assert doc.returncode == 0, doc.stderr
    steps = json.loads(doc.stdout)["runs"][0]["steps"]
    for step in steps:  # each step's restart, outside its steady window's readings
        outage = step["before_step"]["outage"]
        assert outage["outages"] == 1 and outage["down_s"] > 0, step["before_step"]
        assert step["readings"]["outage"]["down_s"] == 0.0
        assert step["readings"]["host_cpu"]["server"] > 0  # the restarted server's new process, found again
        first = min(datetime.fromisoformat(i["start"]).timestamp() for i in step["intervals"])
        assert outage["first_at"] + outage["down_s"] <= first + 1e-3  # before the step's first interval
    assert len(steps) == 2
    table = _cli(["report", str(run.id), "--results", results, "--format", "csv"], tmp_path)
    assert table.returncode == 0, table.stderr
    rows = {row[2]: row[3:] for row in csv.reader(io.StringIO(table.stdout))}
    assert len(rows["Restart before (s)"]) == 2 and all(float(v) >= 0.0 for v in rows["Restart before (s)"]), rows
    # the exported figure is the stored one, rounded as the table rounds
    assert rows["Restart before (s)"] == [f"{s['before_step']['outage']['down_s']:.1f}" for s in steps]


def test_a_restart_that_leaves_the_server_down_ends_the_run(cluster: tuple[PrivatePostgres, str],
                                                            tmp_path: Path) -> None:
    """A setting PostgreSQL refuses at startup is written to postgresql.auto.conf once the
    first step's restart is done: the second step's restart then leaves the server down."""
    server, url = cluster
    with psycopg.connect(f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres") as conn:
        folder = conn.execute("SHOW data_directory").fetchone()[0]  # type: ignore[index]  # SHOW always answers one row
    auto_conf = Path(str(folder)) / "postgresql.auto.conf"
    kept = auto_conf.read_text()
    results = f"sqlite:///{tmp_path / 'r.db'}"
    process = subprocess.Popen([sys.executable, "-m", "tpsbench", "run", "sysbench", "--db", url, "--users", "1,1",
                                "--results", results, *STEPS], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        said = []
        assert process.stderr is not None
        for line in process.stderr:
            said.append(line.rstrip("\n"))
            if line.startswith("cache cold:") and line.rstrip().endswith("before step 1"):
                auto_conf.write_text(kept + "no_such_setting_of_tpsbench = on\n")
        process.wait(180)
    finally:
        auto_conf.write_text(kept)
        if process.poll() is None:
            process.kill()
        server.restart("start") if not _answers(server) else None
        wait_until_answering(server)
    errors = [line for line in said if line.startswith("tpsbench: error:")]
    assert process.returncode == 1 and not any("Traceback" in line for line in said), said
    (run,) = ResultsStore(results).list_runs()
    assert errors == [f"tpsbench: error: the server did not come back after its restart before step 2 ("
                      f"{errors[0].partition(' before step 2 (')[2].rpartition('): run ')[0]}): run {run.id} failed"
                      " before step 2; step 1 was kept"], said
    assert run.status == "failed" and run.honesty is not None and run.honesty["match"] is None
    assert [s.step for s in ResultsStore(results).load_run(run.id).steps] == [1]
    assert not any("before step 2" in line and line.startswith("cache cold:") for line in said), said


def _answers(server: PrivatePostgres) -> bool:
    try:
        psycopg.connect(f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres", connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True
