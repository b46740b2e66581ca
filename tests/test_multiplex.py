"""Users sharing one thread (tpsbench.engine.multiplex) on the real servers: TPC-C's stored
procedures counted exactly as the database shows them, think times that pace the
users, lost connections handed back to their threads, a step that stops."""

from __future__ import annotations

import contextlib
import importlib.util
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import unavailable
from test_tpcc_transactions import Db, built_database

from tpsbench.core.meta import read_meta
from tpsbench.core.session import RunContext
from tpsbench.engine.multiplex import DRAW_AHEAD, Multiplexer
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.reports import IntervalReport
from tpsbench.targets import open_target
from tpsbench.targets.mysql.prepared import PreparedCursor
from tpsbench.workloads.tpcc import USERS_PER_WORKER, TpccWorkload
from tpsbench.workloads.tpcc.checks import CHECKS
from tpsbench.workloads.tpcc.counts import database_counts, expected_counts
from tpsbench.workloads.tpcc.table import TRANSACTIONS


@pytest.fixture(scope="module", params=[
    pytest.param("postgresql", marks=pytest.mark.postgresql),
    pytest.param("mysql", marks=[pytest.mark.mysql, pytest.mark.slow]),  # a build of its own: the full lane's
])
def server(request: pytest.FixtureRequest, db_template: Callable[..., str]) -> Iterator[Db]:
    if request.param == "mysql" and importlib.util.find_spec("MySQLdb") is None:
        # the shared thread needs mysqlclient's C connection; PyMySQL users run on threads of their own
        unavailable("mysqlclient (pip install 'tpsbench[fast]')", "not installed")
    scratch = built_database(request.param, db_template)  # test_tpcc_transactions' build
    url = next(scratch)
    try:
        target = open_target(url)
        meta = read_meta(target, "tpcc")
        constants = {k.removeprefix("const_"): int(v) for k, v in meta.items() if k.startswith("const_")}
        probe = Db(url, target, RunContext("tpcc", url, int(meta["scale"]), 7, constants, {}), target.connect(), [])
        try:
            yield probe
        finally:
            for conn in [probe.conn, *probe.opened]:
                with contextlib.suppress(Exception):
                    conn.close()
    finally:
        for _ in scratch:  # drop the server database
            pass


class Hosting:
    """``users`` TPC-C sessions (stored procedures) hosted by one Multiplexer in this process."""

    def __init__(self, db: Db, users: int, think_s: float | None = None) -> None:
        self.db = db
        self.recorder = IntervalRecorder(TRANSACTIONS)
        self.stop = threading.Event()
        self.mux = Multiplexer(db.target, self.recorder, self.stop, think=think_s is not None)
        self.sessions = [db.session(uid, procedures="on") for uid in range(users)]
        #: the server's ids of their connections, read before the shared thread uses them
        self.backends = [backend_id(db, session.conn) for session in self.sessions]
        for session in self.sessions:
            assert Multiplexer.can_host(session)
            if think_s is not None:  # short, fixed keying and think times instead of the spec's seconds
                session.keying_time = session.think_time = lambda name, s=think_s: s  # type: ignore[method-assign,misc]  # fixed waits on this session instance; s pins think_s for the lambda
        #: what each user's hosting returned: None at the step's end, else the transaction it lost its connection in
        self.returned: dict[int, str | None] = {}
        #: how the shared thread failed instead, by user
        self.raised: dict[int, BaseException] = {}
        self.threads = [threading.Thread(target=self._host, args=(uid,)) for uid in range(users)]

    def _host(self, uid: int) -> None:
        """Hand the user to the shared thread and wait until it comes back, waking the shared
        thread once the stop is set (the worker's step does that in a run)."""
        done = threading.Event()
        slot = self.mux.adopt(self.sessions[uid], lambda _: done.set())
        while not done.wait(0.1) and self.mux.thread.is_alive():
            if self.stop.is_set():
                self.mux.wake()
        if self.mux.failure is not None:
            self.raised[uid] = RuntimeError(f"the shared thread ended: {self.mux.failure}")
        else:
            self.returned[uid] = slot.name if slot.lost is not None else None

    def __enter__(self) -> Hosting:
        self.mux.start()
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> IntervalReport:
        """Stop, wait for every user to come back (bounded), and the recorder's report."""
        self.stop.set()
        deadline = time.monotonic() + 15
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            assert not thread.is_alive(), "a hosted user did not come back after the stop"
        self.mux.join(5)
        assert not self.mux.thread.is_alive()
        return self.recorder.take(1, 0, 0.0, 1.0)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()


def test_tpcc_packs_users_into_workers_only_with_stored_procedures(server: Db, tmp_path: Any) -> None:
    wl = TpccWorkload()
    assert wl.users_per_worker(server.target, {}) == USERS_PER_WORKER == 100
    assert wl.users_per_worker(server.target, {"procedures": "off"}) == 1
    assert wl.users_per_worker(open_target(f"sqlite:///{tmp_path / 'x.db'}"), {}) == 1


def commits(report: IntervalReport) -> dict[str, int]:
    return {name: txn.commits for name, txn in report.txns.items()}


class AnsweredAsSent(PreparedCursor):
    """MySQL's prepared path with every answer waited for inside ``send_encoded``: what
    happens now and then when the server, on a core of its own, answers before libmariadb
    first reads. Every statement then takes the shared thread's path for answers in already."""

    def send_encoded(self, encoded: Any) -> bool:
        if not super().send_encoded(encoded):
            while not self.receive():
                select.select([self.fileno()], [], [], 5.0)
        return True


@pytest.mark.parametrize("answered_as_sent", [False, True], ids=["waited", "answered-as-sent"])
@pytest.mark.slow  # seconds of hosted users: the quick lane hosts them in the others
def test_hosted_users_commit_exactly_what_the_database_shows(server: Db, answered_as_sent: bool) -> None:
    before = database_counts(server.conn)
    hosting = Hosting(server, 6)
    if answered_as_sent:
        if not isinstance(hosting.sessions[0].transaction_cursor, PreparedCursor):
            pytest.skip("answers read as they are sent: MySQL's prepared statements only")
        for session in hosting.sessions:
            session.transaction_cursor.__class__ = AnsweredAsSent
    with hosting:
        time.sleep(2.0)
        report = hosting.finish()
    after = database_counts(server.conn)
    assert {k: after[k] - before[k] for k in after} == expected_counts(commits(report))
    assert all(report.txns[name].commits > 0 for name in ("new_order", "payment")), commits(report)
    assert report.total("errors") == 0 and report.reconnects == 0, report.error_counts
    assert hosting.returned == dict.fromkeys(range(6))  # all came back at the stop, none lost
    assert all(session.last_output is not None for session in hosting.sessions)  # every user ran
    for check in CHECKS:
        if check.holds_after_run:
            assert server.rows(check.sql) == [], f"condition {check.number} ({check.title}) fails"


def test_the_shared_thread_draws_ahead_the_same_transactions_one_at_a_time_would(server: Db) -> None:
    """Transactions are drawn and begun DRAW_AHEAD at a time (Multiplexer.draw_ahead); the
    user still runs exactly the sequence a session drawing one transaction at a time deals."""
    sent: list[tuple[str, object]] = []
    hosting = Hosting(server, 1)
    session = hosting.sessions[0]
    assert session.one_statement  # TPC-C's procedure calls: drawn as call(), no generator
    run = session.call

    def recorded(name: str, inputs: object) -> Any:
        sent.append((name, inputs))
        return run(name, inputs)

    session.call = recorded  # type: ignore[method-assign]  # before the shared thread starts
    with hosting:
        time.sleep(1.0)
        hosting.finish()
    alone = server.session(0, procedures="on")
    dealt = []
    for _ in range(len(sent)):
        name = alone.next_transaction()
        dealt.append((name, alone.inputs(name)))
    assert len(sent) > DRAW_AHEAD and sent == dealt


def test_think_times_pace_hosted_users(server: Db) -> None:
    """0.05 s of keying and 0.05 s of think time per transaction: at most ~11 transactions
    per user in a second; without the timers these users would run hundreds."""
    with Hosting(server, 4, think_s=0.05) as hosting:
        time.sleep(1.0)
        report = hosting.finish()
    done = sum(txn.commits + txn.rollbacks for txn in report.txns.values())
    assert 4 * 5 <= done <= 4 * 12, done


def test_a_session_bug_ends_the_shared_thread_and_each_hosted_user_says_so(server: Db) -> None:
    """A bug in one session (its inputs() raising) cannot be a user's error like a
    database's: the shared thread ends, and every user it hosted raises in its own
    thread, where the worker lists it among the step's problems (Worker.guarded)."""
    hosting = Hosting(server, 3)

    def broken(name: str) -> object:
        raise ZeroDivisionError("a bug in inputs()")

    hosting.sessions[1].inputs = broken  # type: ignore[method-assign]  # a broken inputs() on this one session instance
    with hosting:
        for thread in hosting.threads:
            thread.join(10)
        assert not any(thread.is_alive() for thread in hosting.threads)
    assert set(hosting.raised) == {0, 1, 2} and not hosting.returned
    assert all("ZeroDivisionError: a bug in inputs()" in str(exc) for exc in hosting.raised.values())


def backend_id(db: Db, conn: Any) -> int:
    return conn.info.backend_pid if db.target.dialect == "postgresql" else conn.thread_id()


def kill(db: Db, ident: int) -> None:
    cur = db.conn.cursor()
    try:
        if db.target.dialect == "postgresql":
            cur.execute("SELECT pg_terminate_backend(%s)", (ident,))
        else:
            cur.execute(f"KILL CONNECTION {int(ident)}")
    finally:
        cur.close()
    db.conn.commit()


# seconds each: the quick lane kills the connections mostly while their users think
@pytest.mark.parametrize("think_s", [pytest.param(None, marks=pytest.mark.slow), 0.2], ids=["busy", "thinking"])
def test_a_lost_connection_goes_back_to_its_users_thread(server: Db, think_s: float | None) -> None:
    """Killed while a statement is out, or (mostly) while the user thinks: then the
    closed socket speaks out of turn, is left alone, and the next send finds it dead."""
    with Hosting(server, 4, think_s=think_s) as hosting:
        time.sleep(0.5)
        for ident in hosting.backends:
            kill(server, ident)
        for thread in hosting.threads:
            thread.join(15)  # the users come back: their own threads would reconnect now
        report = hosting.finish()
    assert set(hosting.returned) == set(range(4))
    assert all(name in TRANSACTIONS for name in hosting.returned.values()), hosting.returned
    assert report.reconnects == 4 and report.total("errors") == 0, (report.reconnects, report.error_counts)


@pytest.mark.slow
def test_engine_step_survives_every_backend_killed_with_users_on_the_shared_thread(server: Db) -> None:
    """Through the whole engine (one worker, users on its shared thread): every backend of
    the run killed mid-step; the users reconnect on their own threads, are hosted again,
    and the step completes with the reconnects counted and commits after them; the
    database's evidence differs from the driver's count by at most the calls in flight
    when the connections died (their commits may have happened unseen)."""
    from test_engine import bounded

    from tpsbench.engine.coordinator import RunStatus, run_steps
    from tpsbench.engine.steps import LoadStep
    from tpsbench.workloads import get_workload

    wl = get_workload("tpcc")
    ctx = RunContext("tpcc", server.url, server.ctx.scale, 11, server.ctx.constants,
                     {"think": "off", "warehouses": "home", "client": "fast", "procedures": "on"})
    killed: list[int] = []

    def backends() -> set[int]:
        cur = server.conn.cursor()
        if server.target.dialect == "postgresql":
            cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                        " AND backend_type = 'client backend'")  # parallel-query workers carry datname too
        else:
            cur.execute("SELECT id FROM information_schema.PROCESSLIST WHERE db = DATABASE()")
        found = {int(row[0]) for row in cur.fetchall()}
        cur.close()
        server.conn.commit()
        return found

    earlier = backends()  # this probe and the earlier tests' sessions: not the run's

    def kill_all(report: IntervalReport) -> None:
        if report.steady and not killed:
            ours = backends() - earlier
            for ident in ours:
                kill(server, ident)
            killed.append(len(ours))

    before = database_counts(server.conn)
    step = LoadStep(users=6, duration_s=3.0, rampup_s=0.5, interval_s=0.5, multiplex=True)
    outcome = bounded(lambda: run_steps(ctx, wl, [step], kill_all, processes=1, live=None), 90)
    after = database_counts(server.conn)
    result = outcome.steps[0]
    assert outcome.status is RunStatus.COMPLETED and result.problems == [] and killed == [6]
    total = result.total()
    assert total.reconnects >= 6 and total.total("errors") == 0, (total.reconnects, total.error_counts)
    assert result.intervals[-2].total("commits") > 0  # working again after the reconnects
    expected = expected_counts(commits(total))
    assert all(0 <= after[k] - before[k] - expected[k] <= 6 for k in expected), (before, after, expected)


def test_the_shared_thread_sleeps_until_rung_and_ends_at_once_when_stopped() -> None:
    """With no timer due it sleeps without a timeout: the stop is heard through wake(),
    not by polling, and a thread that never hosted anyone still ends at once."""
    stop = threading.Event()
    mux = Multiplexer(None, IntervalRecorder(TRANSACTIONS), stop, think=False)  # type: ignore[arg-type]  # no target: this multiplexer never hosts a user
    mux.start()
    time.sleep(0.3)
    assert mux.thread.is_alive()  # nothing to do, nothing due: still asleep
    stop.set()
    started = time.monotonic()
    mux.wake()
    mux.thread.join(2.0)
    assert not mux.thread.is_alive() and time.monotonic() - started < 1.0
