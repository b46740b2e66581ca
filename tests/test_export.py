"""The JSON export: every stored figure, exactly, under a layout its schema checks."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_of

from tpsbench.commands.run import RunConfig, run
from tpsbench.measure.summary import LatencyStats
from tpsbench.report.export import SCHEMA, json_schema, load_histograms, to_json
from tpsbench.results.records import (
    Run,
    RunData,
    StoredError,
    StoredInterval,
    StoredObservation,
)
from tpsbench.results.schema import PROBLEM
from tpsbench.results.store import ResultsStore

SECRET = "s3cretPW"


def record(folder: Path, built: Path, *storages: str) -> tuple[ResultsStore, list[RunData]]:
    """One short TPC-C run per storage label on a copy of the SQLite database ``built`` (the
    session's scale 1 build), recorded in a results store in ``folder``; the notes name a
    password (SQLite's URLs cannot carry one)."""
    url = copy_of(built, folder)
    results = f"sqlite:///{folder / 'results.db'}"
    ids = [run(RunConfig("tpcc", url, users=[1, 2], rampup_s=0.5, duration_s=2.0, interval_s=0.5, results_url=results,
                         options={"think": "off"}, storage=storage, notes=f"client password={SECRET}"),
               live=None).run_id
           for storage in storages]
    store = ResultsStore(results, create=False)
    return store, [store.load_run(i) for i in ids]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, built_tpcc_sqlite: Path) -> tuple[ResultsStore, RunData]:
    store, (data,) = record(tmp_path_factory.mktemp("export"), built_tpcc_sqlite, "A")
    return store, data


def conforms(doc: dict[str, Any]) -> list[str]:
    """What is wrong with ``doc`` by the schema: all of it with jsonschema, else the keys
    each object must have and may have, for the objects of the layout."""
    schema = json_schema()
    try:
        import jsonschema
    except ImportError:
        defs = schema["$defs"]
        wrong = []

        def keys(obj: dict[str, Any], spec: dict[str, Any], where: str) -> None:
            missing, extra = set(spec["required"]) - set(obj), set(obj) - set(spec["properties"])
            if missing:
                wrong.append(f"{where}: missing {sorted(missing)}")
            if extra:
                wrong.append(f"{where}: unknown {sorted(extra)}")

        keys(doc, schema, "document")
        for r in doc.get("runs", []):
            keys(r, defs["run"], f"run {r.get('id')}")
            for s in r.get("steps", []):
                keys(s, defs["step"], f"step {s.get('step')}")
                if s.get("summary") is not None:
                    keys(s["summary"], defs["summary"], "summary")
                for i in s.get("intervals", []):
                    keys(i, defs["interval"], "interval")
        return wrong
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.mark.slow
def test_json_of_a_recorded_run_carries_the_stored_numbers_exactly(recorded: tuple[ResultsStore, RunData]) -> None:
    _, data = recorded
    doc = json.loads(to_json([data]))
    assert doc["schema"] == SCHEMA == "tpsbench-report/2"
    (r,) = doc["runs"]
    assert (r["id"], r["status"], r["storage"], r["seed"], r["workload"]) == (
        data.run.id, "completed", "A", data.run.seed, "tpcc")
    assert r["honesty"] == data.run.honesty and r["honesty"]["match"] is True
    assert r["server"] == data.run.server and r["config"]["users"] == [1, 2]
    assert set(r["config"]["storage"]) == {"described", "detected"} and r["config"]["storage"]["detected"]
    assert datetime.fromisoformat(r["started_at"]) == data.run.started_at and r["started_at"].endswith("Z")
    assert [s["users"] for s in r["steps"]] == [1, 2]
    for step, stored in zip(r["steps"], data.steps):
        s = stored.summary
        assert s is not None
        assert step["summary"]["tps"] == s.tps and step["summary"]["latency"]["p95"] == s.latency.p95
        assert step["summary"]["latency"]["p999"] == s.latency.p999
        assert {n: t["latency"]["p99"] for n, t in step["summary"]["txns"].items()} == {
            n: t.latency.p99 for n, t in s.txns.items()}
        assert {n: t["tpm"] for n, t in step["summary"]["txns"].items()} == s.tpm_by_txn
        assert step["main_metric"]["name"] == "tpmC"
        assert step["main_metric"]["value"] == s.txns["new_order"].commits * 60 / s.seconds
        assert step["readings"] == data.readings(stored.step) and "host_cpu" in step["readings"]
        intervals = [i for i in data.intervals if i.step == stored.step]
        assert [i["commits"] for i in step["intervals"]] == [i.commits for i in intervals]
        assert [i["tps"] for i in step["intervals"]] == [i.tps for i in intervals]
        assert [i["steady"] for i in step["intervals"]] == [i.steady for i in intervals]
        assert [i["readings"] for i in step["intervals"]] == [data.readings(stored.step, i.interval) for i in intervals]
        assert all(i["seconds"] == pytest.approx(0.5, abs=0.1) for i in step["intervals"] if i["steady"])
    exported = {(s["step"], i["interval"], o, n): v for s in r["steps"] for i in s["intervals"]
                for o, figures in i["readings"].items() for n, v in figures.items()}
    exported |= {(s["step"], None, o, n): v for s in r["steps"] for o, figures in s["readings"].items()
                 for n, v in figures.items()}
    assert exported == {(o.step, o.interval, o.observer, o.name): o.value for o in data.observations}


@pytest.mark.slow
def test_json_with_histograms_validates_and_keeps_no_password(recorded: tuple[ResultsStore, RunData]) -> None:
    store, data = recorded
    text = to_json([data], load_histograms(store, [data]))
    assert SECRET not in text
    doc = json.loads(text)
    assert conforms(doc) == []
    step = doc["runs"][0]["steps"][0]
    assert set(step["histograms"]) == {*data.steps[0].summary.txns, "*"}
    hist = store.load_histogram(data.run.id, 1)
    assert hist is not None and step["histograms"]["*"] == hist.encode().decode()
    assert LatencyStats.of(hist).p95 == step["summary"]["latency"]["p95"]


T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def interval(step: int, n: int, commits: int, steady: bool = True) -> StoredInterval:
    t = T0.timestamp() + 10 * n
    return StoredInterval(step=step, interval=n, t_start=t, t_end=t + 10.0, steady=steady, users=8,
                          tps=commits / 10.0, p95_ms=1.0 / 3.0, commits=commits, rollbacks=0, retries=0, errors=1,
                          reconnects=0)


def cut_short_run() -> RunData:
    """A failed run: step 1 has no row (the server was gone before it ended), only its
    intervals, an outage reading, an error and a problem, all quoting a password."""
    url = f"postgresql://bench:{SECRET}@db.example/tpcc"
    return RunData(
        run=Run(id=7, workload="tpcc", started_at=T0, ended_at=None, status="failed", storage="NVMe",
                config={"url": url, "password": SECRET}, db_url=url, honesty=None, notes=f"password={SECRET}"),
        steps=[],
        intervals=[interval(1, 0, 300, steady=False), interval(1, 1, 333)],
        errors=[StoredError(step=1, txn="new_order", count=3, message=f"connection to {url} lost"),
                StoredError(step=1, txn=PROBLEM, count=1, message="2 of 8 users never connected")],
        observations=[StoredObservation(step=1, interval=1, observer="outage", name="down_s", value=0.1 + 0.2)])


def test_a_cut_short_step_is_kept_with_its_intervals_errors_and_problems() -> None:
    doc = json.loads(to_json([cut_short_run()]))
    assert conforms(doc) == []
    (r,) = doc["runs"]
    assert (r["status"], r["ended_at"], r["honesty"], r["label"]) == ("failed", None, None, "NVMe [failed]")
    (step,) = r["steps"]
    assert (step["step"], step["users"], step["summary"], step["main_metric"]) == (1, 8, None, None)
    assert [i["commits"] for i in step["intervals"]] == [300, 333]
    assert step["intervals"][1]["start"] == "2024-05-01T12:00:10.000000Z"
    assert step["intervals"][1]["tps"] == 33.3 and step["intervals"][1]["p95_ms"] == 1.0 / 3.0
    assert step["intervals"][1]["readings"] == {"outage": {"down_s": 0.1 + 0.2}}  # 0.30000000000000004, unrounded
    assert [e["count"] for e in step["errors"]] == [3] and step["problems"] == ["2 of 8 users never connected"]


def test_no_password_reaches_the_json_of_a_stored_run(tmp_path: Path) -> None:
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    url = f"postgresql://bench:{SECRET}@db.example/tpcc"
    run_id = store.start_run("tpcc", db_url=url, storage="SAN", config={"dsn": f"host=db.example password={SECRET}"},
                             notes=f"reached at {url}")
    store.add_problems(run_id, 1, [f"could not connect to {url}: the server is gone"])
    store.finish_run(run_id, "failed", {"match": None, "skipped": f"no step finished on {url}"})
    text = to_json([store.load_run(run_id)])
    assert SECRET not in text
    r = json.loads(text)["runs"][0]
    assert r["db_url"] == "postgresql://bench@db.example/tpcc"
    assert r["steps"][0]["problems"] == ["could not connect to postgresql://bench@db.example/tpcc: the server is gone"]


def test_no_password_reaches_the_json_even_from_records_built_by_hand() -> None:
    text = to_json([cut_short_run()])
    assert SECRET not in text
    r = json.loads(text)["runs"][0]
    assert r["db_url"] == "postgresql://bench@db.example/tpcc" and r["config"]["password"] == "***"


def test_the_schema_is_strict_about_the_layout() -> None:
    doc = json.loads(to_json([cut_short_run()]))
    doc["runs"][0]["steps"][0]["intervals"][0]["tpm"] = 1.0
    del doc["runs"][0]["steps"][0]["problems"]
    wrong = conforms(doc)
    assert len(wrong) == 2 and any("tpm" in w for w in wrong) and any("problems" in w for w in wrong)
