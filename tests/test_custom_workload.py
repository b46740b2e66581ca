"""Your own SQL as a workload: ``tpsbench build/run/check custom --file F``.

Why these tests: the promise is that a DBA's own schema and transactions, written in a
TOML file, run with the same measurement, store and report as the shipped workloads,
and that a mistake in the file is a few clear lines before anything is built or stored.
So the documentation's own example file (read from docs/, so that the page cannot drift
from what works) is built, run, reported and checked through the real CLI on SQLite,
PostgreSQL and MariaDB; the rules (expected rollbacks, retries) are run for real; the
generators are held to what they say; and malformed files go through the CLI one by one.
Databases are the conftest scratch ones, named tpsb_custom_<hex>.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import conftest
import numpy as np
import pytest
from scipy import stats

import tpsbench
from tpsbench.core.session import RunContext
from tpsbench.report.limits import LIMITED_BY
from tpsbench.report.steadiness import STEADY_ROW
from tpsbench.results.store import ResultsStore
from tpsbench.targets import open_target
from tpsbench.workloads.custom import generators, spec
from tpsbench.workloads.custom.session import CustomSession
from tpsbench.workloads.custom.sqltext import for_driver, parse

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "docs" / "examples" / "order_entry.toml"
SCRATCH_PREFIX = "tpsb_custom_"
WEIGHTS = {"new_order": 45, "payment": 43, "order_status": 12}


def tpsbench_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    for name in ("TPSBENCH_DB", "TPSBENCH_RESULTS", "TPSBENCH_WORKLOADS"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@contextlib.contextmanager
def scratch(kind: str, tmp_path: Path) -> Iterator[str]:
    """A fresh database of ``kind`` named tpsb_custom_<hex> (a SQLite file in tmp_path)."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'oe.db'}"
        return
    make = conftest.scratch_pg_database if kind == "postgresql" else conftest.scratch_mysql_database
    with mock.patch.object(conftest, "SCRATCH_PREFIX", SCRATCH_PREFIX), make() as url:
        yield url


def report_rows(text: str) -> dict[str, list[float]]:
    """``report --format csv`` as {metric: values per step}; the verdict's and the steady state's rows are text."""
    rows = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) > 3 and row[0].startswith("run ") and row[2] not in (LIMITED_BY, STEADY_ROW):
            rows[row[2]] = [float(v) for v in row[3:] if v]
    return rows


# -- the docs example, end to end, on every database here ------------------------------------

KINDS = ("sqlite", "postgresql", "mariadb")


@dataclass
class ExampleRun:
    """What one database's pass through the example gave (see :func:`example_flow`)."""

    built: subprocess.CompletedProcess[str]
    ran: subprocess.CompletedProcess[str]
    report: dict[str, list[float]] = field(default_factory=dict)
    checks: list[bool] = field(default_factory=list)
    broken: subprocess.CompletedProcess[str] | None = None


def example_flow(kind: str, url: str, folder: Path) -> ExampleRun:
    """Build and two short steps through the CLI, the report with its per-transaction rows
    from the results store, the checks; on SQLite a broken rule checked through the CLI
    too. One loader and one driver process: a process started costs a second of CPU."""
    results = f"sqlite:///{folder / 'results.db'}"
    built = tpsbench_cli("build", "custom", "--file", str(EXAMPLE), "--db", url, "--loaders", "1", cwd=folder)
    if built.returncode:
        return ExampleRun(built, built)
    ran = tpsbench_cli("run", "custom", "--file", str(EXAMPLE), "--db", url, "--users", "1,2", "--rampup", "0s",
                       "--duration", "2s", "--interval", "1s", "--processes", "1", "--results", results, cwd=folder)
    if ran.returncode:
        return ExampleRun(built, ran)
    run_id = int(ran.stdout.rsplit("run ", 1)[1].split(":")[0])
    out = ExampleRun(built, ran, report_rows(tpsbench.render([ResultsStore(results).load_run(run_id)], format="csv",
                                                             txns=True)))
    out.checks = [c.passed for c in tpsbench.check("custom", url, options={"file": str(EXAMPLE)})]
    if kind == "sqlite":
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn, conn:
            conn.execute("UPDATE oe_customer SET c_order_cnt = c_order_cnt + 1 WHERE c_id = 7")
        out.broken = tpsbench_cli("check", "custom", "--file", str(EXAMPLE), "--db", url, cwd=folder)
    return out


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ExampleRun | BaseException]]:
    """The example's flow on each database at the same time (they mostly wait: on their
    steps and on processes starting), each outcome or what stopped it (a server that is
    not there skips, or fails with CI=true, in its own test)."""
    flows: dict[str, ExampleRun | BaseException] = {}
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(len(KINDS)) as pool:
        futures = {}
        for kind in KINDS:
            folder = tmp_path_factory.mktemp(f"example_{kind}")
            try:
                url = stack.enter_context(scratch(kind, folder))
            except BaseException as exc:  # noqa: BLE001 - pytest's skip (or CI's fail) for that test alone
                flows[kind] = exc
                continue
            futures[kind] = pool.submit(example_flow, kind, url, folder)
        for kind, future in futures.items():
            try:
                flows[kind] = future.result()
            except Exception as exc:  # noqa: BLE001 - that database's test fails with it
                flows[kind] = exc
        yield flows


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_the_docs_example_builds_runs_reports_and_checks(kind: str, example_runs: dict[str, ExampleRun | BaseException],
                                                        ) -> None:
    """The docs' example file builds, runs two steps with a matching honesty check (its
    counters against the commits), reports a row per transaction at about its weight,
    and its checks pass (and find a broken row: exit 1)."""
    flow = example_runs[kind]
    if isinstance(flow, BaseException):
        raise flow
    assert flow.built.returncode == 0 and "built custom scale 1" in flow.built.stdout, flow.built.stderr
    assert flow.ran.returncode == 0, flow.ran.stdout + flow.ran.stderr
    assert "statement(s) prepared on" in flow.ran.stderr and "honesty check matches" in flow.ran.stdout
    assert "new_order" not in flow.ran.stdout  # the run's report is the overview; --txns adds a row per transaction
    for name, weight in WEIGHTS.items():
        assert all(tps > 0 for tps in flow.report[f"{name} TPS"]), flow.report
        # each user deals whole decks of 100 cards: a window of a step is off only by the
        # partial decks at its two ends, at most 45 new_order cards each, per user
        for users, tps, mix in zip((1, 2), flow.report["TPS"], flow.report[f"{name} mix (%)"]):
            assert abs(mix - weight) <= max(1.0, 100 * 2 * 45 * users / (tps * 2)), flow.report
    assert sum(flow.report["Errors"]) == 0
    assert flow.checks == [True, True, True]
    if flow.broken is not None:
        assert flow.broken.returncode == 1 and flow.broken.stdout.count("pass") == 2 and "FAIL" in flow.broken.stdout


def test_the_scale_multiplies_the_rows_of_scaled_tables(tmp_path: Path) -> None:
    """--scale 2 loads twice the rows of every table but the unscaled catalogue, and the
    bounds that name a table's rows follow (customers' districts reach 20); the same seed
    loads the same data."""
    urls = [f"sqlite:///{tmp_path / name}" for name in ("a.db", "b.db")]
    for url in urls:
        tpsbench.build("custom", 2, url, seed=5, load_time="2024-05-06 07:08:09", show_progress=False,
                       options={"file": str(EXAMPLE)})
    tables = []
    for name in ("a.db", "b.db"):
        with contextlib.closing(sqlite3.connect(tmp_path / name)) as conn:
            counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                      for t in ("oe_district", "oe_item", "oe_customer", "oe_order")}
            districts = conn.execute("SELECT MIN(c_d_id), MAX(c_d_id) FROM oe_customer").fetchone()
            tables.append(conn.execute("SELECT * FROM oe_customer ORDER BY c_id").fetchall())
    assert counts == {"oe_district": 20, "oe_item": 1000, "oe_customer": 2000, "oe_order": 0}
    assert districts == (1, 20)
    assert tables[0] == tables[1]


# -- the rules, run for real ---------------------------------------------------------------------

RULES = """
retry_on = ["unique_violation"]

[[table]]
name = "cw_slot"
create = "CREATE TABLE cw_slot (k INTEGER NOT NULL PRIMARY KEY)"

[[table]]
name = "cw_taken"
create = "CREATE TABLE cw_taken (k INTEGER NOT NULL PRIMARY KEY)"

[[transaction]]
name = "claim"
weight = 1
statements = [{ sql = "INSERT INTO cw_slot (k) VALUES (:k)", rollback_on = ["unique_violation"] }]
params = { k = { gen = "uniform", min = 1, max = 3 } }

[[transaction]]
name = "bump"
weight = 1
statements = [{ sql = "UPDATE cw_slot SET k = k + 0 WHERE k = :k", rollback_if = "no_rows" }]
params = { k = { gen = "uniform", min = 100, max = 200 } }

[[transaction]]
name = "grab"
weight = 1
statements = ["INSERT INTO cw_taken (k) VALUES (:k)"]
params = { k = { gen = "uniform", min = 1, max = 2 } }

[[counter]]
name = "slots"
sql = "SELECT COUNT(*) FROM cw_slot"
per_commit = { claim = 1 }

[[counter]]
name = "taken"
sql = "SELECT COUNT(*) FROM cw_taken"
per_commit = { grab = 1 }
"""


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_rollback_and_retry_rules(kind: str, tmp_path: Path) -> None:
    """A named error (rollback_on) and a zero-row result (rollback_if) are expected
    rollbacks, not errors; a retry_on error is retried by the engine and counted as its
    retries, until it gives up with an error; the counters agree with the commits."""
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    with scratch(kind, tmp_path) as url:
        tpsbench.build("custom", 1, url, show_progress=False, options={"file": str(path)})
        record = tpsbench.run(tpsbench.RunConfig("custom", url, users=[1], rampup_s=0, duration_s=0.6,
                                                 interval_s=0.3, options={"file": str(path)},
                                                 results_url=f"sqlite:///{tmp_path / 'results.db'}"),
                              live=None, observers=[])
    total = record.outcome.steps[0].total()
    assert total is not None
    txns = total.txns
    assert txns["claim"].commits == 3 and txns["claim"].rollbacks > 0 and txns["claim"].errors == 0
    assert txns["bump"].commits == 0 and txns["bump"].rollbacks > 0 and txns["bump"].errors == 0
    assert txns["grab"].commits == 2 and txns["grab"].errors > 0
    assert txns["grab"].retries >= 10 * txns["grab"].errors  # each error gave up after the engine's 10 retries
    assert record.honesty["match"] is True and record.honesty["actual"] == {"slots": 3, "taken": 2}


def test_a_bound_empty_at_the_built_scale_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    """"rows:TABLE" is known once the build's scale is: an empty range is one line before
    the first step, and the results store stays unwritten."""
    path = tmp_path / "empty.toml"
    path.write_text('[[table]]\nname = "cw_a"\ncreate = "CREATE TABLE cw_a (a INTEGER)"\n'
                    + GOOD_TXN.replace("max = 9", 'max = "rows:cw_a"'))
    url = f"sqlite:///{tmp_path / 'e.db'}"
    tpsbench.build("custom", 1, url, show_progress=False, options={"file": str(path)})
    with pytest.raises(spec.FileProblems, match=r"transaction 't' parameter x: 1\.\.0 holds no uniform value"):
        tpsbench.run(tpsbench.RunConfig("custom", url, users=[1], options={"file": str(path)},
                                        results_url=f"sqlite:///{tmp_path / 'results.db'}"), live=None)
    assert not (tmp_path / "results.db").exists()


# -- the mix and the generators ------------------------------------------------------------

def open_session(text: str, tmp_path: Path, user_id: int = 0) -> CustomSession:
    path = tmp_path / "w.toml"
    path.write_text(text)
    found = spec.load(path)
    target = open_target(f"sqlite:///{tmp_path / 'session.db'}")
    ctx = RunContext("custom", str(target.url), scale=1, seed=11)
    return CustomSession(ctx, user_id, 1, target.connect(), target, found, {})


MIX = """
[[transaction]]
name = "a"
weight = {a}
statements = ["SELECT 1"]
[[transaction]]
name = "b"
weight = {b}
statements = ["SELECT 2"]
[[transaction]]
name = "c"
weight = {c}
statements = ["SELECT 3"]
"""


@pytest.mark.parametrize("weights", [(5, 3, 2), (0.5, 0.3, 0.2), (45, 43, 12)])
def test_the_realised_mix_follows_the_weights(weights: tuple[float, float, float], tmp_path: Path) -> None:
    """Every full deck holds each transaction exactly its share: 10,000 cards (whole decks
    for each of these weights) meet the weights exactly, and a window that is not a deck
    within a point."""
    a, b, c = weights
    session = open_session(MIX.format(a=a, b=b, c=c), tmp_path)
    dealt = [session.next_transaction() for _ in range(10_000)]
    total = a + b + c
    assert Counter(dealt) == {name: round(10_000 * w / total) for name, w in zip("abc", weights)}
    window = Counter(dealt[37:3037])
    assert all(abs(window[name] / 3000 - w / total) < 0.01 for name, w in zip("abc", weights))
    assert dealt[:100] != dealt[100:200]  # shuffled, deck by deck


def draw(gen: dict[str, object], n: int, for_columns: bool = False, first: int = 0, sizes: dict[str, int] | None = None,
         ) -> np.ndarray:
    problems: list[str] = []
    parsed = generators.parse(gen, "test", for_columns, problems)
    assert parsed is not None, problems
    return generators.drawer(parsed, "t.x", sizes or {}, seed=3, now="2024-05-06 07:08:09")(
        np.random.default_rng(9), first, n)


def test_uniform_decimal_and_sequence_draw_what_they_say() -> None:
    values = draw({"gen": "uniform", "min": -2, "max": 3}, 60_000)
    assert values.min() == -2 and values.max() == 3
    assert stats.chisquare(np.bincount(values + 2)).pvalue > 0.001
    money = draw({"gen": "decimal", "min": 1, "max": 2, "places": 2}, 10_000)
    assert money.min() >= 1 and money.max() <= 2 and np.allclose(money * 100, np.round(money * 100))
    assert len(np.unique(money)) == 101
    rows = draw({"gen": "sequence", "start": 10, "repeat": 2, "cycle": "rows:t"}, 7, True, first=3, sizes={"t": 3})
    assert rows.tolist() == [10 + (r // 2) % 3 for r in range(3, 10)]
    bounded = draw({"gen": "uniform", "min": 1, "max": "rows:t"}, 1000, sizes={"t": 4})
    assert set(bounded.tolist()) == {1, 2, 3, 4}


def test_nurand_has_its_shape() -> None:
    """NURand(A, x, y) against its exact distribution, enumerated over every pair of draws."""
    a, low, high, c = 15, 1, 40, 7
    exact = np.zeros(high - low + 1)
    for r1 in range(a + 1):
        for r2 in range(low, high + 1):
            exact[((r1 | r2) + c) % (high - low + 1)] += 1
    values = draw({"gen": "nurand", "a": a, "min": low, "max": high, "c": c}, 80_000)
    observed = np.bincount(values - low, minlength=high - low + 1)
    assert stats.chisquare(observed, exact / exact.sum() * len(values)).pvalue > 0.001
    assert exact.max() / exact.min() > 2  # the shape is skewed: a uniform draw would fail the test above


def test_strings_and_choices_draw_what_they_say() -> None:
    texts = draw({"gen": "string", "length": [3, 7], "alphabet": "letters"}, 20_000)
    lengths = np.char.str_len(texts)
    assert set(lengths.tolist()) == {3, 4, 5, 6, 7}
    assert stats.chisquare(np.bincount(lengths)[3:]).pvalue > 0.001
    assert b"".join(texts.tolist()).isalpha()
    fixed = draw({"gen": "string", "length": 5, "alphabet": "digits"}, 100)
    assert all(len(v) == 5 and v.isdigit() for v in fixed.tolist())
    picked = draw({"gen": "choice", "values": ["x", "y", "z"], "weights": [6, 3, 1]}, 30_000)
    counts = [int((picked == v).sum()) for v in (b"x", b"y", b"z")]
    assert stats.chisquare(counts, [18_000, 9_000, 3_000]).pvalue > 0.001


def test_a_session_draws_python_values_ranges_and_the_time(tmp_path: Path) -> None:
    """Through the session's streams: numbers as ints, texts as str, a range as a window of
    its size inside its bounds, "now" as the current time, constants as they are."""
    session = open_session("""
[[transaction]]
name = "t"
weight = 1
statements = ["SELECT :id, :name, :span_low, :span_high, :at, :fixed, :code"]
[transaction.params]
id = { gen = "nurand", a = 63, min = 1, max = 500 }
name = { gen = "string", length = [2, 4] }
span = { gen = "range", min = 1, max = 20, size = 5 }
at = { gen = "now" }
fixed = 42
code = { gen = "choice", values = [7, 8] }
""", tmp_path)
    drawn = [session.inputs("t") for _ in range(2_000)]
    assert all(type(v["id"]) is int and 1 <= v["id"] <= 500 for v in drawn)
    assert all(type(v["name"]) is str and 2 <= len(v["name"]) <= 4 for v in drawn)
    assert all(1 <= v["span_low"] and v["span_high"] == v["span_low"] + 4 <= 20 for v in drawn)
    assert {v["span_low"] for v in drawn} == set(range(1, 17))
    assert all(v["fixed"] == 42 and v["code"] in (7, 8) for v in drawn)
    assert drawn[0]["at"][:4].isdigit() and len(drawn[0]["at"]) == 19
    ran = session.execute("t", drawn[0])
    assert ran is True and session.transaction_cursor is not None


def test_statements_bind_named_parameters_and_leave_quotes_casts_and_comments() -> None:
    named = parse("SELECT ':no', x::int, \"a:b\" -- :no\n FROM t WHERE a = :a AND b LIKE 'x%' AND c = :a /* :no */")
    assert named.names == ("a", "a")
    assert for_driver(named, "%s").endswith("a = %s AND b LIKE 'x%%' AND c = %s /* :no */")
    assert for_driver(parse("SELECT 'x%'"), "%s") == "SELECT 'x%'"
    assert for_driver(named, "?").count("?") == 2 and "x::int" in for_driver(named, "?")


# -- malformed files: one clear line each, nothing built or stored -------------------------------

GOOD_TXN = """
[[transaction]]
name = "t"
weight = 1
statements = ["SELECT :x"]
params = { x = { gen = "uniform", min = 1, max = 9 } }
"""
#: (name, the file, what its one line says): each is run through the CLI
MALFORMED = [
    ("generator", GOOD_TXN.replace('gen = "uniform"', 'gen = "uniforn"'),
     "transaction 't' parameter x: unknown generator 'uniforn'"),
    ("parameter", GOOD_TXN.replace("SELECT :x", "SELECT :x, :y"), "transaction 't' statement 1: unknown parameter :y"),
    ("unused", GOOD_TXN.replace("params = {", "params = { z = 1,"), "transaction 't' parameter z: defined but unused"),
    ("weight", GOOD_TXN.replace("weight = 1", "weight = -2"), "transaction 't': weight must be a number above 0"),
    ("empty", 'description = "nothing to run"\n', "no [[transaction]]"),
    ("toml", GOOD_TXN.replace("[[transaction]]", "[[transaction]"), "is not valid TOML"),
    ("key", GOOD_TXN.replace("weight = 1", "weight = 1\nstatement = []"), "transaction 't': unknown key 'statement'"),
    ("bound", GOOD_TXN.replace("max = 9", 'max = "rows:nosuch"'), "\"rows:nosuch\" names no [[table]]"),
    ("counter", GOOD_TXN + '[[counter]]\nname = "n"\nsql = "SELECT 1"\nper_commit = { u = 1 }\n',
     "counter 'n': per_commit names 'u', which is no transaction"),
    ("prepare", 'reads = ["nosuch"]\n' + GOOD_TXN.replace("SELECT :x", "SELECT x FROM nosuch WHERE id = :x"),
     "transaction 't' statement 1: does not prepare on sqlite: no such table: nosuch"),
]
#: more of them, read in this process (the CLI says what spec.load raises)
MORE_MALFORMED = [
    (GOOD_TXN.replace('{ gen = "uniform", min = 1, max = 9 }', '{ gen = "choice", values = [1, "a"] }'),
     "transaction 't' parameter x: values must be a non-empty list of texts or of numbers"),
    (GOOD_TXN.replace("min = 1, ", ""), "transaction 't' parameter x: generator 'uniform' needs min"),
    (GOOD_TXN.replace('"SELECT :x"', '{ sql = "SELECT :x", rollback_if = "no_row" }'),
     "transaction 't' statement 1: rollback_if must be 'no_rows'"),
    (GOOD_TXN.replace('["SELECT :x"]', '["BEGIN", "SELECT :x"]'), "statement 1: tpsbench begins and ends"),
    (GOOD_TXN.replace('"SELECT :x"', '{ sql = "SELECT :x", into = ["x"] }, "SELECT :x"'),
     "statement 1: into 'x': a parameter of that name is defined already"),
    (GOOD_TXN.replace('"SELECT :x"', '{ sql = "SELECT :x", into = ["y"] }'), "statement 1: into 'y' is never used"),
    (GOOD_TXN.replace('"SELECT :x"', '{ sql = "SELECT :x", rollback_on = ["dup"] }'), "unknown error 'dup'"),
    (GOOD_TXN.replace('gen = "uniform"', 'gen = "sequence"').replace("min = 1, max = 9", "start = 1"),
     "generator 'sequence' numbers table rows"),
    ('[[table]]\nname = "t1"\ncreate = "CREATE TABLE t1 (a INT)"\nrows = 5\n' + GOOD_TXN,
     "rows = 5 but no [table.columns]"),
    ('[[table]]\nname = "t1"\ncreate = "CREATE TABLE t1 (a INT)"\nrows = 5\ncolumns = { a = { gen = "query", '
     'sql = "SELECT 1" } }\n' + GOOD_TXN, "generator 'query' is for transaction parameters only"),
    (GOOD_TXN.replace('["SELECT :x"]', '[{ postgresql = "SELECT :x" }, "SELECT :x"]').replace("max = 9", "max = 0"),
     "min 1 is above max 0"),
]


@pytest.mark.parametrize(("text", "says"), MORE_MALFORMED)
def test_more_malformed_files_each_say_what_is_wrong(text: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(spec.FileProblems) as raised:
        spec.load(path)
    assert raised.value.problems == [next(p for p in raised.value.problems if says in p)], raised.value.problems
    assert str(raised.value).startswith(f"{path}: ")


def test_every_problem_of_a_file_is_said_at_once(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(GOOD_TXN.replace("weight = 1", "weight = 0").replace("SELECT :x", "SELECT :y"))
    with pytest.raises(spec.FileProblems) as raised:
        spec.load(path)
    assert len(raised.value.problems) == 3 and str(raised.value).count("\n") == 2  # weight, :y, x unused


def test_malformed_files_give_one_clear_line_and_nothing_is_built_or_stored(tmp_path: Path) -> None:
    """Each file through the CLI: exit 2, one line on stderr naming the file and the item,
    no results store and no tables. Build and run alternate; the file whose statement does
    not prepare is run against a database that is there (it builds no tables). The first
    build and the first run as ``python -m tpsbench``, the others in this process
    (conftest.cli_in_process: refused before any process starts)."""
    existing = tmp_path / "there.db"
    with contextlib.closing(sqlite3.connect(existing)) as conn:
        conn.execute("CREATE TABLE mine (a INTEGER)")
    commands = []
    for number, (name, text, _) in enumerate(MALFORMED):
        path = tmp_path / f"{name}.toml"
        path.write_text(textwrap.dedent(text))
        db = existing if name == "prepare" else tmp_path / f"{name}.db"
        command = "run" if number % 2 or name == "prepare" else "build"
        args = [command, "custom", "--file", path.name, "--db", f"sqlite:///{db}"]
        if command == "run":
            args += ["--results", f"sqlite:///{tmp_path / f'{name}-results.db'}"]
        commands.append(args)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    real = {number: subprocess.Popen([sys.executable, "-m", "tpsbench", *commands[number]], cwd=tmp_path, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for number in (0, 1)}
    done: list[subprocess.CompletedProcess[str] | None] = [
        None if number in real else conftest.cli_in_process(*args, cwd=tmp_path)
        for number, args in enumerate(commands)]
    for number, process in real.items():
        out, err = process.communicate(timeout=120)
        done[number] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    for (name, _, says), finished in zip(MALFORMED, done):
        assert finished is not None
        out, err = finished.stdout, finished.stderr
        lines = [line for line in err.splitlines() if line.strip()]
        assert finished.returncode == 2, (name, out, err)
        assert len(lines) == 1 and lines[0].startswith(f"tpsbench: error: {name}.toml") or name == "toml", (name, err)
        assert says in lines[0], (name, lines)
        assert not (tmp_path / f"{name}.db").exists() and not (tmp_path / f"{name}-results.db").exists(), name
    with contextlib.closing(sqlite3.connect(existing)) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("mine",)]
