"""A run in which not one transaction went through ends 'failed', exits non-zero and says
why, through the real CLI; the table it failed on is as built."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_overwrite_refusals import tpsbench

WORKLOAD = """description = "every transaction fails"

[[table]]
name = "ff_t"
rows = 10
scaled = false
create = "CREATE TABLE ff_t (a INTEGER NOT NULL PRIMARY KEY, v INTEGER NOT NULL CHECK (v >= 0))"
[table.columns]
a = {{ gen = "sequence" }}
v = 1

[[transaction]]
name = "doomed"
weight = 1
statements = ["{statement}"]
"""


@pytest.mark.parametrize(("statement", "error"), [
    ("INSERT INTO ff_t (a, v) VALUES (1, 1)", "UNIQUE constraint failed: ff_t.a"),
    ("UPDATE ff_t SET v = -1 WHERE a = 2", "CHECK constraint failed"),
])
@pytest.mark.slow
def test_a_run_whose_every_transaction_failed_ends_failed_and_says_why(tmp_path: Path, statement: str,
                                                                      error: str) -> None:
    (tmp_path / "w.toml").write_text(WORKLOAD.format(statement=statement))
    db = f"sqlite:///{tmp_path / 'w.db'}"
    assert tpsbench("build", "custom", "--file", "w.toml", "--db", db, cwd=tmp_path).returncode == 0

    def rows() -> list[tuple[int, int]]:
        with sqlite3.connect(tmp_path / "w.db") as conn:
            return conn.execute("SELECT a, v FROM ff_t ORDER BY a").fetchall()

    built = rows()
    done = tpsbench("run", "custom", "--file", "w.toml", "--db", db, "--results", "sqlite:///r.db", "--users", "1",
                    "--rampup", "0s", "--duration", "1s", "--interval", "0.5s", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr + done.stdout
    said = [line for line in done.stderr.splitlines() if "FAILED" in line]
    assert len(said) == 1 and said[0].startswith("run 1 FAILED: every transaction failed (") and error in said[0], \
        done.stderr
    assert done.stdout.splitlines()[-1] == "run 1: failed; honesty check matches"
    assert rows() == built
    with sqlite3.connect(tmp_path / "r.db") as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("failed",)]
