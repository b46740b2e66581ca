"""Result bundles through the real CLI: ``export`` writes one file that ``report``,
``compare``, ``plan`` and ``serve`` read as it is (never writing it), ``import`` adds its
runs to SQLite and MariaDB stores under new ids with the same report, no password
travels, and every bad input is one line that changes no store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_in_process, copy_of, scratch_mysql_database, scratch_pg_database
from test_campaign import write_campaign

from tpsbench.results.bundle import bundle_runs
from tpsbench.results.store import ResultsStore

SECRET = "secretpw"
ENV_FREE = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}


def tpsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in this process, but for an export that writes (it asks git for the revision)."""
    if args[0] == "export" and "-o" in args:
        return subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=ENV_FREE, capture_output=True,
                              text=True, timeout=300, check=False)
    return cli_in_process(*args, cwd=cwd)


def one_line_refusal(done: subprocess.CompletedProcess[str], needle: str) -> None:
    assert done.returncode != 0, done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("tpsbench: error: "), done.stderr
    assert needle in done.stderr, done.stderr


def digest_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- a quick store, written through the store's own API -----------------------------------

@pytest.fixture(scope="module")
def quick_made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``results.db``: a campaign of two runs with a problem, readings and an
    honesty check each; and ``quick.tpsbench``, the campaign exported."""
    tmp_path = tmp_path_factory.mktemp("quick")
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    campaign = store.start_campaign("quick", {"workload": "tpcc"})
    for n, label in enumerate(("quick-A", "quick-B")):
        run = store.start_run("tpcc", db_url=f"postgresql://postgres:{SECRET}@127.0.0.1/db{n}", storage=label,
                              config={"campaign": campaign, "campaign_target": n, "users": [1]}, seed=7 + n,
                              server={"shared_buffers": "128MB"})
        store.add_problems(run, 1, [f"worker lost connecting to postgresql://postgres:{SECRET}@127.0.0.1/db{n}"])
        store.add_readings(run, 1, -1, {"outage": {"seconds": 1.5}})
        store.finish_run(run, "completed", honesty={"match": True})
    store.finish_campaign(campaign, "completed")
    done = tpsbench("export", "--campaign", str(campaign), "-o", "quick.tpsbench", "--results", "results.db",
                    cwd=tmp_path)
    assert done.returncode == 0 and "run(s) 1, 2" in done.stdout, done.stderr
    return tmp_path


@pytest.fixture
def quick(quick_made: Path, tmp_path: Path) -> Path:
    """A copy of :func:`quick_made`'s folder, for this test alone."""
    shutil.copytree(quick_made, tmp_path, dirs_exist_ok=True)
    return tmp_path


def test_the_bundle_holds_the_runs_as_stored_with_a_manifest(quick: Path) -> None:
    stored = ResultsStore(f"sqlite:///{quick / 'results.db'}", create=False).list_runs()
    assert [(r.id, r.storage, r.seed, r.config, r.server) for r in bundle_runs(str(quick / "quick.tpsbench"))] == \
        [(r.id, r.storage, r.seed, r.config, r.server) for r in stored]
    assert SECRET.encode() not in (quick / "quick.tpsbench").read_bytes()
    with sqlite3.connect(quick / "quick.tpsbench") as db:
        manifest = dict(db.execute("SELECT name, value FROM tpsbench_bundle"))
        assert db.execute("SELECT count(*) FROM errors").fetchone() == (2,)
        assert db.execute("SELECT count(*) FROM observations").fetchone() == (2,)
    assert (manifest["format"], manifest["format_version"], json.loads(manifest["runs"]),
            json.loads(manifest["campaigns"])) == ("tpsbench-bundle", "1", [1, 2], [1])
    assert {name for name in manifest if name.startswith("digest.")} == {
        f"digest.{t}" for t in ("campaigns", "runs", "steps", "intervals", "histograms", "errors", "observations")}


def test_a_password_the_store_held_does_not_travel(tmp_path: Path) -> None:
    """A store written by hand (or an older tool) may hold what tpsbench never stores."""
    results = tmp_path / "results.db"
    store = ResultsStore(f"sqlite:///{results}")
    run = store.start_run("tpcc", db_url="sqlite:///x.db", storage="A")
    with sqlite3.connect(results) as db:
        db.execute("UPDATE runs SET db_url = ?, notes = ?, config = ? WHERE id = ?",
                   (f"postgresql://app:{SECRET}@db1/tpcc", f"password={SECRET}",
                    json.dumps({"target": f"postgresql://app:{SECRET}@db1/tpcc", "password": SECRET}), run))
    assert SECRET.encode() in results.read_bytes()
    done = tpsbench("export", str(run), "-o", "b.tpsbench", "--results", str(results), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert SECRET.encode() not in (tmp_path / "b.tpsbench").read_bytes()
    (exported,) = bundle_runs(str(tmp_path / "b.tpsbench"))
    assert exported.db_url == "postgresql://app@db1/tpcc" and exported.config["target"] == "postgresql://app@db1/tpcc"


def test_import_numbers_the_runs_anew_and_keeps_where_they_came_from(quick: Path) -> None:
    target = ResultsStore(f"sqlite:///{quick / 'other.db'}")
    target.start_run("tpcc", db_url="sqlite:///x.db", storage="already here")
    done = tpsbench("import", "quick.tpsbench", "--results", "other.db", cwd=quick)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["run 1 of quick.tpsbench is run 2", "run 2 of quick.tpsbench is run 3",
                                        "campaign 1 of quick.tpsbench is campaign 1"]
    imported = [r for r in target.list_runs() if r.id > 1]
    digest = imported[0].config["imported_from"]["bundle"]
    assert [(r.storage, r.config["campaign"], r.config["imported_from"]["run"],
             r.config["imported_from"]["campaign"]) for r in imported] == [("quick-A", 1, 1, 1), ("quick-B", 1, 2, 1)]
    assert len(digest) == 64 and imported[0].config["imported_from"]["host"]
    assert [r.id for r in target.campaign_runs(1)] == [2, 3]


def test_readers_read_a_bundle_and_never_write_it(quick: Path) -> None:
    bundle = quick / "quick.tpsbench"
    bundle.chmod(0o444)
    before = digest_of(bundle)
    for args in (["report", "--campaign", "1", "--format", "json"], ["compare", "1", "2"], ["runs"]):
        done = tpsbench(*args, "--results", str(bundle), cwd=quick)
        assert done.returncode == 0 and "quick-A" in done.stdout, (args, done.stderr)
    # these runs have no steps to fit: plan read them, and says so of run 1
    one_line_refusal(tpsbench("plan", "--campaign", "1", "--results", str(bundle), cwd=quick), "run 1: USL fit")
    assert digest_of(bundle) == before and sorted(p.name for p in quick.iterdir()) == ["quick.tpsbench",
                                                                                        "results.db"]


def test_writers_are_refused_a_bundle(quick: Path, built_tpcc_sqlite: Path) -> None:
    before = digest_of(quick / "quick.tpsbench")
    tpcc = copy_of(built_tpcc_sqlite, quick)
    one_line_refusal(tpsbench("import", "quick.tpsbench", "--results", "quick.tpsbench", cwd=quick),
                     "is a result bundle, which is never written")
    one_line_refusal(tpsbench("run", "tpcc", "--db", tpcc, "--duration", "1s", "--results", "quick.tpsbench",
                              cwd=quick), "is a result bundle, which is never written")
    assert digest_of(quick / "quick.tpsbench") == before


def _changed(source: Path, folder: Path, old: bytes, new: bytes) -> Path:
    data = source.read_bytes()
    assert data.count(old) >= 1 and len(old) == len(new)
    changed = folder / "changed.tpsbench"
    changed.write_bytes(data.replace(old, new, 1))
    return changed


def _newer(source: Path, folder: Path) -> Path:
    newer = folder / "newer.tpsbench"
    newer.write_bytes(source.read_bytes())
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE tpsbench_bundle SET value = '2' WHERE name = 'format_version'")
    return newer


@pytest.mark.parametrize(("make", "needle"), [
    (lambda b, d: _changed(b, d, b"quick-A", b"quick-C"), "does not match its manifest: the runs table's digest"),
    (lambda b, d: _changed(b, d, b"shared_buffers", b"shared_buffert"), "the runs table's digest differs"),
    (lambda b, d: _newer(b, d), "is a bundle of a newer format (version 2; this tpsbench reads up to 1)"),
    (lambda b, d: (d / "cut.tpsbench").write_bytes(b.read_bytes()[:8192]) and d / "cut.tpsbench", "is truncated"),
    (lambda b, d: (d / "notes.txt").write_text("not a bundle\n") and d / "notes.txt", "not a SQLite file"),
    (lambda b, d: d / "results.db", "has no tpsbench_bundle manifest (a results store"),
    (lambda b, d: d / "missing.tpsbench", "cannot read"),
])
def test_a_bad_bundle_is_one_line_and_changes_no_store(quick: Path, make: Any, needle: str) -> None:
    bad = make(quick / "quick.tpsbench", quick)
    one_line_refusal(tpsbench("import", str(bad), "--results", "sqlite:///new.db", cwd=quick), needle)
    assert not (quick / "new.db").exists()
    existing = ResultsStore(f"sqlite:///{quick / 'existing.db'}")
    existing.start_run("tpcc", db_url="sqlite:///x.db")
    before = digest_of(quick / "existing.db")
    one_line_refusal(tpsbench("import", str(bad), "--results", "existing.db", cwd=quick), needle)
    assert digest_of(quick / "existing.db") == before


def test_an_import_is_refused_a_second_time(quick: Path) -> None:
    assert tpsbench("import", "quick.tpsbench", "--results", "sqlite:///other.db", cwd=quick).returncode == 0
    before = digest_of(quick / "other.db")
    one_line_refusal(tpsbench("import", "quick.tpsbench", "--results", "other.db", cwd=quick),
                     "other.db already, as run(s) 1, 2: nothing imported")
    assert digest_of(quick / "other.db") == before


@pytest.mark.parametrize(("args", "needle"), [
    (["export", "3", "-o", "x.tpsbench"], "has no run 3"),
    (["export", "1", "4", "-o", "x.tpsbench"], "has no run 4"),
    (["export", "--campaign", "9", "-o", "x.tpsbench"], "has no runs of campaign 9"),
    (["export", "-o", "x.tpsbench"], "name the runs to export"),
    (["export", "1", "-o", "quick.tpsbench"], "refusing to write over quick.tpsbench"),
    (["export", "1", "-o", "nowhere/x.tpsbench"], "no folder"),
])
def test_bad_export_input_is_one_line_and_writes_nothing(quick: Path, args: list[str], needle: str) -> None:
    before = {p.name: digest_of(p) for p in quick.iterdir()}
    one_line_refusal(tpsbench(*args, "--results", "results.db", cwd=quick), needle)
    assert {p.name: digest_of(p) for p in quick.iterdir()} == before


# -- a real PostgreSQL campaign of two targets --------------------------------------------

@pytest.fixture(scope="module")
def pg_campaign(tmp_path_factory: pytest.TempPathFactory, built_tpcc_pg: str) -> Iterator[Path]:
    """A folder whose ``tpsbench-results.db`` holds campaign 1: two PostgreSQL targets
    (copies of the session's build, which the campaign then runs on as they are), the first
    named with a password (trust authentication accepts any), exported to ``campaign.tpsbench``."""
    folder = tmp_path_factory.mktemp("bundles")
    with scratch_pg_database(built_tpcc_pg) as first, scratch_pg_database(built_tpcc_pg) as second:
        with_password = first.replace("postgres@", f"postgres:{SECRET}@")
        assert SECRET in with_password
        write_campaign(folder, {"RAID-A": with_password, "RAID-B": second}, duration="1s")
        done = subprocess.run([sys.executable, "-m", "tpsbench", "campaign", "campaign.toml"], cwd=folder,
                              env=ENV_FREE, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
    exported = tpsbench("export", "--campaign", "1", "-o", "campaign.tpsbench", cwd=folder)
    assert exported.returncode == 0, exported.stderr
    yield folder


def _report(folder: Path, results: str, *args: str) -> list[dict[str, Any]]:
    done = tpsbench("report", *args, "--format", "json", "--results", results, cwd=folder)
    assert done.returncode == 0, done.stderr
    runs: list[dict[str, Any]] = json.loads(done.stdout)["runs"]
    return runs


def _without_ids(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for run in runs:
        run.pop("id")
        run["config"].pop("imported_from", None)
        run["config"].pop("campaign")
    return runs


@pytest.mark.slow
def test_a_campaign_round_trips_through_sqlite_and_mariadb_stores(pg_campaign: Path) -> None:
    original = _report(pg_campaign, "tpsbench-results.db", "--campaign", "1")
    assert [r["storage"] for r in original] == ["RAID-A", "RAID-B"]
    assert all(len(r["steps"]) == 2 and r["honesty"] and r["server"] and r["steps"][0]["summary"]
               for r in original)
    assert _report(pg_campaign, "campaign.tpsbench", "--campaign", "1") == original  # read as it is, ids and all
    with scratch_mysql_database() as mariadb:
        for store in (f"sqlite:///{pg_campaign / 'empty.db'}", mariadb):
            ResultsStore(store).start_campaign("already here", {})  # the import's campaign is numbered after it
            done = tpsbench("import", "campaign.tpsbench", "--results", store, cwd=pg_campaign)
            assert done.returncode == 0 and "campaign 1 of campaign.tpsbench is campaign 2" in done.stdout, \
                done.stderr
            imported = _report(pg_campaign, store, "--campaign", "2")
            assert [r["config"]["imported_from"]["run"] for r in imported] == [r["id"] for r in original]
            assert _without_ids(imported) == _without_ids(json.loads(json.dumps(original))), store


@pytest.mark.slow
def test_the_password_of_a_target_url_is_nowhere_in_the_bundle(pg_campaign: Path) -> None:
    assert SECRET in (pg_campaign / "campaign.toml").read_text()
    data = (pg_campaign / "campaign.tpsbench").read_bytes()
    assert b"postgres@127.0.0.1" in data and SECRET.encode() not in data


@pytest.mark.slow
def test_one_byte_changed_in_a_real_bundle_is_refused(pg_campaign: Path, tmp_path: Path) -> None:
    data = (pg_campaign / "campaign.tpsbench").read_bytes()
    at = data.index(b"RAID-B")
    changed = tmp_path / "changed.tpsbench"
    changed.write_bytes(data[:at] + b"R" + b"b" + data[at + 2:])  # one byte: RAID-B -> RbID-B
    one_line_refusal(tpsbench("import", str(changed), "--results", "sqlite:///new.db", cwd=tmp_path),
                     "does not match its manifest")
    assert not (tmp_path / "new.db").exists()


@pytest.mark.slow
def test_serve_shows_a_bundle_and_leaves_it_as_it_was(pg_campaign: Path) -> None:
    pytest.importorskip("uvicorn")
    bundle = pg_campaign / "campaign.tpsbench"
    before = digest_of(bundle)
    server = subprocess.Popen([sys.executable, "-m", "tpsbench", "serve", "--results", str(bundle), "--port", "0"],
                              cwd=pg_campaign, env=ENV_FREE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert server.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while "http://" not in line:
            line = server.stderr.readline()
            assert line or server.poll() is None, "tpsbench serve ended"
            assert time.monotonic() < deadline
        base = line[line.index("http://"):].split()[0].rstrip("/")
        for page in ("/report/campaign/1", "/report/run/2"):
            with urllib.request.urlopen(base + page, timeout=60) as answer:
                assert answer.status == 200 and "RAID-B" in answer.read().decode()
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert digest_of(bundle) == before


def test_a_run_imported_then_exported_keeps_both_provenances(quick: Path) -> None:
    assert tpsbench("import", "quick.tpsbench", "--results", "sqlite:///second.db", cwd=quick).returncode == 0
    again = tpsbench("export", "2", "-o", "again.tpsbench", "--results", "second.db", cwd=quick)
    assert again.returncode == 0, again.stderr
    assert tpsbench("import", "again.tpsbench", "--results", "sqlite:///third.db", cwd=quick).returncode == 0
    (run,) = ResultsStore(f"sqlite:///{quick / 'third.db'}", create=False).list_runs()
    provenance = run.config["imported_from"]
    assert (run.storage, provenance["run"], provenance["earlier"]["run"]) == ("quick-B", 2, 2)
    assert provenance["bundle"] != provenance["earlier"]["bundle"] and run.config["campaign"] == 1
