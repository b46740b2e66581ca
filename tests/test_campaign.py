"""``tpsbench campaign``: one load on several databases, one after another or all at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tpsbench.core.campaign import load_campaign
from tpsbench.core.errors import TpsbenchError
from tpsbench.results.store import ResultsStore

SHAPE = """workload = "tpcc"
scale = 1
users = [1, 2]
rampup = "0.5s"
duration = "{duration}"
interval = "0.5s"
[options]
think = "off"
"""


def write_campaign(tmp_path: Path, urls: dict[str, str], duration: str = "1.5s") -> Path:
    text = SHAPE.format(duration=duration) + "".join(
        f'[[target]]\ndb = "{url}"\nstorage = "{label}"\n' for label, url in urls.items())
    path = tmp_path / "campaign.toml"
    path.write_text(text)
    return path


def tpsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.mark.slow
def test_a_concurrent_campaign_on_postgresql_and_mariadb_records_both_under_one_id(
        pg_url: str, mysql_url: str, tmp_path: Path) -> None:
    path = write_campaign(tmp_path, {"pool PG": pg_url, "pool MariaDB": mysql_url})
    result = tpsbench("campaign", str(path), "--concurrent", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[pool PG] run" in result.stdout and "[pool MariaDB] run" in result.stdout
    assert result.stdout.rstrip().endswith("campaign 1: completed")
    assert "[pool PG] build tpcc" in result.stderr and "[pool MariaDB] build tpcc" in result.stderr  # built first
    store = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}", create=False)
    runs = store.campaign_runs(1)
    assert [r.storage for r in runs] == ["pool PG", "pool MariaDB"]
    assert all(r.status == "completed" and r.honesty["match"] for r in runs)
    starts = [r.started_at for r in runs]
    assert abs((starts[0] - starts[1]).total_seconds()) < 20  # at the same time, not one after another
    report = tpsbench("report", "--campaign", "1", "--format", "markdown", cwd=tmp_path)
    assert report.returncode == 0 and "| pool PG | TPS |" in report.stdout and "| pool MariaDB | TPS |" in report.stdout


def test_ctrl_c_ends_a_campaign_keeps_what_finished_and_starts_no_further_target(tmp_path: Path) -> None:
    urls = {name: f"sqlite:///{tmp_path / (name + '.db')}" for name in ("first", "second")}
    for url in urls.values():
        assert tpsbench("build", "tpcc", "--scale", "1", "--db", url, cwd=tmp_path).returncode == 0
    path = write_campaign(tmp_path, urls, duration="5m")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "campaign", str(path)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    while "[first] [" not in proc.stderr.readline():  # the first target's first live line
        assert proc.poll() is None
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
    sent = time.monotonic()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - sent < 10, out
    assert out.rstrip().endswith("campaign 1: interrupted")
    runs = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}", create=False).list_runs()
    assert [(r.storage, r.status) for r in runs] == [("first", "interrupted")]  # the second never started


@pytest.mark.parametrize(("text", "needle"), [
    ('workload = "tpcc"\nscale = 1\n', "no [[target]]"),
    ('workload = "tpcc"\n[[target]]\ndb = "sqlite:///a.db"\n', "scale is missing"),
    ('workload = "tpcc"\nscale = 1\nspeed = 3\n[[target]]\ndb = "sqlite:///a.db"\n', "unknown key(s) speed"),
    ('workload = "tpcc"\nscale = 1\n[[target]]\ndb = "sqlite:///a.db"\nrpm = 1\n', "target 1: unknown key(s) rpm"),
    ('workload = "tpcc"\nscale = 1\n[[target]]\nstorage = "x"\n', "target 1: db is missing"),
    ('workload = "tpcc"\nscale = 1\nduration = "soon"\n[[target]]\ndb = "sqlite:///a.db"\n', "soon"),
    ('workload = "tpcc"\nscale = 0\n[[target]]\ndb = "sqlite:///a.db"\n', "got 0"),
    ('workload = "tpcc"\nscale = 1\n[[target]]\ndb = "sqlite:///a.db"\n[[target]]\ndb = "sqlite:///a.db"\n',
     "the same db"),
    ('workload = "nosuch"\nscale = 1\n[[target]]\ndb = "sqlite:///a.db"\n', "unknown workload 'nosuch'"),
])
def test_a_wrong_campaign_file_is_one_line_and_nothing_is_stored(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    result = tpsbench("campaign", str(path), cwd=tmp_path)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0 and len(lines) == 1 and needle in lines[0], result.stderr
    assert list(tmp_path.iterdir()) == [path]


def test_a_campaign_file_keeps_no_password() -> None:
    path = Path(__file__).parent / "fixtures" / "campaign_with_password.toml"
    stored = load_campaign(path).stored()
    assert "s3cret" not in str(stored) and stored["targets"][0]["db"] == "postgresql://app@db1.example/tpcc?sslmode=require"
    with pytest.raises(TpsbenchError, match="does not exist"):
        load_campaign(path.with_name("nope.toml"))
