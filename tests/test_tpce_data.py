"""The TPC-E initial data: exact counts, determinism, and the relations the rule implies.

Builds are one load unit with one or two days of trades and a short DAILY_MARKET
history, on SQLite, PostgreSQL and MariaDB, each checked by SQL over the built tables: holdings add
up to their summaries, brokers' totals to their trades, LAST_TRADE to each security's
latest trade, every completed trade has its settlement, cash, history and lot rows, and
every pending limit order its TRADE_REQUEST. The loader's lot walk is compared with a
plain per-pair FIFO/LIFO queue over several days.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import re
import shutil
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from tpsbench.cli.main import main as cli_main
from tpsbench.commands.build import build
from tpsbench.core.batch import check_plain
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import read_meta
from tpsbench.core.workload import LoadParams, LoadTask
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload
from tpsbench.workloads.tpce import TpceWorkload, loader
from tpsbench.workloads.tpce.layout import TRADES_PER_DAY
from tpsbench.workloads.tpce.walk import Book

LOAD_TIME = "2026-01-07 12:00:00"
OPTIONS = {"trade_days": "2", "market_days": "30"}
SEED = 42


def workload(options: dict[str, str] = OPTIONS) -> TpceWorkload:
    wl = get_workload("tpce")
    assert isinstance(wl, TpceWorkload)
    wl.configure(options)
    return wl


def params(wl: TpceWorkload, scale: int, seed: int = SEED) -> LoadParams:
    return LoadParams(scale=scale, seed=seed, load_time=LOAD_TIME, constants=wl.constants(seed))


def schema_columns() -> dict[str, list[str]]:
    text = TpceWorkload.schema_file("postgresql").read_text()
    return {m.group(1): [line.split()[0] for line in m.group(2).splitlines() if line.strip()
                         and not line.strip().startswith("PRIMARY")]
            for m in re.finditer(r"CREATE TABLE (\w+) \((.*?)\n\);", text, re.DOTALL)}


# ---- generated batches (no database) ------------------------------------------------------


def test_batches_match_schema_and_expected_counts() -> None:
    wl = workload()
    columns, rows = schema_columns(), Counter[str]()
    assert set(columns) == set(wl.tables) and len(wl.tables) == 33
    for task in wl.tasks(1000):
        for batch in wl.generate(task, params(wl, 1000)):
            assert batch.names == columns[batch.table], batch.table
            assert {len(v) for v in batch.columns.values()} == {len(batch)}
            check_plain(batch)
            rows[batch.table] += len(batch)
    assert dict(rows) == wl.expected_rows(1000, SEED)
    assert rows["trade"] == 2 * TRADES_PER_DAY and rows["daily_market"] == 685 * 30
    assert rows["customer"] == 1000 and rows["broker"] == 10 and rows["security"] == 685
    assert 4500 < rows["customer_account"] < 5500 and 50_000 <= rows["watch_item"] <= 150_000
    assert 0 < rows["trade_request"] < rows["trade"] // 100  # a small share left pending
    assert wl.expected_rows(1000, SEED + 1) != wl.expected_rows(1000, SEED)


def test_trade_ids_are_one_range_per_load_unit() -> None:
    wl = workload({"trade_days": "1", "market_days": "1"})
    ids = [np.concatenate([b.columns["t_id"] for b in loader.generate(task, params(wl, 2000)) if b.table == "trade"])
           for task in wl.tasks(2000) if task.kind == "trades"]
    assert [(int(i.min()), int(i.max()), len(np.unique(i))) for i in ids] == [
        (1, TRADES_PER_DAY, TRADES_PER_DAY), (TRADES_PER_DAY + 1, 2 * TRADES_PER_DAY, TRADES_PER_DAY)]


def test_lot_walk_matches_a_queue_per_pair() -> None:
    """Book.settle over five days against deques: FIFO pops the oldest lot, LIFO the newest."""
    rng = np.random.default_rng(5)
    pairs = 40
    lifo = rng.random(pairs) < 0.5
    book, walk = Book(lifo), np.zeros(pairs, np.int64)
    lots: list[deque[int]] = [deque() for _ in range(pairs)]
    next_id = 1
    for _ in range(5):
        n = int(rng.integers(200, 400))
        pair, step = rng.integers(0, pairs, n), rng.choice([-1, 1], n).astype(np.int8)
        t_id = np.arange(next_id, next_id + n)
        next_id += n
        buys, lot_t_id, lot_price = book.settle(pair, step, t_id, t_id * 10, t_id * 100)
        for k in range(n):
            p = pair[k]
            before, walk[p] = abs(walk[p]), walk[p] + step[k]
            if abs(walk[p]) > before:
                assert buys[k] and lot_t_id[k] == 0
                lots[p].append(int(t_id[k]))
            else:
                closed = lots[p].pop() if lifo[p] else lots[p].popleft()
                assert not buys[k] and (lot_t_id[k], lot_price[k]) == (closed, closed * 10)
    pair, t_id, price, dts = book.open_lots()
    assert sorted(zip(pair.tolist(), t_id.tolist())) == sorted((p, t) for p in range(pairs) for t in lots[p])
    assert (price == t_id * 10).all() and (dts == t_id * 100).all()
    assert (np.abs(book.walk) == [len(q) for q in lots]).all()


# ---- built databases -------------------------------------------------------------------------

#: name -> SQL selecting a row per breach of the relation (none: it holds)
RELATIONS = {
    "holding_summary is the sum of holding": """
        SELECT 1 FROM holding_summary LEFT JOIN (
            SELECT h_ca_id, h_s_symb, SUM(h_qty) AS q FROM holding GROUP BY h_ca_id, h_s_symb) h
            ON h.h_ca_id = hs_ca_id AND h.h_s_symb = hs_s_symb
        WHERE h.q IS NULL OR h.q <> hs_qty OR hs_qty <= 0
        UNION ALL
        SELECT 1 FROM holding LEFT JOIN holding_summary ON hs_ca_id = h_ca_id AND hs_s_symb = h_s_symb
        WHERE hs_ca_id IS NULL""",
    "broker totals add up over completed trades": """
        SELECT 1 FROM broker LEFT JOIN (
            SELECT ca_b_id, COUNT(*) AS n, SUM(t_comm) AS c FROM trade JOIN customer_account ON ca_id = t_ca_id
            WHERE t_st_id = 'CMPT' GROUP BY ca_b_id) x ON x.ca_b_id = b_id
        WHERE x.n IS NULL OR x.n <> b_num_trades OR ABS(x.c - b_comm_total) > 0.005""",
    "last_trade is each security's latest completed trade": """
        SELECT 1 FROM last_trade LEFT JOIN (
            SELECT t_s_symb, MAX(t_dts) AS d, SUM(t_qty) AS v FROM trade WHERE t_st_id = 'CMPT' GROUP BY t_s_symb) x
            ON x.t_s_symb = lt_s_symb
        WHERE x.d IS NULL OR x.d <> lt_dts OR x.v <> lt_vol
        UNION ALL
        SELECT 1 FROM trade JOIN last_trade ON lt_s_symb = t_s_symb AND lt_dts = t_dts
        WHERE t_st_id = 'CMPT' AND t_trade_price <> lt_price""",
    "a settlement and a lot row for every completed trade, none for others": """
        SELECT 1 FROM trade LEFT JOIN settlement ON se_t_id = t_id
        WHERE (t_st_id = 'CMPT') <> (se_t_id IS NOT NULL) OR (t_st_id = 'CMPT') <> (t_trade_price IS NOT NULL)
        UNION ALL
        SELECT 1 FROM trade LEFT JOIN (SELECT hh_t_id, COUNT(*) AS n FROM holding_history GROUP BY hh_t_id) h
            ON h.hh_t_id = t_id
        WHERE (t_st_id = 'CMPT' AND (h.n IS NULL OR h.n <> 1)) OR (t_st_id <> 'CMPT' AND h.n IS NOT NULL)""",
    "a cash transaction for every completed cash trade, of its settlement's amount": """
        SELECT 1 FROM trade JOIN settlement ON se_t_id = t_id LEFT JOIN cash_transaction ON ct_t_id = t_id
        WHERE (t_is_cash = 1) <> (ct_t_id IS NOT NULL) OR ct_amt <> se_amt OR ct_dts <> t_dts
            OR (t_is_cash = 1) <> (se_cash_type = 'Cash Account')
        UNION ALL
        SELECT 1 FROM cash_transaction LEFT JOIN settlement ON se_t_id = ct_t_id WHERE se_t_id IS NULL""",
    "settlement amounts: value, charge, commission and tax": """
        SELECT 1 FROM trade JOIN settlement ON se_t_id = t_id JOIN customer_account ON ca_id = t_ca_id
            JOIN trade_type ON tt_id = t_tt_id
        WHERE ABS(se_amt - ((2 * tt_is_sell - 1) * t_qty * t_trade_price - t_chrg - t_comm
                            - CASE WHEN ca_tax_st = 1 THEN t_tax ELSE 0 END)) > 0.005
            OR (t_tax <> 0 AND (tt_is_sell = 0 OR ca_tax_st = 0))""",
    "charge and commission from their tables": """
        SELECT 1 FROM trade JOIN customer_account ON ca_id = t_ca_id JOIN customer ON c_id = ca_c_id
            JOIN security ON s_symb = t_s_symb
            LEFT JOIN commission_rate ON cr_c_tier = c_tier AND cr_tt_id = t_tt_id AND cr_ex_id = s_ex_id
                AND t_qty BETWEEN cr_from_qty AND cr_to_qty
            LEFT JOIN charge ON ch_tt_id = t_tt_id AND ch_c_tier = c_tier
        WHERE cr_rate IS NULL OR ch_chrg IS NULL OR t_chrg <> ch_chrg
            OR ABS(t_comm - t_qty * COALESCE(t_trade_price, t_bid_price) * cr_rate / 100) > 0.0051""",
    "trade history: one row per step, the last the trade's status and time": """
        SELECT 1 FROM trade JOIN trade_history ON th_t_id = t_id
        GROUP BY t_id, t_st_id, t_dts, t_tt_id
        HAVING MAX(th_dts) <> t_dts OR SUM(CASE WHEN th_st_id = t_st_id THEN 1 ELSE 0 END) <> 1
            OR COUNT(*) <> 1 + CASE WHEN t_st_id = 'CMPT' THEN 1 ELSE 0 END
                             + CASE WHEN t_tt_id IN ('TLB', 'TLS', 'TSL') AND t_st_id <> 'PNDG' THEN 1 ELSE 0 END
        UNION ALL
        SELECT 1 FROM trade_history LEFT JOIN trade ON t_id = th_t_id WHERE t_id IS NULL""",
    "a trade request for every pending limit order, as ordered": """
        SELECT 1 FROM trade JOIN customer_account ON ca_id = t_ca_id LEFT JOIN trade_request ON tr_t_id = t_id
        WHERE (t_st_id = 'PNDG') <> (tr_t_id IS NOT NULL)
            OR tr_tt_id <> t_tt_id OR tr_s_symb <> t_s_symb OR tr_qty <> t_qty OR tr_bid_price <> t_bid_price
            OR tr_b_id <> ca_b_id OR (t_st_id = 'PNDG' AND t_tt_id NOT IN ('TLB', 'TLS', 'TSL'))""",
    "every holding is an open lot of a completed buy": """
        SELECT 1 FROM holding LEFT JOIN trade ON t_id = h_t_id
            LEFT JOIN holding_history ON hh_h_t_id = h_t_id AND hh_t_id = h_t_id
        WHERE t_id IS NULL OR t_st_id <> 'CMPT' OR t_tt_id NOT IN ('TMB', 'TLB') OR t_ca_id <> h_ca_id
            OR t_s_symb <> h_s_symb OR t_trade_price <> h_price OR t_dts <> h_dts OR t_qty <> h_qty
            OR hh_before_qty <> 0 OR hh_after_qty <> h_qty OR hh_h_t_id IS NULL
        UNION ALL
        SELECT 1 FROM holding JOIN holding_history ON hh_h_t_id = h_t_id AND hh_t_id <> h_t_id""",
    "every sell closes one earlier lot of its account and symbol": """
        SELECT 1 FROM holding_history JOIN trade s ON s.t_id = hh_t_id JOIN trade b ON b.t_id = hh_h_t_id
        WHERE hh_h_t_id <> hh_t_id AND (b.t_ca_id <> s.t_ca_id OR b.t_s_symb <> s.t_s_symb OR b.t_dts > s.t_dts
            OR hh_before_qty <> s.t_qty OR hh_after_qty <> 0 OR s.t_tt_id IN ('TMB', 'TLB')
            OR b.t_tt_id NOT IN ('TMB', 'TLB') OR b.t_lifo <> s.t_lifo)
        UNION ALL
        SELECT 1 FROM holding_history WHERE hh_h_t_id <> hh_t_id GROUP BY hh_h_t_id HAVING COUNT(*) > 1""",
    "trade ids run 1..N": """
        SELECT 1 FROM (SELECT MIN(t_id) AS lo, MAX(t_id) AS hi, COUNT(*) AS n FROM trade) x WHERE lo <> 1 OR hi <> n""",
    "exchanges count their securities": """
        SELECT 1 FROM exchange LEFT JOIN (SELECT s_ex_id, COUNT(*) AS n FROM security GROUP BY s_ex_id) x
            ON x.s_ex_id = ex_id WHERE COALESCE(x.n, 0) <> ex_num_symb""",
    "one owner permission per account, with the owner's tax id": """
        SELECT 1 FROM customer_account JOIN customer ON c_id = ca_c_id
            LEFT JOIN account_permission ON ap_ca_id = ca_id AND ap_tax_id = c_tax_id
        WHERE ap_acl IS NULL OR ap_acl <> '0000' OR ap_f_name <> c_f_name OR ap_l_name <> c_l_name""",
}


def violations(url: str) -> dict[str, int]:
    with open_target(url).engine.connect() as conn:
        found = {name: conn.execute(sa.text(f"SELECT COUNT(*) FROM ({sql}) v")).scalar_one()
                 for name, sql in RELATIONS.items()}
    return {name: count for name, count in found.items() if count}


def row_counts(url: str) -> dict[str, int]:
    with open_target(url).engine.connect() as conn:
        return {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one() for t in TpceWorkload.tables}


def build_and_check(url: str, options: dict[str, str]) -> None:
    result = build("tpce", 1000, url, loaders=2, seed=SEED, load_time=LOAD_TIME, show_progress=False, options=options)
    expected = workload(options).expected_rows(1000, SEED)
    assert result.rows == expected
    assert row_counts(url) == expected
    assert violations(url) == {}
    meta = read_meta(open_target(url), "tpce")
    assert (meta["state"], meta["const_trade_days"], meta["const_market_days"]) == (
        "complete", options["trade_days"], options["market_days"])


@pytest.fixture(scope="module")
def sqlite_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite build for the module, checked; tests that change it work on a copy."""
    path = tmp_path_factory.mktemp("tpce") / "tpce.db"
    build_and_check(f"sqlite:///{path}", OPTIONS)
    return path


@pytest.mark.slow  # a build: the quick lane builds TPC-E on SQLite in test_tpce_transactions
def test_sqlite_build_counts_and_relations(sqlite_built: Path) -> None:
    assert sqlite_built.stat().st_size > 10_000_000  # built and checked by the fixture


@pytest.mark.slow
@pytest.mark.parametrize("url_fixture", [pytest.param("pg_url", marks=pytest.mark.postgresql),
                                         pytest.param("mysql_url", marks=pytest.mark.mysql)])
def test_server_build_counts_and_relations(url_fixture: str, request: pytest.FixtureRequest) -> None:
    """One day of trades (the SQLite build has two): the servers' bulk paths, not the walk."""
    build_and_check(request.getfixturevalue(url_fixture), {"trade_days": "1", "market_days": "30"})


@pytest.mark.slow  # checks the checks of this module, on a copy of the build
def test_relations_catch_a_broken_build(sqlite_built: Path, tmp_path: Path) -> None:
    shutil.copy(sqlite_built, tmp_path / "broken.db")
    url = f"sqlite:///{tmp_path / 'broken.db'}"
    with open_target(url).engine.begin() as conn:
        conn.exec_driver_sql("UPDATE holding SET h_qty = h_qty + 100 WHERE h_t_id = (SELECT MIN(h_t_id) FROM holding)")
        conn.exec_driver_sql("UPDATE broker SET b_comm_total = b_comm_total + 0.01 WHERE b_id = 3")
        conn.exec_driver_sql("DELETE FROM trade_request WHERE tr_t_id = (SELECT MAX(tr_t_id) FROM trade_request)")
    assert set(violations(url)) == {
        "holding_summary is the sum of holding", "every holding is an open lot of a completed buy",
        "broker totals add up over completed trades", "a trade request for every pending limit order, as ordered"}


def task_digests(wl: TpceWorkload, scale: int, seed: int, tasks: list[LoadTask]) -> dict[LoadTask, dict[str, str]]:
    """Per task, per table: md5 over its batches' columns and NULL masks, in batch order."""
    out = {}
    for task in tasks:
        digests: dict[str, Any] = {}
        for batch in wl.generate(task, params(wl, scale, seed)):
            md5 = digests.setdefault(batch.table, hashlib.md5())
            for name, values in batch.columns.items():
                md5.update(name.encode() + values.dtype.str.encode() + values.tobytes())
                md5.update(batch.nulls.get(name, np.zeros(0, bool)).tobytes())
        out[task] = {table: md5.hexdigest() for table, md5 in digests.items()}
    return out


@pytest.mark.slow  # four processes: the quick lane generates in test_batches_match_schema_and_expected_counts
def test_same_seed_same_data_with_1_and_4_loaders() -> None:
    """The tasks of a 2-load-unit build, in one process in order and in four processes in
    reverse order (a build's loaders are processes that take its tasks in any order)."""
    wl = workload({"trade_days": "1", "market_days": "5"})
    tasks = wl.tasks(2000)
    one = task_digests(wl, 2000, 3, tasks)
    with ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("fork")) as pool:
        parts = pool.map(task_digests, *zip(*[(wl, 2000, 3, [task]) for task in reversed(tasks)]))
        four = {task: digests for part in parts for task, digests in part.items()}
    assert four == one
    other = task_digests(wl, 2000, 4, tasks)
    same = {table for task in tasks for table, digest in other[task].items() if one[task][table] == digest}
    assert same == {"status_type", "trade_type", "charge", "commission_rate", "watch_list", "news_xref"}


# ---- bad input and sizes --------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "needle"), [
    (["build", "tpce", "--customers", "1500"], "load units of 1,000 customers"),
    (["build", "tpce", "--scale", "999"], "not 999"),
    (["build", "tpce", "--customers", "1000", "--trade-days", "0"], "--trade-days must be a whole number"),
    (["build", "tpce", "--customers", "1000", "-o", "market_days=x"], "--market-days must be a whole number"),
    (["size", "tpce", "--customers", "2500"], "not 2,500"),
])
def test_bad_input_is_one_line_and_writes_nothing(args: list[str], needle: str, sqlite_url: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main([*args, "--db", sqlite_url])
    err = capsys.readouterr().err
    assert exit_info.value.code != 0 and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("tpsbench: error: ") and needle in err, err
    assert not open_target(sqlite_url).table_names()
    with pytest.raises(TpsbenchError, match="load units"):
        workload().expected_rows(10, SEED)


def test_size_grows_with_the_days_and_presets_are_true(capsys: pytest.CaptureFixture[str]) -> None:
    wl = workload({"trade_days": "1"})
    small = wl.estimate_size(5000, "postgresql")
    wl.configure({"trade_days": "300"})
    full = wl.estimate_size(5000, "postgresql")
    entry = wl.measured_size("postgresql")
    assert small is not None and full is not None and entry is not None
    assert full.megabytes - small.megabytes == pytest.approx(5 * 299 * entry["per_lu_trade_day_mb"])
    assert full.megabytes > 10_000  # the rule's minimum is tens of gigabytes
    presets = TpceWorkload.scale_factors()["presets"]
    assert presets["tiny"]["scale"] == 1000 and presets["minimum"]["scale"] == 5000
    for entry in presets.values():
        wl.describe_scale(entry["scale"])  # every preset is a whole number of load units
    cli_main(["presets", "tpce"])
    assert "5000" in capsys.readouterr().out
