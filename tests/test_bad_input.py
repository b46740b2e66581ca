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

Most cases run in this process (conftest.cli_in_process: every refusal here comes before
a process would start, and a case that starts one fails); one case per command runs as
``python -m tpsbench``, so that the real entry point, its imports and argv decoding are
tested for each command as well.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import sqlite3
import subprocess
import sys
import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import cli_in_process, copy_of

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
    ("build", "tpcc", "--scale", "1.5"), ("build", "tpcc", "--scale", "inf"),
    ("build", "tpcc", "--scale", "nosuchpreset"),
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
    (*RUN, "--until-steady", "99999h"),
    (*RUN[:2], "--users", "1", "--duration", "10s", "--interval", "1s", "--until-steady", "6s"),
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
    ("check", "tpcc", "--db", "postgresql://postgres@127.0.0.1:1/x?pool_mode=sometimes"),
]


def digest(path: Path) -> str:
    """The content a refused command could change (see the module docstring)."""
    if not path.exists():
        return "absent"
    h = hashlib.sha256()
    # closed here: a connection left to the garbage collector keeps the -wal and -shm files
    # beside the database until it runs, which the no-file-created checks would see
    with contextlib.closing(sqlite3.connect(path)) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            if name in SMALL or path.name.startswith("results"):
                rows = conn.execute(f'SELECT * FROM "{name}" ORDER BY 1').fetchall()
                h.update(repr((name, rows)).encode())
            else:
                h.update(repr((name, conn.execute(f'SELECT count(*) FROM "{name}"').fetchone())).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory,
          built_tpcc_sqlite: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """TPC-C (the session's build, copied) and sysbench in one database, a store with a run."""
    folder = tmp_path_factory.mktemp("corpus")
    copy_of(built_tpcc_sqlite, folder, "db.sqlite")
    settings = {"TPSBENCH_DB": f"sqlite:///{folder / 'db.sqlite'}",
                "TPSBENCH_RESULTS": f"sqlite:///{folder / 'results.db'}"}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}, **settings}
    built = cli_in_process("build", "sysbench", "--tables", "1", "--table-size", "500", cwd=folder, env=settings)
    assert built.returncode == 0, built.stderr
    done = subprocess.run([sys.executable, "-m", "tpsbench", *RUN[:2], "--users", "1", "--duration", "1s", "--rampup",
                           "0s", "--interval", "0.5s"], env=env, cwd=folder, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr  # a run starts driver processes: not in this one
    yield folder, env


#: the cases that run as ``python -m tpsbench``: one per command, those where the real
#: process matters most (a password in the URL, text argv cannot decode, a file not made)
IN_A_PROCESS: set[tuple[str, ...]] = {
    ("build", "tpcc", "--scale", "99999", "--db", "sqlite:///big.db"), (*RUN, "--storage", "bad\udcff"),
    ("check", "tpcc", "--db", f"postgresql://postgres:{SECRET}@127.0.0.1:abc/x"), ("drop", "nosuch"),
    ("size", "tpcc", "--scale", "nan"), ("presets", "../../etc/passwd"), ("report", "999"),
    ("compare", "nosuchlabel"), ("runs", "--results", f"postgresql://u:{SECRET}@127.0.0.1:1/x"),
}


def attempt(world: tuple[Path, dict[str, str]], args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """The case as ``python -m tpsbench`` (:data:`IN_A_PROCESS`), else in this process, where
    what the CLI would print as a traceback is an exception, reported as that traceback."""
    folder, env = world
    if args in IN_A_PROCESS:
        return subprocess.run([sys.executable, "-m", "tpsbench", *args], env=env, cwd=folder, capture_output=True,
                              text=True, timeout=120, errors="replace")
    try:
        return cli_in_process(*args, cwd=folder, env={k: v for k, v in env.items() if k.startswith("TPSBENCH_")})
    except Exception:  # noqa: BLE001 - a case's traceback is its failure, listed with the others'
        return subprocess.CompletedProcess(args, 1, "", traceback.format_exc())


def attempt_all(world: tuple[Path, dict[str, str]],
                cases: list[tuple[str, ...]]) -> list[subprocess.CompletedProcess[str]]:
    """Every case's outcome, in order: the real processes side by side (refused inputs read at
    most), then the rest one at a time, as this process has one working folder."""
    with ThreadPoolExecutor(4) as pool:
        real = dict(zip(own := [c for c in cases if c in IN_A_PROCESS], pool.map(lambda c: attempt(world, c), own)))
    return [real[c] if c in real else attempt(world, c) for c in cases]


def test_the_corpus_is_large_and_every_case_distinct() -> None:
    assert len(CASES) >= 80 and len(set(CASES)) == len(CASES)


def test_every_command_has_a_case_run_as_a_process() -> None:
    """The real entry point is tried for each command of the corpus, not only in this process."""
    from tpsbench.cli.main import cli

    every = [*CASES, *(args for args, _ in NAMED)]
    assert IN_A_PROCESS <= set(every)
    assert {args[0] for args in IN_A_PROCESS} == {args[0] for args in every if args[0] in cli.commands}


def test_every_bad_input_is_one_line_and_changes_nothing(world: tuple[Path, dict[str, str]]) -> None:
    folder, _ = world
    stores = [folder / "db.sqlite", folder / "results.db"]
    before = [digest(p) for p in stores]
    files = sorted(p.name for p in folder.iterdir())
    results = list(zip(CASES, attempt_all(world, CASES)))
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
    results = list(zip(NAMED, attempt_all(world, [args for args, _ in NAMED])))
    failures = []
    for (args, needle), done in results:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode == 0 or len(lines) != 1 or "Traceback" in done.stderr or needle not in lines[0]:
            failures.append(f"{' '.join(args)[:120]!r}: exit {done.returncode}, stderr {done.stderr[-300:]!r}")
    assert not failures, "\n".join(failures)
    assert [digest(p) for p in stores] == before
    assert sorted(p.name for p in folder.iterdir()) == files


def test_users_the_hard_limit_on_open_files_cannot_take_are_refused_naming_it(
        world: tuple[Path, dict[str, str]]) -> None:
    """A hard RLIMIT_NOFILE of 200, as a service manager may set it: 500 users over two
    processes put 250 sockets in each, which no raise of the soft limit can make room for;
    one line names the limit and what to set, and nothing is stored."""
    folder, env = world
    stores = [folder / "db.sqlite", folder / "results.db"]
    before, files = [digest(p) for p in stores], sorted(p.name for p in folder.iterdir())
    done = subprocess.run([sys.executable, "-m", "tpsbench", *RUN[:2], "--users", "500", "--processes", "2",
                           "--duration", "1s"], env=env, cwd=folder, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200)))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "(RLIMIT_NOFILE) is 200" in lines[0] and "ulimit -n 314" in lines[0] and "LimitNOFILE=314" in lines[0]
    assert [digest(p) for p in stores] == before
    assert sorted(p.name for p in folder.iterdir()) == files
