"""A corpus of bad input across every command: one short line, a non-zero exit, nothing changed.

Why a corpus: a user types every one of these sooner or later, and each once ended in a
traceback, a hang, a run that "completed" with every transaction failed, a build that
wrote gigabytes before failing, or a password on the screen. Every case runs the real
CLI against a built database (TPC-C and sysbench in one SQLite file) and a results store
holding a run, and asserts: exit code not 0, exactly one line on stderr, no traceback, no
password in any output, and the database and the store as they were. "As they were" is
their content where a refused command could change it: every row of the small tables
(tpsbench_meta, the whole results store) and the row count of every big one, so a run
counter raised, a run stored, a table created, dropped or loaded all show.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

SECRET = "Corpus-Secret-9f2"
#: tables whose every row goes into a digest (the others: their row counts)
SMALL = ("tpsbench_meta", "warehouse", "district")
RUN = ("run", "tpcc", "--users", "1", "--duration", "1s", "--rampup", "0s", "--interval", "1s")
SB = ("run", "sysbench", "--users", "1", "--duration", "1s", "--rampup", "0s", "--interval", "1s")

CASES: list[tuple[str, ...]] = [
    # unknown names, missing arguments, wrong types
    ("build", "nosuch", "--scale", "1"), ("run", "nosuch"), ("check", "nosuch"), ("drop", "nosuch"),
    ("size", "nosuch", "--scale", "1"), ("presets", "nosuch"), ("presets", "../../etc/passwd"),
    ("build", "tpcc"), ("size", "tpcc"), ("report", "notanumber"), ("nosuchcommand",),
    # scales
    ("build", "tpcc", "--scale", "0"), ("build", "tpcc", "--scale", "-1"), ("build", "tpcc", "--scale", "ten"),
    ("build", "tpcc", "--scale", "1.5"), ("build", "tpcc", "--scale", "inf"), ("build", "tpcc", "--scale", "nosuchpreset"),
    ("build", "tpcc", "--scale", "99999999999"), ("build", "sysbench", "--tables", "0"),
    ("build", "sysbench", "--tables", "1", "--table-size", "0"),
    ("build", "sysbench", "--tables", "1", "--table-size", "abc"),
    ("build", "sysbench", "--tables", "1", "--table-size", "99999999999999"),
    ("build", "sysbench", "--tables", "1", "--rand-type", "nosuch"),
    ("size", "tpcc", "--scale", "0"), ("size", "tpcc", "--scale", "-5"), ("size", "tpcc", "--scale", "nan"),
    # the tables are there already, or someone else's
    ("build", "tpcc", "--scale", "1"), ("build", "sysbench", "--tables", "1"),
    # build options and seeds
    ("build", "tpcc", "--scale", "1", "--seed", "-1", "--drop-existing"),
    ("build", "tpcc", "--scale", "1", "--seed", "99999999999999999999999", "--drop-existing"),
    ("build", "tpcc", "--scale", "1", "--seed", "x"), ("build", "tpcc", "--scale", "1", "--loaders", "0"),
    ("build", "tpcc", "--scale", "1", "--loaders", "-3"), ("build", "tpcc", "--scale", "1", "-o", "nosuch=1"),
    ("build", "tpcc", "--scale", "1", "-o", "novalue"), ("build", "tpcc", "--scale", "1", "-o", "=1"),
    # users, durations, intervals
    (*RUN[:2], "--users", "0"), (*RUN[:2], "--users", "-1"), (*RUN[:2], "--users", "1,0"),
    (*RUN[:2], "--users", "a,b"), (*RUN[:2], "--users", ""), (*RUN[:2], "--users", ","),
    (*RUN[:2], "--users", "999999999999999999999"), (*RUN[:2], "--users", "100001"),
    (*RUN[:2], "--users", "1", "--duration", "0s"), (*RUN[:2], "--users", "1", "--duration", "-1s"),
    (*RUN[:2], "--users", "1", "--duration", "abc"), (*RUN[:2], "--users", "1", "--duration", "inf"),
    (*RUN[:2], "--users", "1", "--duration", "nan"), (*RUN[:2], "--users", "1", "--duration", "99999999999h"),
    (*RUN[:2], "--users", "1", "--duration", "1s", "--rampup", "99999999999h"),
    (*RUN[:2], "--users", "1", "--duration", "1s", "--rampup", "-1s"),
    (*RUN[:2], "--users", "1", "--duration", "1s", "--interval", "0s"),
    (*RUN[:2], "--users", "1", "--duration", "1s", "--interval", "5 parsecs"),
    (*RUN, "--warmup", "-5s"), (*RUN, "--warmup", "inf"), (*RUN, "--warmup", "nan"), (*RUN, "--warmup", "99999h"),
    (*RUN, "--warmup", "1ms"), (*RUN, "--warmup", "soon"), (*RUN, "--warmup", "1m", "--cache", "cold"),
    (*RUN, "--until-steady", "4s"), (*RUN, "--until-steady", "-1m"), (*RUN, "--until-steady", "inf"),
    (*RUN, "--until-steady", "99999h"), (*RUN[:2], "--users", "1", "--duration", "10s", "--interval", "1s", "--until-steady", "6s"),
    (*RUN, "--seed", "-5"), (*RUN, "--seed", "99999999999999999999999"), (*RUN, "--processes", "0"),
    (*RUN, "--build-if-missing", "--scale", "0"), (*RUN, "--build-if-missing", "--scale", "huge"),
    # text that cannot be stored
    (*RUN, "--storage", "bad\udcff"), (*RUN, "--notes", "bad\udcc3"), (*RUN, "--storage", "x" * 201),
    # TPC-C options
    (*RUN, "--think", "bogus"), (*RUN, "--warehouses", "3"), (*RUN, "--client", "c"),
    (*RUN, "--procedures", "on"), (*RUN, "--procedures", "maybe"), (*RUN, "--delivery", "later"),
    # sysbench options
    (*SB, "--mode", "nosuch"), (*SB, "--table-size", "-5"), (*SB, "--tables", "0"), (*SB, "--tables", "99"),
    (*SB, "--rand-type", "nosuch"), (*SB, "--rand-zipfian-exp", "nan"), (*SB, "--rand-zipfian-exp", "1e400"),
    (*SB, "--rand-zipfian-exp", "-1"), (*SB, "--rand-pareto-h", "inf"), (*SB, "--rand-pareto-h", "0"),
    (*SB, "--rand-spec-pct", "101"), (*SB, "--rand-spec-res", "-3"), (*SB, "--rand-spec-iter", "0"),
    (*SB, "--rand-spec-iter", "99999999"), (*SB, "--range-size", "0"),
    (*SB, "--range-size", "999999999999999999999"), (*SB, "--point-selects", "-1"),
    (*SB, "--point-selects", "99999999999"), (*SB, "--delete-inserts", "99999999999"),
    (*SB, "--random-points", "0"), (*SB, "--number-of-ranges", "99999999"), (*SB, "--delta", "-1"),
    (*SB, "--range-selects", "perhaps"), (*SB, "--client", "c"),
    # the results store and reports
    ("report", "999"), ("report", "1", "999"), ("compare", "nosuchlabel"), ("report", "--format", "pdf"),
    ("runs", "--results", "sqlite:////nonexistent/dir/r.db"), ("report", "--results", "notaurl"),
    # URLs, some with a password in them
    ("check", "tpcc", "--db", f"postgresql://postgres:{SECRET}@127.0.0.1:abc/x"),
    ("check", "tpcc", "--db", f"oracle://scott:{SECRET}@127.0.0.1/orcl"),
    ("check", "tpcc", "--db", f"postgresql://postgres@127.0.0.1:1/x?password={SECRET}"),
    ("build", "tpcc", "--scale", "1", "--db", f"postgresql://postgres:{SECRET}@127.0.0.1:1/x"),
    ("runs", "--results", f"postgresql://u:{SECRET}@127.0.0.1:1/x"),
    ("check", "tpcc", "--db", "sqlite:////nonexistent/dir/x.db"), ("check", "tpcc", "--db", "://"),
    ("check", "tpcc", "--db", "mysql+nosuchdriver://root@127.0.0.1/x"),
]


def digest(path: Path) -> str:
    """The content a refused command could change (see the module docstring)."""
    if not path.exists():
        return "absent"
    h = hashlib.sha256()
    with sqlite3.connect(path) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            if name in SMALL or path.name.startswith("results"):
                rows = conn.execute(f'SELECT * FROM "{name}" ORDER BY 1').fetchall()
                h.update(repr((name, rows)).encode())
            else:
                h.update(repr((name, conn.execute(f'SELECT count(*) FROM "{name}"').fetchone())).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("corpus")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")},
           "TPSBENCH_DB": f"sqlite:///{folder / 'db.sqlite'}", "TPSBENCH_RESULTS": f"sqlite:///{folder / 'results.db'}"}
    for args in (("build", "tpcc", "--scale", "1"), ("build", "sysbench", "--tables", "1", "--table-size", "500"),
                 (*RUN[:2], "--users", "1", "--duration", "1s", "--rampup", "0s", "--interval", "0.5s")):
        done = subprocess.run([sys.executable, "-m", "tpsbench", *args], env=env, cwd=folder, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    yield folder, env


def attempt(world: tuple[Path, dict[str, str]], args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    folder, env = world
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], env=env, cwd=folder, capture_output=True,
                          text=True, timeout=120, errors="replace")


def test_the_corpus_is_large_and_every_case_distinct() -> None:
    assert len(CASES) >= 80 and len(set(CASES)) == len(CASES)


def test_every_bad_input_is_one_line_and_changes_nothing(world: tuple[Path, dict[str, str]]) -> None:
    folder, _ = world
    stores = [folder / "db.sqlite", folder / "results.db"]
    before = [digest(p) for p in stores]
    files = sorted(p.name for p in folder.iterdir())
    with ThreadPoolExecutor(4) as pool:  # refused inputs read at most, so they may run side by side
        results = list(pool.map(lambda args: (args, attempt(world, args)), CASES))
    failures = []
    for args, done in results:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        output = done.stdout + done.stderr
        if (done.returncode == 0 or len(lines) != 1 or "Traceback" in output or SECRET in output
                or not lines[0].startswith(("tpsbench: error: ", "Usage:", "Error:"))):
            failures.append(f"{' '.join(args)!r}: exit {done.returncode}, stderr {done.stderr[-300:]!r}")
    assert not failures, "\n".join(failures)
    assert [digest(p) for p in stores] == before
    assert sorted(p.name for p in folder.iterdir()) == files  # no file created beside them


#: values this host cannot keep, weights that cannot be dealt, builds that cannot fit, lists
#: too long and options without the one they apply with: each with what its line must say
NAMED: list[tuple[tuple[str, ...], str]] = [
    # rates, gaps and intervals (the limits: bench/results/host_timing.txt)
    ((*RUN, "--rate", "9999999"), "--rate 9,999,999 gives a driver process 9,999,999 arrivals a second"),
    ((*SB[:2], "--users", "4", "--processes", "1", "--rate", "500000"), "one process keeps at most 200,000"),
    ((*RUN[:2], "--users", "1", "--duration", "1s", "--interval", "1ms"), "--interval 0.001s is shorter than 0.1s"),
    ((*RUN[:2], "--users", "1", "--duration", "50ms"), "--duration 0.05s is shorter than 0.1s"),
    ((*RUN[:2], "--users", "1", "--duration", "1s", "--interval", "5s"), "--interval 5s is longer than --duration 1s"),
    ((*RUN[:2], "--users", "1", "--rampup", "nan"), "--rampup nan: duration must look like"),
    ((*RUN, "--warmup", "-5s"), "--warmup -5s: duration must look like"),
    ((*RUN, "--warmup", "1ms"), "--warmup must be 0 (none) or from 0.1s to 30 days, not 0.001s"),
    ((*RUN, "--warmup", "999h"), "--warmup 999h: duration must be at most 30 days"),
    ((*RUN, "--warmup", "1m", "--cache", "cold"), "--warmup warms the caches that --cache cold empties"),
    ((*RUN, "--until-steady", "4s"), "--until-steady 4s is shorter than 5 intervals of 1s, the window SNIA's"),
    ((*RUN[:2], "--users", "1", "--duration", "10s", "--interval", "1s", "--until-steady", "6s"),
     "--until-steady 6s is shorter than --duration 10s: it extends a step's measured window, never cuts it"),
    ((*RUN, "--interarrival", "fixed:0s"), "--interarrival fixed:0s: a mean gap of 0s is under 1ms"),
    ((*RUN, "--interarrival", "uniform:0s..1ms"), "a mean gap of 0.0005s is under 1ms"),
    # weights
    ((*RUN, "--mix", "new_order=1e308,payment=1e308"), "--mix: the weights add up beyond a number"),
    ((*RUN, "--mix", "new_order=1e-300,payment=1e300"), "--mix: new_order=1e-300 is under 1/1,000 of the total"),
    ((*RUN, "--mix", "new_order=1,payment=1999"), "new_order=1 is under 1/1,000"),
    ((*RUN, "--mix", "new_order=nan"), "the weight of new_order must be a positive number, got 'nan'"),
    # builds that cannot fit the file's filesystem, refused before the file is made
    (("build", "tpcc", "--scale", "99999", "--db", "sqlite:///big.db"), "a tpcc build of 99999 warehouses takes"),
    (("build", "sysbench", "--tables", "64", "--table-size", "100000000", "--db", "sqlite:///big.db"),
     "a sysbench build of 64 tables x 100,000,000 rows takes"),
    (("build", "tpce", "--customers", "999000", "--db", "sqlite:///big.db"), "a tpce build of 999,000 customers"),
    ((*RUN, "--build-if-missing", "--scale", "99999", "--db", "sqlite:///big.db"), "MB free"),
    # lists
    ((*RUN[:2], "--users", ",".join(map(str, range(1, 102))), "--duration", "1s"), "--users lists 101 steps"),
    ((*RUN[:2], "--users", "1,2", "--duration", "1s", "--rate", "1,2,3"), "--rate gives 3 rates for 2 steps"),
    # options that do nothing without another
    ((*RUN, "--arrivals", "fixed"), "--arrivals spaces the arrivals of --rate: give --rate"),
    ((*SB, "--rand-zipfian-exp", "1.2"), "--rand-zipfian-exp applies only with --rand-type zipfian"),
    ((*SB, "--delta", "3"), "--delta applies only with --mode select_random_ranges"),
    ((*RUN, "--trace", "traces"), "--trace writes the timestamps of paced steps"),
    (("build", "tpcc", "--scale", "1", "--force", "--db", "sqlite:///big.db"), "--force replaces tables a run is"),
]


def test_what_cannot_be_kept_is_refused_naming_the_option(world: tuple[Path, dict[str, str]]) -> None:
    """One line naming the option and its value, before the database, the store or the
    folder changes; refusals come before any run, so the lot takes seconds."""
    folder, _ = world
    stores = [folder / "db.sqlite", folder / "results.db"]
    before, files = [digest(p) for p in stores], sorted(p.name for p in folder.iterdir())
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda case: (case, attempt(world, case[0])), NAMED))
    failures = []
    for (args, needle), done in results:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode == 0 or len(lines) != 1 or "Traceback" in done.stderr or needle not in lines[0]:
            failures.append(f"{' '.join(args)[:120]!r}: exit {done.returncode}, stderr {done.stderr[-300:]!r}")
    assert not failures, "\n".join(failures)
    assert [digest(p) for p in stores] == before
    assert sorted(p.name for p in folder.iterdir()) == files
