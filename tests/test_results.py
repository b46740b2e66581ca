"""The results store on a real SQLite file, and on PostgreSQL when one answers.

PostgreSQL: a scratch database per test (tests/conftest.py); skipped when the server does
not answer, except with CI=true, where a missing server fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from conftest import scratch_pg_database

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.redact import safe_url
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.reports import IntervalReport
from tpsbench.measure.summary import SteadySummary
from tpsbench.results.schema import (
    SCHEMA_VERSION,
    campaigns_table,
    histograms_table,
    marker_table,
    metadata,
    observations_table,
    runs_table,
    store_info_table,
)
from tpsbench.results.store import ResultsStore

NAMES = ("new_order", "payment", "delivery")
SECRET = "Hunter2-very-secret"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResultsStore]:
    """A new store: a SQLite file, or a scratch PostgreSQL database of its own (a shared one
    would carry the layout of whichever tpsbench wrote it last)."""
    if request.param == "sqlite":
        yield ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
        return
    with scratch_pg_database() as url:
        yield ResultsStore(url)


def interval(rec: IntervalRecorder, step: int, number: int, seed: int, steady: bool = True) -> IntervalReport:
    rng = np.random.default_rng(seed)
    for i, v in enumerate(rng.integers(200, 80_000, 3000).tolist()):
        rec.record(NAMES[i % 3], v, i % 100 != 1)
    rec.add("payment", "retries", 2)
    rec.add("payment", "errors")
    rec.error("payment", "could not serialize access due to concurrent update")
    return rec.take(step, number, 1000.0 + 10 * number, 1010.0 + 10 * number, steady=steady)


def test_a_run_round_trips(store: ResultsStore) -> None:
    run_id = store.start_run("tpcc", db_url="postgresql://bob@db/tpcc", storage="RAID10 4x SSD",
                             config={"warehouses": 10, "steps": [1, 20]}, seed=42, notes="first try",
                             server={"version": "15.2", "settings": {"shared_buffers": "128MB"}})
    rec = IntervalRecorder(NAMES)
    store.start_step(run_id, 1, users=20, rampup_s=10, duration_s=20)
    reports = [interval(rec, 1, n, seed=n, steady=n > 0) for n in range(3)]
    for report in reports:
        store.add_interval(run_id, report, users=20)
    summary = SteadySummary.from_reports(reports, users=20)
    store.finish_step(run_id, 1, summary)
    store.finish_step(run_id, 1, summary)  # again: replaces, does not duplicate
    store.finish_run(run_id, "completed", honesty={"evidence": "ok", "new_order": [100, 100]})

    data = store.load_run(run_id)
    run = data.run
    assert (run.id, run.workload, run.status, run.storage, run.seed) == (run_id, "tpcc", "completed",
                                                                        "RAID10 4x SSD", 42)
    assert run.config == {"warehouses": 10, "steps": [1, 20]}
    assert run.server["settings"] == {"shared_buffers": "128MB"}
    assert run.honesty == {"evidence": "ok", "new_order": [100, 100]}
    assert run.started_at <= run.ended_at and run.started_at.tzinfo is not None
    assert run.tool_version and run.notes == "first try"

    (step,) = data.steps
    assert (step.step, step.users, step.rampup_s, step.duration_s) == (1, 20, 10.0, 20.0)
    assert step.summary == summary
    assert step.summary.seconds == pytest.approx(20.0)
    assert [(i.interval, i.steady) for i in data.intervals] == [(0, False), (1, True), (2, True)]
    first = data.intervals[0]
    assert first.commits == reports[0].total("commits") and first.retries == 2 and first.errors == 1
    assert first.tps == pytest.approx(reports[0].tps)
    assert first.p95_ms == reports[0].histogram().percentile(95) / 1000.0
    assert [(e.step, e.txn, e.count) for e in data.errors] == [(1, "payment", 3)]  # summed over intervals
    assert "serialize" in data.errors[0].message

    assert store.load_histogram(run_id, 1) == summary.histograms["*"]
    assert store.load_histogram(run_id, 1, "payment") == summary.histograms["payment"]
    assert store.load_histogram(run_id, 1, "new_order", interval=0) == reports[0].txns["new_order"].decoded()
    assert store.load_histogram(run_id, 1, "*", interval=2) == reports[2].histogram()
    assert store.load_histogram(run_id, 7) is None
    with store.engine.connect() as conn:
        merged_rows = conn.execute(sa.select(sa.func.count()).select_from(histograms_table).where(
            histograms_table.c.run_id == run_id, histograms_table.c.interval.is_(None))).scalar()
    assert merged_rows == len(NAMES) + 1


def test_a_crashed_run_keeps_every_finished_interval(store: ResultsStore) -> None:
    run_id = store.start_run("tpcc", db_url="sqlite:///x.db", storage="HDD")
    store.start_step(run_id, 1, users=5, rampup_s=0, duration_s=60)
    rec = IntervalRecorder(NAMES)
    store.add_interval(run_id, interval(rec, 1, 0, seed=1), users=5)
    store.add_interval(run_id, interval(rec, 1, 1, seed=2), users=5)
    del store.engine  # the coordinator dies here: nothing is closed or finished
    again = ResultsStore(store.url)  # the test servers need no password: the shown URL opens it
    data = again.load_run(run_id)
    assert data.run.status == "running" and data.run.ended_at is None
    assert [i.interval for i in data.intervals] == [0, 1]
    assert data.steps[0].summary is None and data.steps[0].users == 5
    store.engine = again.engine  # for the fixture's clean-up


def test_list_runs_and_missing_run(store: ResultsStore) -> None:
    a = store.start_run("tpcc", db_url="sqlite:///a.db", storage="A")
    b = store.start_run("sysbench", db_url="sqlite:///b.db", storage="B")
    store.finish_run(b, "interrupted")
    mine = [r for r in store.list_runs() if r.id in (a, b)]
    assert [(r.id, r.storage, r.status) for r in mine] == [(a, "A", "running"), (b, "B", "interrupted")]
    with pytest.raises(TpsbenchError, match="no run"):
        store.load_run(max(a, b) + 1000)
    with pytest.raises(ValueError):
        store.finish_run(a, "running")


def all_stored_text(engine: sa.Engine) -> str:
    with engine.connect() as conn:
        return "\n".join(repr(tuple(row)) for table in metadata.sorted_tables
                         for row in conn.execute(sa.select(table)))


def test_no_password_is_ever_stored(store: ResultsStore, tmp_path: Path) -> None:
    url = f"postgresql://bob:{SECRET}@dbhost:5433/tpcc?sslmode=require&password={SECRET}"
    run_id = store.start_run(
        "tpcc", db_url=url, storage=f"NVMe via postgresql://u:{SECRET}@h/db",
        config={"url": url, "password": SECRET, "target": {"dsn": f"host=h password={SECRET} user=u"},
                "urls": [f"mysql+pymysql://root:{SECRET}@127.0.0.1/x"]},
        server={"conninfo": f"dbname=tpcc password='{SECRET}'"}, notes=f"password is {SECRET}")
    rec = IntervalRecorder(NAMES)
    rec.add("payment", "errors")
    rec.error("payment", f'connection to "bob:{SECRET}@dbhost" failed, pwd={SECRET}')
    report = rec.take(1, 0, 0.0, 1.0)
    store.add_interval(run_id, report, users=1)
    store.finish_run(run_id, "failed", honesty={"error": f"could not connect with {SECRET}"})
    text = all_stored_text(store.engine)
    assert SECRET not in text
    assert SECRET.lower() not in text.lower()
    if store.url.startswith("sqlite"):
        assert SECRET.encode() not in Path(sa.engine.make_url(store.url).database).read_bytes()
    run = store.load_run(run_id).run
    assert run.db_url == "postgresql://bob@dbhost:5433/tpcc?sslmode=require"
    assert run.config["url"] == "postgresql://bob@dbhost:5433/tpcc?sslmode=require"
    assert "@dbhost" in store.load_run(run_id).errors[0].message  # the rest of the message is kept


def test_safe_url_drops_passwords_in_every_place_a_url_holds_them() -> None:
    assert safe_url(f"mysql+pymysql://root:{SECRET}@127.0.0.1:3306/tpcc") == "mysql+pymysql://root@127.0.0.1:3306/tpcc"
    assert safe_url(f"postgresql://u:{SECRET}@h/db?password={SECRET}&application_name=x") == \
        "postgresql://u@h/db?application_name=x"
    odbc = safe_url(f"mssql+pyodbc:///?odbc_connect=DRIVER%3D%7BX%7D%3BUID%3Dsa%3BPWD%3D{SECRET}%3B")
    assert SECRET not in odbc and "UID" in odbc
    assert safe_url("sqlite:///tpsbench.db") == "sqlite:///tpsbench.db"


@pytest.mark.parametrize("url", [
    "nosuchdialect://x/y",
    "not a url at all",
    "sqlite:////no/such/folder/at/all/results.db",
    f"postgresql://bob:{SECRET}@127.0.0.1:1/results",
])
def test_a_url_that_cannot_be_opened_is_refused_in_one_line(url: str) -> None:
    with pytest.raises(TpsbenchError) as info:
        ResultsStore(url)
    message = str(info.value)
    assert message.startswith("results store ") and "cannot open" in message
    assert "\n" not in message and SECRET not in message


def test_default_url_is_a_file_in_the_current_folder_or_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TPSBENCH_RESULTS", raising=False)
    monkeypatch.chdir(tmp_path)
    ResultsStore().start_run("tpcc", db_url="sqlite:///t.db")
    assert (tmp_path / "tpsbench-results.db").exists()
    other = tmp_path / "elsewhere.db"
    monkeypatch.setenv("TPSBENCH_RESULTS", f"sqlite:///{other}")
    assert ResultsStore().list_runs() == []
    assert other.exists()


def test_step_without_start_step_and_histograms_given_as_bytes(store: ResultsStore) -> None:
    run_id = store.start_run("tpcc", db_url="sqlite:///t.db")
    rec = IntervalRecorder(NAMES)
    report = interval(rec, 3, 0, seed=9)
    summary = SteadySummary.from_reports([report], users=50)
    hist = LatencyHistogram()
    hist.record_many(np.array([123, 456]))
    store.finish_step(run_id, 3, summary, {"*": hist.encode()})
    (step,) = store.load_run(run_id).steps
    assert (step.step, step.users, step.rampup_s, step.summary.tps) == (3, 50, None, summary.tps)
    assert store.load_histogram(run_id, 3) == hist


# -- the layout version ---------------------------------------------------------------------------
def test_a_store_from_before_versions_gains_the_new_tables_and_keeps_its_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    new = (observations_table, store_info_table, campaigns_table, marker_table)
    metadata.create_all(engine, tables=[t for t in metadata.sorted_tables if t not in new])  # layout 1
    with engine.begin() as conn:
        conn.execute(runs_table.insert().values(workload="tpcc", started_at=sa.func.current_timestamp(),
                                                status="completed", storage="old disk"))
    reader = ResultsStore(url, create=False)  # a reader reads it as it is, and writes nothing
    assert [r.storage for r in reader.list_runs()] == ["old disk"]
    assert not {t.name for t in new} & set(sa.inspect(engine).get_table_names())
    store = ResultsStore(url)
    assert [r.storage for r in store.list_runs()] == ["old disk"]
    assert {t.name for t in new} <= set(sa.inspect(engine).get_table_names())
    with engine.connect() as conn:
        assert conn.execute(sa.select(store_info_table.c.value)).scalar_one() == str(SCHEMA_VERSION)


def test_a_store_written_by_a_newer_tpsbench_is_refused_in_one_line_and_left_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    ResultsStore(url)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(store_info_table.update().values(value=str(SCHEMA_VERSION + 1)))
    with pytest.raises(TpsbenchError) as raised:
        ResultsStore(url)
    assert "newer tpsbench" in str(raised.value) and "\n" not in str(raised.value)
    with engine.connect() as conn:
        assert conn.execute(sa.select(store_info_table.c.value)).scalar_one() == str(SCHEMA_VERSION + 1)
