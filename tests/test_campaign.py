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


@pytest.mark.slow
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
     "targets 1 (target 1, sqlite:///a.db) and 2 (target 2, sqlite:///a.db) are the same database"),
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


# -- [options] and the targets' databases, checked before anything is stored -------------------

SECRET = "Campaign-Secret-7d1"
TOP = 'workload = "tpcc"\nscale = 1\nusers = [1, 2]\n'
TWO = '[[target]]\ndb = "sqlite:///a.db"\nstorage = "A"\n[[target]]\ndb = "sqlite:///b.db"\nstorage = "B"\n'
#: a few of what the refusal lists as accepted, in its order (run may gain options around them)
ACCEPTS = "[options] accepts "


def refused(folder: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    """The CLI in this process on a campaign file of ``text``, its results store a store
    holding a campaign already: exit code, stderr lines, all output; the store must be as it was."""
    from test_bad_input import digest

    store = folder / "results.db"
    if not store.exists():
        ResultsStore(f"sqlite:///{store}").start_campaign("earlier", {"targets": []})
    path = folder / "c.toml"
    path.write_text(text)
    before, files = digest(store), sorted(folder.iterdir())
    code, out, lines = invoke(["campaign", str(path), "--results", f"sqlite:///{store}"], capsys)
    assert digest(store) == before and sorted(folder.iterdir()) == files, lines
    return code, lines, out + "\n".join(lines)


@pytest.mark.parametrize(("options", "needle"), [
    ('speed = 3', "[options] speed is not a run option of tpcc; " + ACCEPTS),
    ('rand_type = "uniform"', "[options] rand_type is not a run option of tpcc; " + ACCEPTS),  # sysbench's
    ('storage = "SSD"', "[options] storage is set per target (storage = NAME under [[target]]); " + ACCEPTS),
    ('db = "sqlite:///c.db"', "[options] db is set per target (db = URL under [[target]]); " + ACCEPTS),
    ('data-path = "/srv"', "[options] data_path is set per target"),
    ('trace = "traces"', "[options] trace is set per run only"),
    ('users = "1,2"', "[options] users is set at the top of the campaign file (users = ...); " + ACCEPTS),
    ('results = "sqlite:///r.db"', "[options] results is set on the command line (tpsbench campaign --results URL)"),
])
def test_options_take_only_the_run_options_that_fit_a_whole_campaign(
        bare_cwd: Path, options: str, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, said = refused(bare_cwd, f"{TOP}[options]\n{options}\n{TWO}", capsys)
    assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in said, lines
    accepted = lines[0].partition(ACCEPTS)[2].split(", ")
    assert {"processes", "think", "mix", "multiplex", "cluster_workers", "notes"} <= set(accepted), lines
    assert not set(accepted) & {"storage", "url", "db", "users", "trace", "results_url", "campaign"}, lines


@pytest.mark.parametrize(("options", "needle"), [
    ('processes = 0', "[options] Invalid value for '--processes': 0 is not in the range x>=1"),
    ('delivery = "later"', "[options] Invalid value for '--delivery': 'later' is not one of"),
    ('think = "bogus"', "[options] --think takes off, spec, fixed:2s"),
    ('mix = "nosuch=1"', "[options] --mix: unknown transaction 'nosuch'"),
    ('rate = "1,2,3"', "[options] --rate gives 3 rates for 2 steps"),
    ('rate = "100"\nthink = "fixed:1s"', "[options] --rate schedules every transaction's start"),
    ('force = "yes"', "[options] force is a flag: true or false, not 'yes'"),
    ('processes = true', "[options] processes is not a flag: give a value, not True"),
    ('warmup = "-5s"', "[options] --warmup -5s: duration must look like 30s, 2m or 1h"),
    ('warmup = "1ms"', "[options] --warmup must be 0 (none) or from 0.1s to 30 days, not 0.001s"),
    ('until_steady = "40s"', "[options] --until-steady 40s is shorter than 5 intervals of 10s"),
    ('until-steady = "60s"', "[options] --until-steady 60s is shorter than --duration 120s"),
    ('notes = [1, 2]', "[options] notes must be text, a number or true/false"),
])
def test_option_values_are_checked_as_run_checks_them(bare_cwd: Path, options: str, needle: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, said = refused(bare_cwd, f"{TOP}[options]\n{options}\n{TWO}", capsys)
    assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in said, lines


@pytest.mark.parametrize(("first", "second", "needle"), [
    ("sqlite:///a.db", "sqlite:///{cwd}/a.db", "targets 1 (A, sqlite:///a.db) and 2 (B, sqlite:///{cwd}/a.db) are"
                                                " the same database: each target needs one of its own"),
    ("sqlite:///a.db", "sqlite:///./sub/../a.db", "targets 1 (A, sqlite:///a.db) and 2 (B, sqlite:///./sub/../a.db)"),
    ("postgresql://postgres@localhost/pool", f"postgresql+psycopg://postgres:{SECRET}@127.0.0.1:5432/pool",
     "targets 1 (A, postgresql://postgres@localhost/pool) and 2 (B, postgresql+psycopg://postgres@127.0.0.1:5432/pool)"),
    ("mysql://root@db1.example/pool", f"mariadb+pymysql://app:{SECRET}@DB1.example:3306/pool?charset=utf8mb4",
     "targets 1 (A, mysql://root@db1.example/pool) and 2 (B, mariadb+pymysql://app@DB1.example:3306/pool"),
])
def test_two_targets_on_one_database_are_refused_naming_both(bare_cwd: Path, first: str, second: str, needle: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    text = TOP + "".join(f'[[target]]\ndb = "{db.format(cwd=bare_cwd)}"\nstorage = "{label}"\n'
                         for label, db in (("A", first), ("B", second)))
    code, lines, said = refused(bare_cwd, text, capsys)
    assert code == 2 and len(lines) == 1 and needle.format(cwd=bare_cwd) in lines[0], lines
    assert SECRET not in said and "Traceback" not in said


def test_same_server_other_database_or_port_is_not_the_same_database() -> None:
    from tpsbench.core.campaign import database_identity

    ids = {database_identity(url) for url in ("postgresql://h/a", "postgresql://h/b", "postgresql://h:5433/a",
                                               "mysql://h/a", "postgresql://other/a", "sqlite:///a.db",
                                               "sqlite:///b.db")}
    assert len(ids) == 7


@pytest.mark.slow
def test_options_reach_every_target_s_run_flags_included(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    urls = {name: copy_of(built_tpcc_sqlite, tmp_path, name + ".db") for name in ("first", "second")}
    path = write_campaign(tmp_path, urls, duration="0.5s")
    path.write_text(path.read_text().replace("users = [1, 2]", "users = [1]").replace(
        'think = "off"', 'think = "off"\nmultiplex = false\nprocesses = 1\nforce = false\nnotes = "same for all"'))
    done = tpsbench("campaign", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}", create=False).list_runs()
    assert [r.storage for r in runs] == ["first", "second"]
    for run in runs:
        assert (run.config["multiplex"], run.config["processes"], run.config["force"], run.notes) == \
            (False, 1, False, "same for all")
