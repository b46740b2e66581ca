"""The engine against a tiny real workload: a table of counters, bumped and read.

The counter table is its own witness: every committed "bump" adds exactly one to the sum
of ``n``, so the engine's commit count can be checked against the database.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import unavailable, users_that_fit
from sqlalchemy.engine import make_url

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.workload import Check, LoadParams, LoadTask, Workload
from tpsbench.engine.coordinator import RunOutcome, RunStatus, StepOutcome, run_steps
from tpsbench.engine.steps import LoadStep
from tpsbench.measure.reports import IntervalReport
from tpsbench.targets import open_target

ROWS = 100


class CounterSession(Session):
    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        self.rng = random.Random(ctx.seed * 100_003 + user_id)
        mark = target.placeholder()
        self.bump_sql = f"UPDATE counter SET n = n + 1 WHERE id = {mark}"
        self.read_sql = f"SELECT n FROM counter WHERE id = {mark}"
        #: one statement per transaction, counted like sysbench's sessions count theirs
        self.statement_counts = {"read": 0, "write": 0}
        self.rebind(conn)

    def rebind(self, conn: Any) -> None:
        self.conn = conn
        self.cur = conn.cursor()

    def next_transaction(self) -> str:
        return "bump" if self.rng.random() < 0.6 else "read"

    def inputs(self, name: str) -> object:
        return (self.rng.randrange(ROWS),)

    def execute(self, name: str, inputs: object) -> bool:
        try:
            if name == "bump":
                self.cur.execute(self.bump_sql, inputs)
            else:
                self.cur.execute(self.read_sql, inputs)
                self.cur.fetchone()
            self.conn.commit()
            self.statement_counts["write" if name == "bump" else "read"] += 1
            return True
        except Exception:
            try:
                self.conn.rollback()
            except Exception:  # noqa: BLE001 - the connection may be gone; the first error is raised
                pass
            raise


class CounterWorkload(Workload):
    """A run-only workload: make_table() builds its one table, so its build side is empty."""

    name = "counter"
    tables = ("counter",)
    transaction_names = ("bump", "read")

    def constants(self, seed: int) -> dict[str, int]:
        return {}

    def tasks(self, scale: int) -> list[LoadTask]:
        return []

    def generate(self, task: LoadTask, params: LoadParams) -> Iterator[Batch]:
        return iter(())

    def expected_rows(self, scale: int, seed: int) -> dict[str, int]:
        return {}

    def checks(self) -> list[Check]:
        return []

    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        return CounterSession(ctx, user_id, users, conn, target)

    def verify_schema(self, target: Target) -> dict[str, str]:
        return {}

    def database_counts(self, conn: Any) -> dict[str, int]:
        cur = conn.cursor()
        cur.execute("SELECT COALESCE(SUM(n), 0) FROM counter")
        value = int(cur.fetchone()[0])
        conn.rollback()
        return {"sum": value}

    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        return {"sum": commits.get("bump", 0)}


def make_table(url: str) -> RunContext:
    target = open_target(url)
    target.ensure_database()
    conn = target.connect()
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS counter")
    cur.execute("CREATE TABLE counter (id integer PRIMARY KEY, n integer NOT NULL)")
    for i in range(ROWS):
        cur.execute(f"INSERT INTO counter VALUES ({i}, 0)")
    conn.commit()
    conn.close()
    return RunContext(workload="counter", url=url, scale=1, seed=7)


def evidence(url: str) -> int:
    conn = open_target(url).connect()
    try:
        return CounterWorkload().database_counts(conn)["sum"]
    finally:
        conn.close()


def commits(outcome: RunOutcome, name: str = "bump") -> int:
    return sum(r.txns[name].commits for step in outcome.steps for r in step.intervals)


def statements(step: StepOutcome, kind: str) -> int:
    return sum(r.statements.get(kind, 0) for r in step.intervals)


def bounded(fn: Any, seconds: float) -> Any:
    """Run fn in a thread; fail (rather than hang the suite) if it takes longer than seconds."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"did not finish within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


needs_pg = pytest.mark.postgresql


@pytest.fixture
def pg_ctx(pg_url: str) -> RunContext:
    """The counter table in a scratch PostgreSQL database of the test's own."""
    return make_table(pg_url)


def database(ctx: RunContext) -> str:
    """The name of ``ctx``'s database, as pg_stat_activity shows it."""
    return str(make_url(ctx.url).database)


def pg_admin(sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True) as conn:
        return conn.execute(sql).fetchall()


# -- honest counting ------------------------------------------------------------------------
def test_sqlite_commits_equal_table_change(tmp_path: Any) -> None:
    """Two steps: the second step's user threads take over the connections the first
    step's threads made (the engine keeps them), which sqlite3 refuses by default."""
    ctx = make_table(f"sqlite:///{tmp_path / 'counter.db'}")
    steps = [LoadStep(users=users, duration_s=0.5, rampup_s=0.5, interval_s=0.5) for users in (2, 4)]
    outcome = bounded(lambda: run_steps(ctx, CounterWorkload(), steps, processes=2, live=None), 90)
    assert outcome.status is RunStatus.COMPLETED
    assert [s.total().total("errors") for s in outcome.steps] == [0, 0], [s.total().errors for s in outcome.steps]
    step = outcome.steps[1]
    assert step.problems == []
    assert commits(outcome) > 0
    assert commits(outcome) == evidence(ctx.url)
    # the sessions' statement counts reach the steps, each exactly once, from both workers
    assert (sum(statements(s, "write") for s in outcome.steps), sum(statements(s, "read") for s in outcome.steps)) == (
        commits(outcome), commits(outcome, "read"))


@pytest.mark.slow
@needs_pg
def test_postgres_commits_equal_table_change_and_rampup_is_not_measured(pg_ctx: RunContext) -> None:
    seen: list[IntervalReport] = []
    done: list[StepOutcome] = []
    lines: list[str] = []
    steps = [LoadStep(users=3, duration_s=1.5, rampup_s=1.0, interval_s=0.5),
             LoadStep(users=6, duration_s=1.5, rampup_s=1.0, interval_s=0.5)]
    outcome = bounded(lambda: run_steps(pg_ctx, CounterWorkload(), steps, seen.append, done.append,
                                        processes=2, live=lines.append), 90)
    assert outcome.status is RunStatus.COMPLETED
    assert [s.step for s in done] == [1, 2] and len(seen) == sum(len(s.intervals) for s in done)
    assert len(lines) == len(seen) - 2  # no live line for the in-flight tail of a step
    assert sum("(ramp-up; " in line for line in lines) == 4
    assert [line.split(" users:")[0].split("] ")[1] for line in lines][:1] == ["step 1/2"]  # it names its step
    assert commits(outcome) == evidence(pg_ctx.url)
    for step in outcome.steps:
        assert step.problems == []
        flags = [r.steady for r in step.intervals]
        # two ramp-up intervals, three steady ones, then the transactions still in flight
        assert flags == [False, False, True, True, True, False]
        steady = [r for r in step.intervals if r.steady]
        assert step.summary is not None
        assert step.summary.intervals == 3
        assert step.summary.seconds == pytest.approx(1.5, abs=1e-6)
        assert step.summary.commits == sum(r.total("commits") for r in steady)
        assert step.summary.commits < step.total().total("commits")
        ramp_commits = sum(r.total("commits") for r in step.intervals if not r.steady)
        assert ramp_commits > 0  # users were working during the ramp-up, and it was left out
        assert step.summary.tps > 0 and step.summary.latency.p95 > 0
        # statement counts: a new session per step, counted once each, whole step and steady state
        total = step.total()
        assert total.statements == {"write": total.txns["bump"].commits, "read": total.txns["read"].commits}
        steady_commits = sum(r.total("commits") for r in steady)
        # a transaction finishing at an interval's edge may be counted an interval apart
        assert abs(sum(step.summary.statements.values()) - steady_commits) <= 2 * step.users
        assert step.summary.qps["total"] == pytest.approx(sum(step.summary.statements.values()) / 1.5)


@pytest.mark.slow
@pytest.mark.alone  # most of the server's connections
@needs_pg
def test_up_to_fifty_users_run_in_two_worker_processes(pg_ctx: RunContext) -> None:
    during: dict[str, Any] = {}

    def look(report: IntervalReport) -> None:
        if report.steady and "workers" not in during:
            during["workers"] = [p.pid for p in mp.active_children() if p.name.startswith("tpsbench-worker")]
            during["connections"] = pg_admin(f"SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                           f"'{database(pg_ctx)}' AND backend_type = 'client backend'")[0][0]

    users = users_that_fit(pg_ctx.url, 50, least=2)  # 50 where the server has the room
    outcome = bounded(lambda: run_steps(pg_ctx, CounterWorkload(), [LoadStep(users=users, duration_s=1.0, rampup_s=1.0,
                                                                         interval_s=0.5)], look, live=None), 90)
    step = outcome.steps[0]
    assert len(set(step.worker_pids)) == 2
    assert len(during["workers"]) == 2
    assert during["connections"] == users
    assert step.problems == [] and commits(outcome) == evidence(pg_ctx.url)


class PidSession(CounterSession):
    """Counts its transactions also under the kind "pid <its process>", so that a step's
    statement counts say which worker processes ran users."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> None:
        super().__init__(ctx, user_id, users, conn, target)
        self.by_process = f"pid {os.getpid()}"
        self.statement_counts[self.by_process] = 0

    def execute(self, name: str, inputs: object) -> bool:
        done = super().execute(name, inputs)
        self.statement_counts[self.by_process] += 1
        return done


class ThreePerWorker(CounterWorkload):
    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        return PidSession(ctx, user_id, users, conn, target)

    def users_per_worker(self, target: Target, options: Any) -> int:
        return 3


def test_processes_below_one_are_refused(tmp_path: Any) -> None:
    ctx = make_table(f"sqlite:///{tmp_path / 'counter.db'}")
    with pytest.raises(TpsbenchError, match="processes must be at least 1, not 0"):
        run_steps(ctx, CounterWorkload(), [LoadStep(users=1, duration_s=1.0)], processes=0, live=None)


def processes_that_ran(step: StepOutcome) -> set[str]:
    return {kind for kind, count in step.total().statements.items() if kind.startswith("pid") and count > 0}


@pytest.mark.slow
@needs_pg
def test_default_workers_follow_the_workloads_users_per_worker(pg_ctx: RunContext) -> None:
    if (os.cpu_count() or 1) < 2:
        unavailable("two cores for two workers", f"this machine has {os.cpu_count()}")
    steps = [LoadStep(users=3, duration_s=1.0, rampup_s=0.3, interval_s=0.5),
             LoadStep(users=5, duration_s=1.0, rampup_s=0.3, interval_s=0.5)]
    outcome = bounded(lambda: run_steps(pg_ctx, ThreePerWorker(), steps, live=None), 90)
    three, five = outcome.steps
    assert three.problems == [] and five.problems == []
    assert len(three.worker_pids) == 2  # the pool: ceil(5 / 3) workers
    assert len(processes_that_ran(three)) == 1 and len(processes_that_ran(five)) == 2
    assert commits(outcome) == evidence(pg_ctx.url)
    # --processes fixes the spread: both workers share even the smaller step
    fixed = bounded(lambda: run_steps(pg_ctx, ThreePerWorker(), steps[:1], processes=2, live=None), 90)
    assert len(processes_that_ran(fixed.steps[0])) == 2


# -- robustness ----------------------------------------------------------------------------
class OneUserCannotOpen(CounterWorkload):
    """User 1's session fails to open (not a lost connection): it sits the step out."""

    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        if user_id == 1:
            raise ValueError("no such table: counter_of_user_1")
        return super().open_session(ctx, user_id, users, conn, target)


def test_a_user_that_cannot_open_its_session_is_a_step_problem_stored_and_reported(tmp_path: Any) -> None:
    """The step goes on with the other users, and says it ran short of its plan: live,
    in the results store and under the report's table (not only as an error count)."""
    from tpsbench.commands.step_end import finish_step
    from tpsbench.report.table import render
    from tpsbench.results.store import PROBLEM, ResultsStore

    ctx = make_table(f"sqlite:///{tmp_path / 'counter.db'}")
    step = LoadStep(users=3, duration_s=1.0, rampup_s=0.3, interval_s=0.5)
    outcome = bounded(lambda: run_steps(ctx, OneUserCannotOpen(), [step], processes=1, live=None), 60)
    result = outcome.steps[0]
    assert result.problems == ["worker 0: user 1 ended: could not open its session, so it sat the step out: "
                               "no such table: counter_of_user_1"]
    assert result.total().total("errors") == 1 and commits(outcome) == evidence(ctx.url) > 0
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    run_id = store.start_run("counter", db_url=ctx.url)
    said: list[str] = []
    finish_step(store, run_id, result, said.append)
    assert said == [f"step 1 PROBLEM: {result.problems[0]}"]
    data = store.load_run(run_id)
    assert [(e.step, e.txn, e.message) for e in data.errors if e.txn == PROBLEM] == [(1, PROBLEM, result.problems[0])]
    assert f"run {run_id} step 1 PROBLEM: {result.problems[0]}" in " ".join(render([data]).split())


@pytest.mark.slow
@needs_pg
def test_killed_worker_ends_the_step_with_an_error_not_a_hang(pg_ctx: RunContext) -> None:
    killed: list[int] = []

    def kill_one(report: IntervalReport) -> None:
        if report.steady and not killed:
            victim = next(p for p in mp.active_children() if p.name.startswith("tpsbench-worker"))
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)

    steps = [LoadStep(users=6, duration_s=2.0, rampup_s=0.5, interval_s=0.5),
             LoadStep(users=6, duration_s=1.0, interval_s=0.5)]
    t0 = time.monotonic()
    outcome = bounded(lambda: run_steps(pg_ctx, CounterWorkload(), steps, kill_one, processes=2, live=None), 60)
    assert time.monotonic() - t0 < 30
    first, second = outcome.steps
    assert killed and any(f"pid {killed[0]}" in p and "signal 9" in p for p in first.problems)
    assert not first.intervals[-2].steady  # intervals after the death saw part of the load
    assert first.summary is not None and first.summary.intervals >= 1
    # the next step gets a fresh worker and runs whole
    assert second.problems == [] and killed[0] not in second.worker_pids and len(second.worker_pids) == 2
    assert second.summary is not None and second.summary.intervals == 2


@pytest.mark.slow
@needs_pg
def test_terminated_backends_reconnect_and_the_step_completes(pg_ctx: RunContext) -> None:
    terminated: list[int] = []

    def terminate_all(report: IntervalReport) -> None:
        if report.steady and not terminated:
            rows = pg_admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            f"WHERE datname = '{database(pg_ctx)}' AND pid <> pg_backend_pid()"
                            " AND backend_type = 'client backend'")
            terminated.append(len(rows))

    outcome = bounded(lambda: run_steps(pg_ctx, CounterWorkload(), [LoadStep(users=8, duration_s=2.5, rampup_s=0.5,
                                                                         interval_s=0.5)], terminate_all,
                                        processes=2, live=None), 60)
    step = outcome.steps[0]
    assert outcome.status is RunStatus.COMPLETED and terminated == [8]
    assert step.problems == []
    total = step.total()
    assert total.reconnects >= 8
    assert step.intervals[-2].total("commits") > 0  # working again after the reconnects
    # a commit whose connection died can have happened unseen: those are counted in doubt,
    # at most one per terminated backend, and the database's change lies within them
    in_doubt = total.total("in_doubt")
    assert 1 <= in_doubt <= 8
    assert 0 <= evidence(pg_ctx.url) - commits(outcome) <= in_doubt


@needs_pg
def test_more_users_than_connections_is_refused_before_anything_starts(pg_ctx: RunContext) -> None:
    t0 = time.monotonic()
    with pytest.raises(TpsbenchError, match=r"10000 users .* accepts \d+ more; .*max_connections"):
        run_steps(pg_ctx, CounterWorkload(), [LoadStep(users=5, duration_s=1), LoadStep(users=10_000, duration_s=1)],
                  live=None)
    assert time.monotonic() - t0 < 5
    assert not [p for p in mp.active_children() if p.name.startswith("tpsbench-worker")]


@pytest.mark.slow
@needs_pg
def test_ctrl_c_ends_the_run_within_five_seconds_keeping_finished_intervals(pg_ctx: RunContext,
                                                                          deliverable_sigint: None) -> None:
    armed: list[threading.Timer] = []
    sent: list[float] = []  # when the Ctrl-C went: the promise is timed from there, not from the arming

    def ctrl_c() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    def interrupt_soon(report: IntervalReport) -> None:
        if report.steady and not armed:
            armed.append(threading.Timer(0.2, ctrl_c))
            armed[0].start()

    outcome = run_steps(pg_ctx, CounterWorkload(), [LoadStep(users=4, duration_s=60, rampup_s=0.5, interval_s=0.5),
                                                    LoadStep(users=8, duration_s=60)],
                        interrupt_soon, processes=2, live=None)
    assert time.monotonic() - sent[0] < 5
    assert outcome.status is RunStatus.INTERRUPTED and len(outcome.steps) == 1
    step = outcome.steps[0]
    assert step.interrupted and step.summary is not None and step.summary.intervals >= 1
    assert commits(outcome) == evidence(pg_ctx.url)
    assert not [p for p in mp.active_children() if p.name.startswith("tpsbench-worker")]
