"""Readers and what a store may hold, through the real CLI: a malformed stored row is
reported and the rest still listed; run ids beyond what a store holds are refused in one
line; the store is the same bytes after every reader."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_overwrite_refusals import digest, here, record, refused, tpsbench  # noqa: F401 - fixtures

TOO_BIG = str(2**64)


@pytest.fixture(scope="module")
def recorded(built_tpcc_sqlite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of a step each (:func:`record`): what a store holds is all these readers need."""
    return record(built_tpcc_sqlite, tmp_path_factory.mktemp("recorded"), "1")


@pytest.mark.parametrize(("column", "value", "said"), [
    ("config", "{not json", "its config is not valid JSON: '{not json'"),
    ("started_at", "yesterday", "its started_at is not a valid time: 'yesterday'"),
])
def test_a_malformed_run_is_reported_and_the_others_still_listed(here: Path, column: str, value: str,  # noqa: F811 - the fixture imported above
                                                                  said: str) -> None:
    with sqlite3.connect(here / "results.db") as conn:
        conn.execute(f"UPDATE runs SET {column} = ? WHERE id = 1", (value,))
    conn.close()
    before = digest(here / "results.db")
    listed = tpsbench("runs", "--results", "sqlite:///results.db", cwd=here)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert "disk B" in listed.stdout and "disk A" not in listed.stdout
    assert listed.stderr.strip() == f"WARNING: run 1 cannot be read, left out: {said}"
    refused(tpsbench("report", "1", "--results", "sqlite:///results.db", cwd=here), f"run 1 cannot be read: {said}")
    assert tpsbench("report", "2", "--results", "sqlite:///results.db", cwd=here).returncode == 0
    assert digest(here / "results.db") == before


@pytest.mark.parametrize("command", [["report", TOO_BIG], ["compare", "1", TOO_BIG], ["plan", TOO_BIG]])
def test_a_run_id_beyond_what_a_store_holds_is_refused_in_one_line(here: Path, command: list[str]) -> None:  # noqa: F811 - the fixture imported above
    before = digest(here / "results.db")
    refused(tpsbench(*command, "--results", "sqlite:///results.db", cwd=here),
            f"run id {TOO_BIG} is not one a results store holds (1 to 9,223,372,036,854,775,807)")
    assert digest(here / "results.db") == before


@pytest.mark.parametrize(("change", "command", "said"), [
    (None, ["compare", "1"], "compare needs two configurations or more, got one (run 1)"),
    ("UPDATE runs SET workload = 'sysbench' WHERE id = 2", ["compare", "1", "2"],
     "runs 1 and 2 ran different workloads (tpcc, sysbench)"),
    ("UPDATE runs SET config = json_set(config, '$.scale', 10) WHERE id = 2", ["compare", "1", "2"],
     "runs 1 and 2 ran tpcc at different scales (1, 10)"),
])
def test_compare_refuses_what_no_ratio_can_be_read_from(here: Path, change: str | None, command: list[str],  # noqa: F811 - the fixture imported above
                                                        said: str) -> None:
    if change is not None:
        with sqlite3.connect(here / "results.db") as conn:
            conn.execute(change)
        conn.close()
    before = digest(here / "results.db")
    refused(tpsbench(*command, "--results", "sqlite:///results.db", cwd=here), said)
    assert digest(here / "results.db") == before
