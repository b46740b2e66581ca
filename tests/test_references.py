"""Published reference tables: stored from a file, set beside runs, refused in one line when wrong."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import cli_in_process

from tpsbench.results.schema import SCHEMA_VERSION, reference_rows_table, store_info_table

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
PERC = EXAMPLES / "perc-h800-h810.toml"
SSHD = EXAMPLES / "sshd-vs-10k-sas.toml"
GOOD_CSV = ("label,users,tps,response_s,iops,source\n"
            "H800,300,73.8,0.63,6659,a review\n"
            "H810,300,119.9,0.41,\"14,829\",\n")


def tps(*args: str, cwd: Path) -> tuple[int, str, str]:
    done = cli_in_process(*args, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def test_the_published_controller_sentence_from_the_reference_rows_alone(tmp_path: Path) -> None:
    results = f"sqlite:///{tmp_path / 'results.db'}"
    code, out, err = tps("reference", "add", str(PERC), "--name", "perc", "--results", results, cwd=tmp_path)
    assert code == 0 and "stored reference 'perc': 2 row(s), 2 configuration(s)" in out, err
    code, out, err = tps("compare", "--reference", "perc", "--results", results, cwd=tmp_path)
    assert code == 0, err
    # the review's own sentence, worked out from the two stored rows (no CI: nothing was measured here)
    assert ("PERC H810 + Toshiba 15K [published] vs PERC H800 + Seagate 15K [published] at 300 users: "
            "+62% TPS, +123% IOPS, -35% avg latency") in out
    assert "published, not measured here; source: Public lab review of PERC" in out
    code, out, _ = tps("reference", "list", "--results", results, cwd=tmp_path)
    assert out.startswith("perc\t2 row(s)\tPublic lab review")


def test_a_csv_reference_and_a_toml_one_beside_each_other_in_every_format(tmp_path: Path) -> None:
    results = f"sqlite:///{tmp_path / 'results.db'}"
    (tmp_path / "perc.csv").write_text(GOOD_CSV)
    for file, name in ((tmp_path / "perc.csv", "csv"), (SSHD, "sshd")):
        assert tps("reference", "add", str(file), "--name", name, "--results", results, cwd=tmp_path)[0] == 0
    code, out, err = tps("report", "--reference", "csv", "--reference", "sshd", "--format", "markdown",
                         "--results", results, cwd=tmp_path)
    assert code == 0, err
    assert "| H810 [published] | TPS |  |  | 119.9 |" in out and "|  | IOPS |  |  | 14829 |" in out
    assert "| RAID 8x SSHD (one configuration) [published] | TPS |  |  |  |" in out  # latency only, as published
    assert "[published] reference 'csv' (H800, H810): published, not measured here; source: a review" in out
    assert "note: 10K SAS RAID 10 pool: peak 1,267 TPS (thread count not published)" in out  # the TOML's note
    code, out, err = tps("report", "--reference", "csv", "--format", "html", "--results", results, cwd=tmp_path)
    assert code == 0 and "H810 [published]" in out and "not measured here" in out, err
    code, _, err = tps("report", "--reference", "csv", "--format", "json", "--results", results, cwd=tmp_path)
    assert code == 2 and err.count("\n") == 1 and "--reference is not for --format json" in err
    code, out, _ = tps("reference", "remove", "csv", "--results", results, cwd=tmp_path)
    assert code == 0 and "removed reference 'csv' (2 row(s))" in out
    assert tps("reference", "list", "--results", results, cwd=tmp_path)[1].startswith("sshd\t2 row(s)")


@pytest.mark.slow
def test_a_reference_beside_a_measured_run(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    from conftest import copy_of

    from tpsbench.commands.run import RunConfig, run

    results = f"sqlite:///{tmp_path / 'results.db'}"
    record = run(RunConfig(workload="tpcc", url=copy_of(built_tpcc_sqlite, tmp_path), users=[1], rampup_s=0,
                           duration_s=2, interval_s=1, storage="local SSD", results_url=results))
    assert tps("reference", "add", str(PERC), "--name", "perc", "--results", results, cwd=tmp_path)[0] == 0
    code, out, err = tps("compare", str(record.run_id), "--reference", "perc", "--results", results, cwd=tmp_path)
    assert code == 0, err
    assert "PERC H810 + Toshiba 15K [published] vs local SSD: no user load in common" in out
    code, out, err = tps("report", str(record.run_id), "--reference", "perc", "--format", "markdown",
                         "--results", results, cwd=tmp_path)
    assert code == 0 and "| local SSD | TPS |" in out and "| PERC H800 + Seagate 15K [published] | TPS |" in out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(("text", "said"), [
    ("label,users,tps,iops,source\nH800,300,73.8,6659,x\n", "missing column(s) response_s"),
    ("label,users,tps,response_s,source\nH800,300,fast,0.6,x\n", "tps must be a number of 0 or more, not 'fast'"),
    ("label,users,tps,response_s,source\nH800,300,nan,0.6,x\n", "line 2: tps must be a number"),
    ("label,users,tps,response_s,source\nH800,3.5,70,0.6,x\n", "line 2: users must be a whole number"),
    ("label,users,tps,response_s,source\nH800,300,,,x\n", "line 2: neither tps nor response_s is given"),
    ("label,users,tps,response_s,source\nH800,300,70,0.6,\n", "line 2: no source"),
    ("label,users,tps,response_s,source\nH800,300,70,0.6,x\nH800,300,71,0.6,x\n", "'H800' at 300 users is given twice"),
    ("label,users,tps,response_s,source,colour\nH800,300,70,0.6,x,red\n", "unknown column(s) colour"),
])
def test_a_bad_reference_file_is_one_line_and_changes_no_store(tmp_path: Path, text: str, said: str) -> None:
    store = tmp_path / "results.db"
    results = f"sqlite:///{store}"
    assert tps("reference", "add", str(PERC), "--name", "perc", "--results", results, cwd=tmp_path)[0] == 0
    before = digest(store)
    (tmp_path / "bad.csv").write_text(text)
    code, out, err = tps("reference", "add", str(tmp_path / "bad.csv"), "--name", "bad", "--results", results,
                         cwd=tmp_path)
    assert code == 2 and out == "" and err.count("\n") == 1 and said in err, err
    assert digest(store) == before


def test_a_taken_name_or_an_unknown_one_is_one_line_and_changes_no_store(tmp_path: Path) -> None:
    store = tmp_path / "results.db"
    results = f"sqlite:///{store}"
    assert tps("reference", "add", str(PERC), "--name", "perc", "--results", results, cwd=tmp_path)[0] == 0
    before = digest(store)
    for args, said in [
        (("reference", "add", str(SSHD), "--name", "perc"), "has a reference 'perc' already"),
        (("reference", "remove", "nope"), "has no reference 'nope'; references: 'perc'"),
        (("compare", "--reference", "nope"), "has no reference 'nope'"),
        (("report", "--reference", "nope"), "has no reference 'nope'"),
        (("reference", "add", str(tmp_path / "missing.toml"), "--name", "x"), "missing.toml: no such file"),
        (("reference", "add", str(PERC), "--name", ""), "a reference name is 1 to 200 characters"),
    ]:
        code, out, err = tps(*args, "--results", results, cwd=tmp_path)
        assert code == 2 and err.count("\n") == 1 and said in err, (args, err)
    assert digest(store) == before


def test_a_store_of_the_previous_layout_reads_as_having_none_and_gains_the_table_on_write(tmp_path: Path) -> None:
    store = tmp_path / "results.db"
    results = f"sqlite:///{store}"
    assert tps("reference", "add", str(PERC), "--name", "perc", "--results", results, cwd=tmp_path)[0] == 0
    engine = sa.create_engine(results)
    with engine.begin() as conn:  # back to layout 4: no reference table
        reference_rows_table.drop(conn)
        conn.execute(store_info_table.update().values(value=str(SCHEMA_VERSION - 1)))
    assert tps("reference", "list", "--results", results, cwd=tmp_path)[1].startswith("no references")
    assert tps("reference", "add", str(PERC), "--name", "perc", "--results", results, cwd=tmp_path)[0] == 0
    with engine.connect() as conn:
        assert conn.execute(sa.select(store_info_table.c.value)).scalar_one() == str(SCHEMA_VERSION)
        assert conn.execute(sa.select(sa.func.count()).select_from(reference_rows_table)).scalar_one() == 2
