"""replay --as-mix on MariaDB with a client no one here wrote: sysbench oltp_read_write
(4 threads, text statements: --db-ps-mode=disable, as the general log keeps only the
values of those) captured from the general log, its mix run on a second sysbench
database at 1, 8 and 32 users; each step's realised mix of normalised statements (what
the results store counts per transaction name: one per statement) within 1 point of the
captured one (BEGIN and COMMIT left out, the shares over the statements the mix runs).

Why 1 point holds for steps shorter than the two minutes of the target: every user deals a
1000-card deck in the captured proportions (each share off by less than a card, 0.1
point), so a step departs from them only by that and each user's unfinished deck; with
thousands of statements per step that is well under a tenth of a point, whatever the
step's length. The two-minute figures come from bench/replay_sysbench_mix.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import scratch_mysql_database, unavailable, users_that_fit
from test_capture_mysql import SRC, SYSBENCH, capture_sysbench, sysbench

#: one capture at a time per server (the capture lock)
pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.exclusive("mariadb capture")]

KINDS = ("SELECT", "INSERT", "UPDATE", "DELETE")


def realised(results: Path) -> dict[int, dict[str, int]]:
    """Per step, the statements run (committed, rolled back or failed) per transaction name."""
    with sqlite3.connect(results) as conn:
        rows = conn.execute("SELECT step, detail FROM steps ORDER BY step").fetchall()
    return {step: {name: t["commits"] + t["rollbacks"] + t["errors"] for name, t in json.loads(detail)["txns"].items()}
            for step, detail in rows}


def test_sysbench_mix_replayed_at_stepped_loads_keeps_its_proportions(tmp_path: Path):
    if not shutil.which(SYSBENCH):
        unavailable("sysbench", f"no {SYSBENCH}")
    env = dict(os.environ, PYTHONPATH=SRC)
    with scratch_mysql_database() as source, scratch_mysql_database() as copy:
        for url in (source, copy):
            subprocess.run(sysbench(url, "prepare"), check=True, capture_output=True)
        trace = tmp_path / "sb.trace"
        capture_sysbench(source, trace, run_s=6, capture_s=3)
        summary = json.loads(trace.read_text().splitlines()[-2])["summary"]
        kept = [r for r in summary["statements"] if r["statement"].split(" ", 1)[0] in KINDS]
        total = sum(r["count"] for r in kept)
        captured = {r["statement"]: 100 * r["count"] / total for r in kept}
        assert len(captured) == 9 and 50 < captured["SELECT c FROM sbtest1 WHERE id=?"] < 60
        users = [1, 8, users_that_fit(copy, 32, least=16)]
        results = tmp_path / "results.db"
        run = subprocess.run([sys.executable, "-m", "tpsbench", "replay", str(trace), "--as-mix", "--db", copy,
                              "--users", ",".join(map(str, users)), "--rampup", "1s", "--duration", "4s",
                              "--interval", "2s", "--results", f"sqlite:///{results}"],
                             env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        assert "left out: 2 statement(s)" in run.stderr  # BEGIN and COMMIT
    names = {f"s{n:02d}": text for n, text in enumerate(captured, start=1)}  # the summary's order, kept
    steps = realised(results)
    assert sorted(steps) == [1, 2, 3]
    for step, done in steps.items():
        run_total = sum(done.values())
        assert run_total > 1000, (step, done)
        shares = {names[name[:3]]: 100 * count / run_total for name, count in done.items()}
        assert set(shares) == set(captured)
        worst = max(abs(shares[t] - captured[t]) for t in captured)
        assert worst < 1.0, (step, users[step - 1], worst, shares, captured)
