"""``tpsbench campaign``: one load on several databases, one after another or all at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import copy_of
from test_cli_help import invoke

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


def test_ctrl_c_ends_a_campaign_keeps_what_finished_and_starts_no_further_target(
        built_tpcc_sqlite: Path, tmp_path: Path, deliverable_sigint: None) -> None:
    urls = {name: copy_of(built_tpcc_sqlite, tmp_path, name + ".db") for name in ("first", "second")}
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
def test_a_wrong_campaign_file_is_one_line_and_nothing_is_stored(bare_cwd: Path, text: str, needle: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI in this process: starting it, a second of each case's time, is the same in all."""
    path = bare_cwd / "c.toml"
    path.write_text(text)
    code, _, lines = invoke(["campaign", str(path)], capsys)
    assert code != 0 and len(lines) == 1 and needle in lines[0], lines
    assert list(bare_cwd.iterdir()) == [path]


def test_a_campaign_file_keeps_no_password() -> None:
    path = Path(__file__).parent / "fixtures" / "campaign_with_password.toml"
    stored = load_campaign(path).stored()
    assert "s3cret" not in str(stored) and stored["targets"][0]["db"] == "postgresql://app@db1.example/tpcc?sslmode=require"
    with pytest.raises(TpsbenchError, match="does not exist"):
        load_campaign(path.with_name("nope.toml"))
