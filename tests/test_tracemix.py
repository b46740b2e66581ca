"""replay --as-mix, the quick lane: a trace's summary made a workload (tracemix) - its
weights, placeholders and samples of captured values; the refusals before anything is
stored; the confinement to the trace's tables; and a short run of a mix on SQLite whose
realised mix tracks the captured one.

The MariaDB acceptance (sysbench captured, its mix at 1/8/32 users) is
tests/test_capture_mysql_mix.py (slow).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_in_process

from tpsbench.core.errors import TpsbenchError
from tpsbench.workloads.custom import confine
from tpsbench.workloads.replay.summary import summarise
from tpsbench.workloads.replay.trace import Statement, Trace, TraceSession, write_trace
from tpsbench.workloads.tracemix.mix import DECK, deck_cards, mix_of

SRC = str(Path(__file__).resolve().parents[1] / "src")


def shop_trace(dialect: str = "sqlite", sessions: int = 2) -> Trace:
    """Per session 30 transactions: BEGIN, 3 point reads, a range read, an update, COMMIT."""
    out = []
    for s in range(sessions):
        rows: list[Statement] = []
        for t in range(30):
            key = 1 + (s * 30 + t) % 50
            texts = ["BEGIN", *(f"SELECT name FROM items WHERE id = {key + i}" for i in range(3)),
                     f"SELECT count(*) FROM items WHERE id BETWEEN {key} AND {key + 9}",
                     f"UPDATE items SET stock = stock - 1, name = 'n{t}' WHERE id = {key}", "COMMIT"]
            rows += [Statement(len(rows) * 0.001, 0.1, text) for text in texts]
        out.append(TraceSession(str(s), rows))
    trace = Trace(dialect, "shop", 0.0, 1.0, out)
    trace.summary = summarise(trace)
    return trace


def test_statements_weighted_by_their_captured_counts_begin_and_commit_left_out():
    mix = mix_of("shop.trace", shop_trace())
    texts = sorted(mix.statements.values())
    assert texts == ["SELECT count(*) FROM items WHERE id BETWEEN ? AND ?", "SELECT name FROM items WHERE id = ?",
                     "UPDATE items SET stock = stock - ?, name = ? WHERE id = ?"]
    assert mix.left_out == 2 and mix.left_out_count == 120 and mix.unmatched == 0
    by_text = {mix.statements[t.name]: t for t in mix.spec.transactions}
    point, update = by_text["SELECT name FROM items WHERE id = ?"], by_text[texts[2]]
    assert point.weight == 600 and update.weight == 200  # 3:1:1 of a 1000-card deck
    assert mix.captured[point.name] == pytest.approx(60.0)
    assert update.statements[0].sql.default == "UPDATE items SET stock = stock - :p1, name = :p2 WHERE id = :p3"
    assert update.statements[0].rollback_on and not point.statements[0].rollback_on
    assert mix.spec.writes == ("items",) and not mix.spec.tables
    # each sampled execution whole: a range's two ends are a captured range, 9 apart
    ranges = mix.samples[by_text[texts[0]].name]
    assert ranges and all(high - low == 9 for low, high in ranges)
    assert {name for _, name, _ in mix.samples[update.name]} == {f"n{t}" for t in range(30)}


@pytest.mark.parametrize("counts", [[29113, *[2911] * 8], [1, 1, 1], [5, 10**6], [7, 13, 29, 101, 997]])
def test_the_deck_holds_each_share_within_a_card(counts):
    cards = deck_cards(counts)
    assert sum(cards) == DECK or min(counts) * DECK < sum(counts) / 2  # a rare one's card on top
    assert all(c >= 1 for c in cards)
    for count, card in zip(counts, cards):
        assert abs(card - DECK * count / sum(counts)) < 1 or card == 1


def test_the_trace_tables_are_the_mix_own_and_no_others():
    mix = mix_of("shop.trace", shop_trace())
    assert confine.problems(mix.spec, "sqlite") == []
    others = mix.spec.__class__(**{**mix.spec.__dict__, "writes": ()})
    assert any("writes table items" in p for p in confine.problems(others, "sqlite"))


def test_a_trace_without_a_summary_is_refused():
    trace = shop_trace()
    trace.summary = {}
    with pytest.raises(TpsbenchError, match="holds no summary"):
        mix_of("old.trace", trace)


def cli(tmp_path: Path, *args: str):
    return cli_in_process("replay", *args, "--results", f"sqlite:///{tmp_path / 'results.db'}", cwd=tmp_path)


def one_line(result, *words: str) -> None:
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert all(w in result.stderr for w in words), result.stderr
    assert "Traceback" not in result.stderr


def test_bad_input_one_line_nothing_stored(tmp_path: Path):
    trace = shop_trace()
    db = tmp_path / "shop.db"
    sqlite3.connect(db).close()  # no table items
    write_trace(trace, tmp_path / "shop.trace")
    one_line(cli(tmp_path, "shop.trace", "--as-mix", "--db", f"sqlite:///{db}", "--users", "1"),
             "no table items", "nothing run")
    trace.summary = {}
    write_trace(trace, tmp_path / "old.trace")
    one_line(cli(tmp_path, "old.trace", "--as-mix", "--db", f"sqlite:///{db}", "--users", "1"), "holds no summary")
    one_line(cli(tmp_path, "shop.trace", "--as-mix", "--speed", "2", "--db", f"sqlite:///{db}"), "--speed")
    one_line(cli(tmp_path, "shop.trace", "--users", "4", "--db", f"sqlite:///{db}"), "--users", "--as-mix")
    assert not (tmp_path / "results.db").exists()


@pytest.mark.slow
def test_a_mix_runs_as_a_workload_and_tracks_the_captured_mix(tmp_path: Path):
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, stock INTEGER)")
        conn.executemany("INSERT INTO items VALUES (?, 'x', 100)", [(i,) for i in range(1, 80)])
    trace = shop_trace()
    write_trace(trace, tmp_path / "shop.trace")
    result = subprocess.run([sys.executable, "-m", "tpsbench", "replay", "shop.trace", "--as-mix", "--db",
                             f"sqlite:///{db}", "--users", "2", "--rampup", "0s", "--duration", "3s", "--interval",
                             "1s", "--results", f"sqlite:///{tmp_path / 'results.db'}"], cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=SRC), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "tracemix" in result.stderr and "left out: 2 statement(s)" in result.stderr
    with sqlite3.connect(tmp_path / "results.db") as conn:
        detail = json.loads(conn.execute("SELECT detail FROM steps").fetchone()[0])
    done = {name: t["commits"] + t["rollbacks"] + t["errors"] for name, t in detail["txns"].items()}
    total = sum(done.values())
    mix = mix_of("shop.trace", trace)
    assert total > 100 and set(done) == set(mix.captured)
    for name, share in mix.captured.items():
        # two users' decks of 1000 cards, dealt a few hundred times: within a few points
        assert abs(100 * done[name] / total - share) < 5, (name, done[name], total, share)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT min(stock) FROM items").fetchone()[0] < 100  # the updates ran
