"""sysbench workload: options, SQL and distributions against sysbench 1.0 itself; builds and
runs on SQLite, PostgreSQL and MariaDB, with the statement mix of every mode checked against
the servers' own counters and against sysbench's own summary on tables sysbench prepared.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pymysql
import pytest
import sqlalchemy as sa
from conftest import schema_file, scratch_mysql_database, scratch_pg_database, sql_dialects, unavailable
from sqlalchemy.engine import make_url

from tpsbench.commands.build import build
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.schema import split_ddl
from tpsbench.core.session import RunContext
from tpsbench.core.workload import LoadParams, LoadTask
from tpsbench.targets import open_target
from tpsbench.targets.mysql import libmariadb
from tpsbench.workloads import get_workload
from tpsbench.workloads.sysbench import SysbenchWorkload
from tpsbench.workloads.sysbench.common import TEMPLATES, sql_set, table_ddl
from tpsbench.workloads.sysbench.modes import (
    MODES,
    RUN_OPTIONS,
    mode_plan,
    parse_options,
    statement_mix,
)
from tpsbench.workloads.sysbench.rand import RandParams, SbRand, draw_many
from tpsbench.workloads.sysbench.session import SysbenchSession

SYSBENCH = shutil.which("sysbench")
LUA_DIR = Path("/usr/share/sysbench")
PG_HOST = os.environ.get("TPSBENCH_TEST_PG_HOST", "127.0.0.1")
MYSQL_HOST = os.environ.get("TPSBENCH_TEST_MYSQL_HOST", "127.0.0.1")
TABLES, SIZE = 2, 1000
#: sysbench 1.0's read/write/other per transaction of every script at default options
SYSBENCH_MIX = {
    "oltp_read_write": (14, 4, 2), "oltp_read_only": (14, 0, 2), "oltp_write_only": (0, 4, 2),
    "oltp_point_select": (1, 0, 0), "oltp_update_index": (0, 1, 0), "oltp_update_non_index": (0, 1, 0),
    "oltp_insert": (0, 1, 0), "oltp_delete": (0, 1, 0), "select_random_points": (1, 0, 0),
    "select_random_ranges": (1, 0, 0),
}


def prepare(url: str, tables: int, table_size: int, *, seed: int = 0, **kwargs: Any) -> Any:
    """``tpsbench build sysbench --tables N --table-size M``, quietly."""
    return build("sysbench", tables, url, seed=seed, show_progress=False,
                 options={"table_size": str(table_size)}, **kwargs)


def need_sysbench() -> str:
    if SYSBENCH is None:
        unavailable("sysbench (apt-get install sysbench)")
    return SYSBENCH


# -- scratch databases named tpsb_sb_* ------------------------------------------------------------
@pytest.fixture
def sb_pg() -> Iterator[str]:
    """The name of a scratch PostgreSQL database (conftest's), for sysbench's own CLI too."""
    with scratch_pg_database() as url:
        yield make_url(url).database


@pytest.fixture
def sb_mysql() -> Iterator[str]:
    """The name of a scratch MariaDB database (conftest's), for sysbench's own CLI too."""
    with scratch_mysql_database() as url:
        yield make_url(url).database


def pg_url(db: str) -> str:
    return f"postgresql://postgres@{PG_HOST}/{db}"


def mysql_url(db: str) -> str:
    return f"mysql://root@{MYSQL_HOST}/{db}"


def configured(url: str, mode: str, extra: dict[str, str] | None = None,
               seed: int = 7) -> tuple[SysbenchWorkload, RunContext]:
    """The workload and run context of ``mode`` on the schema at ``url``, as the runner makes them."""
    wl = SysbenchWorkload()
    options = {"mode": mode, **(extra or {})}
    wl.configure(options)
    meta = wl.verify_schema(open_target(url))
    ctx = RunContext("sysbench", url, int(meta["scale"]), seed,
                     {k[6:]: int(v) for k, v in meta.items() if k.startswith("const_")}, options)
    return wl, ctx


def variant_seed(extra: dict[str, str] | None) -> int:
    """A seed per option variant: a variant replaying another's values would UPDATE rows to
    the values they already hold, which MySQL reports as no row changed."""
    return 7 + sum(ord(ch) for ch in str(sorted((extra or {}).items())))


def open_session(url: str, mode: str, extra: dict[str, str] | None = None, conn: Any = None,
                 ready: tuple[SysbenchWorkload, RunContext] | None = None) -> tuple[SysbenchWorkload, SysbenchSession]:
    wl, ctx = ready or configured(url, mode, extra, seed=variant_seed(extra))
    target = open_target(url)
    session = wl.open_session(ctx, 0, 1, conn if conn is not None else target.connect(), target)
    assert isinstance(session, SysbenchSession)
    return wl, session


def run_transactions(session: SysbenchSession, count: int) -> list[list[tuple[str, tuple]]]:
    done = []
    for _ in range(count):
        name = session.next_transaction()
        inputs = session.inputs(name)
        assert session.execute(name, inputs)
        done.append(inputs)
    return done


# -- options, plans and SQL -------------------------------------------------------------------------
def test_every_mode_has_sysbench_statement_mix() -> None:
    for mode, (r, w, o) in SYSBENCH_MIX.items():
        assert statement_mix(parse_options({"mode": mode})) == {"read": r, "write": w, "other": o}, mode
    assert statement_mix(parse_options({"--mode": "oltp_read_write", "--skip-trx": "on"})) == \
        {"read": 14, "write": 4, "other": 0}
    assert statement_mix(parse_options({"range-selects": "off", "point_selects": "3"})) == \
        {"read": 3, "write": 4, "other": 2}
    assert statement_mix(parse_options({"mode": "oltp_point_select", "point_selects": "7"}))["read"] == 1
    plan = mode_plan(parse_options({}))
    assert [g for g, _ in plan.groups] == ["point_selects", "simple_ranges", "sum_ranges", "order_ranges",
                                           "distinct_ranges", "index_updates", "non_index_updates", "delete_inserts"]


def test_declared_defaults_parse_and_bad_options_are_one_line_errors() -> None:
    defaults = parse_options({o.name: o.default for o in RUN_OPTIONS})
    assert defaults.mode == "oltp_read_write" and defaults.tables is None and defaults.rand.rand_type == "special"
    for bad in ({"mode": "oltp_nope"}, {"point_selects": "x"}, {"skip_trx": "maybe"}, {"nope": "1"},
                {"rand_type": "normal"}, {"tables": "0"}, {"rand_pareto_h": "1.5"}):
        with pytest.raises(TpsbenchError) as info:
            parse_options(bad)
        assert "\n" not in str(info.value)
    assert parse_options({"think": "off"}).mode == "oltp_read_write"  # engine options pass through
    assert parse_options({"client": "dbapi"}).client == "dbapi"
    assert parse_options({"client": "prepared"}).client == "prepared"
    with pytest.raises(TpsbenchError, match="--client must be one of fast, prepared, text, dbapi"):
        parse_options({"client": "binary"})


def test_statements_are_oltp_common_lua_statements() -> None:
    if not (LUA_DIR / "oltp_common.lua").exists():
        unavailable("sysbench's Lua scripts")
    lua = (LUA_DIR / "oltp_common.lua").read_text()
    defined = dict(re.findall(r'(\w+) = \{\s*"([^"]+sbtest%u[^"]*)"', lua))
    assert {k: v.replace("%u", "{t}") for k, v in defined.items()} == TEMPLATES
    sql = sql_set(sql_dialects()["postgresql"], "%s", 3)
    assert sql.by_group["point_selects"][3] == "SELECT c FROM sbtest3 WHERE id=%s"
    assert sql_set(sql_dialects()["sqlite"], "?", 1).random_ranges.count("k BETWEEN ? AND ?") == 10


@pytest.mark.parametrize("dialect", ["postgresql", "mysql", "sqlite", "mssql"])
def test_ddl_template_expands_to_sysbench_tables(dialect: str) -> None:
    try:
        import sqlglot
    except ImportError as exc:
        unavailable("sqlglot (the test extra)", exc)
    tables, indexes = split_ddl(schema_file("sysbench", dialect).read_text())
    read = {"postgresql": "postgres", "mssql": "tsql"}.get(dialect, dialect)
    created = [sqlglot.parse_one(s, read=read) for s in table_ddl(tables, 2)]
    assert [c.this.this.name for c in created] == ["sbtest1", "sbtest2"]
    columns = [d.name for d in created[0].this.expressions if isinstance(d, sqlglot.exp.ColumnDef)]
    assert columns == ["id", "k", "c", "pad"]
    assert table_ddl(indexes, 2)[: len(indexes)][0] == "CREATE INDEX k_1 ON sbtest1(k)"


# -- distributions ---------------------------------------------------------------------------------
def ks_distance(x: np.ndarray, y: np.ndarray) -> float:
    x, y = np.sort(x), np.sort(y)
    values = np.union1d(x, y)
    return float(np.abs(np.searchsorted(x, values, "right") / len(x)
                        - np.searchsorted(y, values, "right") / len(y)).max())


def sysbench_draws(tmp: Path, args: list[str], n: int, a: int, b: int) -> np.ndarray:
    script = tmp / "draws.lua"
    script.write_text(
        "function cmd_dump()\n"
        f"  local f = io.open('{tmp / 'draws.txt'}', 'w')\n"
        f"  for i = 1, {n} do f:write(sysbench.rand.default({a}, {b}), '\\n') end\n"
        "  f:close()\nend\n"
        "sysbench.cmdline.commands = { dump = {cmd_dump} }\n")
    subprocess.run([need_sysbench(), str(script), *args, "dump"], check=True, capture_output=True, cwd=tmp)
    return np.loadtxt(tmp / "draws.txt", dtype=np.int64)


@pytest.mark.parametrize("args", [["--rand-type=uniform"], ["--rand-type=gaussian"], ["--rand-type=special"],
                                  ["--rand-type=special", "--rand-spec-pct=5", "--rand-spec-res=90"],
                                  ["--rand-type=pareto"], ["--rand-type=pareto", "--rand-pareto-h=0.4"]])
def test_distributions_match_sysbench(tmp_path: Path, args: list[str]) -> None:
    n = 100_000
    # seeded, so that the test does not fail one run in a few hundred by chance (a KS test at
    # alpha = 0.001, twice per case, six cases); a wrong distribution still fails it every time
    theirs = sysbench_draws(tmp_path, [*args, "--rand-seed=7"], n, 1, 1000)
    opts = parse_options(dict(arg[2:].split("=") for arg in args))
    rand = SbRand(random.Random(3), opts.rand)
    ours = np.array([rand.default(1, 1000) for _ in range(n)])
    vector = draw_many(np.random.default_rng(3), opts.rand, 1, 1000, n)
    # two-sample Kolmogorov-Smirnov at alpha = 0.001: 1.95 * sqrt(2 / n)
    limit = 1.95 * (2 / n) ** 0.5
    assert ks_distance(theirs, ours) < limit
    assert ks_distance(theirs, vector) < limit
    assert ours.min() >= 1 and ours.max() <= 1000


def test_special_puts_res_percent_of_draws_on_pct_percent_of_values() -> None:
    params = RandParams("special", spec_pct=2, spec_res=80)
    rand = SbRand(random.Random(5), params)
    draws = np.array([rand.default(1, 10_000) for _ in range(100_000)])
    counts = np.bincount(draws, minlength=10_001)
    hot = np.sort(counts)[::-1][:200].sum() / len(draws)  # the most drawn 2 % of 10,000 values
    assert 0.80 <= hot <= 0.83  # 80 % special, plus the bell-shaped 20 %'s share of the hot values
    vector = np.bincount(draw_many(np.random.default_rng(5), params, 1, 10_000, 100_000), minlength=10_001)
    assert 0.80 <= np.sort(vector)[::-1][:200].sum() / 100_000 <= 0.83


def test_zipfian_follows_its_exponent() -> None:
    params = RandParams("zipfian", zipf_exp=0.8)
    rand = SbRand(random.Random(9), params)
    ours = np.array([rand.default(1, 1000) for _ in range(100_000)])
    ratio = (ours == 1).sum() / (ours == 2).sum()
    assert abs(ratio - 2 ** 0.8) < 0.15
    assert ks_distance(ours, draw_many(np.random.default_rng(9), params, 1, 1000, 100_000)) < 0.01


# -- loading -----------------------------------------------------------------------------------------
def test_rows_are_sysbench_shaped_and_deterministic() -> None:
    wl = get_workload("sysbench")
    params = LoadParams(scale=2, seed=3, load_time="2026-01-01 00:00:00", constants={"table_size": 1200})
    first = list(wl.generate(LoadTask("table", (1,)), params))
    again = list(wl.generate(LoadTask("table", (1,)), params))
    other = list(wl.generate(LoadTask("table", (2,)), params))
    batch = first[0]
    assert batch.table == "sbtest1" and batch.names == ["id", "k", "c", "pad"]
    assert batch.columns["id"].tolist() == list(range(1, 1201))
    assert batch.columns["k"].min() >= 1 and batch.columns["k"].max() <= 1200
    assert all(re.fullmatch(rb"\d{11}(-\d{11}){9}", c) for c in batch.columns["c"].tolist())
    assert all(re.fullmatch(rb"\d{11}(-\d{11}){4}", p) for p in batch.columns["pad"].tolist())
    assert batch.to_tsv() == again[0].to_tsv() and batch.to_tsv() != other[0].to_tsv()


# -- SQLite: build, checks, every mode ---------------------------------------------------------------
def evaluate_checks(wl: SysbenchWorkload, url: str) -> dict[int, int]:
    target = open_target(url)
    wl.verify_schema(target)
    with target.engine.connect() as conn:
        return {c.number: c.count(target, conn) for c in wl.checks()}


def test_sqlite_build_checks_and_every_mode(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    with pytest.raises(TpsbenchError, match="no sysbench tables"):
        SysbenchWorkload().verify_schema(open_target(url))
    result = prepare(url, TABLES, 500, seed=4)
    assert result.rows == {"sbtest1": 500, "sbtest2": 500}
    assert evaluate_checks(SysbenchWorkload(), url) == {1: 0, 2: 0, 3: 0, 4: 0}
    for mode in MODES:
        wl, session = open_session(url, mode)
        before = wl.database_counts(session.target.connect())
        run_transactions(session, 20)
        mix = wl.statement_mix()
        if mode == "oltp_delete":
            assert sum(session.statement_counts.values()) == 20
        else:
            assert session.statement_counts == {k: 20 * v for k, v in mix.items()}, mode
            after = wl.database_counts(session.target.connect())
            assert after["rows"] - before["rows"] == wl.expected_counts({mode: 20})["rows"]
        session.conn.close()
    assert {k: v for k, v in evaluate_checks(SysbenchWorkload(), url).items() if k <= 2} == {1: 0, 2: 0}


# -- the servers' own counters ----------------------------------------------------------------------
#: every mode, and --skip-trx, before oltp_delete leaves holes that make UPDATEs miss
VARIANTS = ([(m, {}) for m in MODES[:1]]
            + [("oltp_read_write", {"skip_trx": "on"}), ("oltp_read_write", {"client": "dbapi"})]
            + [(m, {}) for m in MODES[1:]])


def expected_statements(inputs: list[list[tuple[str, tuple]]]) -> dict[str, int]:
    """Statements by verb over the given transactions, from the SQL that was sent (the
    transactions' BEGIN and COMMIT are counted by the callers from the mode)."""
    counts = {"SELECT": 0, "UPDATE": 0, "INSERT": 0, "DELETE": 0}
    for transaction in inputs:
        for sql, params in transaction:
            if params:
                counts[sql.split()[0]] += 1
            else:
                assert sql in ("BEGIN", "COMMIT"), sql
    return counts


def pg_index_scans(inputs: list[list[tuple[str, tuple]]]) -> int:
    """Index scans PostgreSQL counts for these statements: one per SELECT/UPDATE/DELETE by id,
    one per distinct value of an IN list, one per OR-ed range (a BitmapOr); none per INSERT."""
    scans = 0
    for transaction in inputs:
        for sql, params in transaction:
            if sql.startswith("INSERT") or not params:  # BEGIN, COMMIT
                continue
            if " IN (" in sql:
                scans += len(set(params))
            elif " OR " in sql:
                scans += len(params) // 2
            else:
                scans += 1
    return scans


class PgCounters:
    """pg_stat_user_tables (rows inserted/updated/deleted, scans) and pg_stat_database
    (commits) of one database, read on two connections opened once: a backend's start
    is itself a committed transaction, so an observer that reconnected would count."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.tables = psycopg.connect(host=PG_HOST, user="postgres", dbname=db)
        self.database = psycopg.connect(host=PG_HOST, user="postgres", dbname="postgres")

    def read(self) -> dict[str, int]:
        row = self.tables.execute(
            "SELECT COALESCE(SUM(n_tup_ins), 0), COALESCE(SUM(n_tup_upd), 0), COALESCE(SUM(n_tup_del), 0),"
            " COALESCE(SUM(seq_scan), 0) + COALESCE(SUM(idx_scan), 0) FROM pg_stat_user_tables"
            " WHERE relname LIKE 'sbtest%'").fetchone()
        self.tables.rollback()  # a rollback: xact_commit counts the session alone
        (commits,) = self.database.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                                           (self.db,)).fetchone()
        self.database.rollback()
        return dict(zip(("INSERT", "UPDATE", "DELETE", "scans", "commits"), [int(v) for v in (*row, commits)]))

    def settled(self, least_commits: int = 0) -> dict[str, int]:
        """The counters once they reach ``least_commits`` and stop moving: a backend flushes
        its own when it exits, a moment (longer on a busy machine) after the client closed."""
        deadline = time.monotonic() + 20
        last = self.read()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.read()
            if now == last and now["commits"] >= least_commits:
                return now
            last = now
        return last

    def close(self) -> None:
        self.tables.close()
        self.database.close()


@pytest.mark.slow
@pytest.mark.postgresql
def test_postgresql_counters_match_every_mode(sb_pg: str) -> None:
    """pg_stat_statements needs shared_preload_libraries (a restart), so the evidence is
    pg_stat_user_tables (rows inserted/updated/deleted, scans) and pg_stat_database
    (commits), read after the session's backend has exited and flushed its counters."""
    url = pg_url(sb_pg)
    prepare(url, TABLES, SIZE, seed=2)
    with psycopg.connect(host=PG_HOST, user="postgres", dbname=sb_pg, autocommit=True) as conn:
        for n in range(1, TABLES + 1):  # leave autovacuum nothing to do (its commits count too)
            conn.execute(f"VACUUM ANALYZE sbtest{n}")
    counters = PgCounters(sb_pg)
    for mode, extra in VARIANTS:
        ready = configured(url, mode, extra, seed=variant_seed(extra))
        before = counters.settled()
        conn = open_target(url).connect()
        conn.execute("SET plan_cache_mode = force_generic_plan")  # no planner probes of the index
        conn.commit()
        _, session = open_session(url, mode, extra, conn, ready)
        inputs = run_transactions(session, 20)
        conn.close()
        sent = expected_statements(inputs)
        statements = sum(session.statement_counts.values())
        commits = 20 if session.plan.transactional else statements
        # the session's backend start and its SET commit too, and so does each PREPARE sent
        # outside a transaction block (autocommit modes prepare on first use)
        prepares = 0 if session.plan.transactional else len({sql for t in inputs for sql, _ in t})
        commits += 2 + prepares
        after = counters.settled(before["commits"] + commits)
        delta = {k: after[k] - before[k] for k in after}
        rows_deleted = sent["DELETE"] if mode != "oltp_delete" else session.statement_counts["write"]
        assert (delta["INSERT"], delta["UPDATE"], delta["DELETE"]) == (sent["INSERT"], sent["UPDATE"], rows_deleted), \
            (mode, extra, session.statement_counts)
        assert delta["scans"] == pg_index_scans(inputs), mode
        assert commits <= delta["commits"] <= commits + 3, (mode, extra, delta)  # autovacuum may add a few
        if mode != "oltp_delete":
            mix = statement_mix(parse_options({"mode": mode, **extra}))
            assert session.statement_counts == {k: 20 * v for k, v in mix.items()}, (mode, extra)
    counters.close()


@pytest.mark.slow
@pytest.mark.mysql
def test_mariadb_session_status_matches_every_mode(sb_mysql: str) -> None:
    url = mysql_url(sb_mysql)
    prepare(url, TABLES, SIZE, seed=2)
    names = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_begin", "Com_commit", "Com_stmt_prepare",
             "Com_stmt_execute")

    def status(conn: Any) -> dict[str, int]:
        cur = conn.cursor()
        cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in names)))
        values = {str(name): int(value) for name, value in cur.fetchall()}
        cur.close()
        return values

    # on mysqlclient the default path is prepared statements (libmariadb at hand), and text beside it
    paths = open_target(url).client_paths()
    if importlib.util.find_spec("MySQLdb") is not None:
        assert paths == ("prepared", "text"), libmariadb.unavailable()
    text = [("oltp_read_write", {"client": "text"}), ("oltp_point_select", {"client": "text"})] if paths else []
    for mode, extra in [*text, *VARIANTS]:  # before oltp_delete's holes
        _, session = open_session(url, mode, extra)
        before = status(session.conn)
        inputs = run_transactions(session, 20)
        after = status(session.conn)
        delta = {k[4:].upper(): after[k] - before[k] for k in names}
        sent = expected_statements(inputs)
        trx = 20 if session.plan.transactional else 0
        # prepared: each distinct statement prepared once on the connection, every one executed
        # as such (BEGIN and COMMIT too, as sysbench sends them); text and DB-API: none
        prepared = session.client == "prepared"
        distinct = len({sql for t in inputs for sql, _ in t}) if prepared else 0
        executed = sum(len(t) for t in inputs) if prepared else 0
        assert delta == {**sent, "BEGIN": trx, "COMMIT": trx, "STMT_PREPARE": distinct, "STMT_EXECUTE": executed}, \
            (mode, extra)
        if mode != "oltp_delete":
            mix = statement_mix(parse_options({"mode": mode, **extra}))
            assert session.statement_counts == {k: 20 * v for k, v in mix.items()}, (mode, extra)
        session.conn.close()


# -- tables sysbench prepared, and sysbench's own counts -------------------------------------------
def sysbench_summary(args: list[str]) -> dict[str, int]:
    """sysbench's read/write/other counts, with a seed of its own for every run.

    Left to itself sysbench seeds from the clock in whole seconds, so two runs in one
    second draw the same stream: a later run's UPDATE can then write the very c an
    earlier run wrote to the same row, change nothing, and count as "other".
    """
    seed = f"--rand-seed={random.randrange(1, 2**31)}"
    out = subprocess.run([need_sysbench(), *args, seed], check=True, capture_output=True, text=True).stdout
    found = dict(re.findall(r"^\s+(read|write|other):\s+(\d+)", out, re.MULTILINE))
    return {k: int(v) for k, v in found.items()}


def table_shape(url: str, table: str) -> dict[str, Any]:
    """Columns (name, type, nullability, default), primary key and indexed columns, as reflected."""
    inspector = sa.inspect(open_target(url).engine)
    columns = [(c["name"], str(c["type"]), c["nullable"], str(c.get("default")).replace(table, "T"))
               for c in inspector.get_columns(table)]
    return {"columns": columns, "pk": inspector.get_pk_constraint(table)["constrained_columns"],
            "indexes": sorted(tuple(i["column_names"]) for i in inspector.get_indexes(table))}


def our_table_shape(url: str) -> dict[str, Any]:
    """Our DDL template created as sbtest999999 (indexes included) next to sysbench's tables."""
    target = open_target(url)
    tables, indexes = split_ddl(schema_file("sysbench", target.dialect).read_text())
    with target.engine.begin() as conn:
        for statement in table_ddl(tables + indexes[:1], 1):
            conn.exec_driver_sql(statement.replace("sbtest1", "sbtest999999").replace("k_1", "k_999999"))
    try:
        shape = table_shape(url, "sbtest999999")
    finally:
        with target.engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE sbtest999999")
    return shape


def sysbench_prepared_runs_like_sysbench(url: str, connection: list[str]) -> None:
    base = [f"--tables={TABLES}", f"--table-size={SIZE}", *connection]
    subprocess.run([need_sysbench(), "oltp_read_write", *base, "prepare"], check=True, capture_output=True)
    meta = SysbenchWorkload().verify_schema(open_target(url))
    assert (meta["source"], meta["scale"], meta["const_table_size"]) == ("sysbench", "2", "1000")
    assert "prepared by sysbench" in meta["note"] and "\n" not in meta["note"]
    checks = evaluate_checks(SysbenchWorkload(), url)
    assert checks[1] == 0 and checks[2] == 0
    assert our_table_shape(url) == table_shape(url, "sbtest1")
    events = 30
    for mode in MODES:  # oltp_delete late: it leaves holes that make later writes "other"
        theirs = sysbench_summary([mode, *base, f"--events={events}", "--time=0", "--threads=1", "run"])
        _, session = open_session(url, mode)
        run_transactions(session, events)
        session.conn.close()
        if mode == "oltp_delete":  # which deletes find a row depends on the ids drawn
            assert sum(theirs.values()) == sum(session.statement_counts.values()) == events
        else:
            assert session.statement_counts == theirs, mode


@pytest.mark.slow
@pytest.mark.postgresql
def test_postgresql_tables_prepared_by_sysbench(sb_pg: str) -> None:
    sysbench_prepared_runs_like_sysbench(pg_url(sb_pg), ["--db-driver=pgsql", f"--pgsql-host={PG_HOST}",
                                                         "--pgsql-user=postgres", f"--pgsql-db={sb_pg}"])


@pytest.mark.slow
@pytest.mark.mysql
def test_mariadb_tables_prepared_by_sysbench(sb_mysql: str) -> None:
    sysbench_prepared_runs_like_sysbench(mysql_url(sb_mysql), [f"--mysql-host={MYSQL_HOST}", "--mysql-user=root",
                                                               f"--mysql-db={sb_mysql}"])


@pytest.mark.slow
@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgresql),
                                     pytest.param("mysql", marks=pytest.mark.mysql)])
def test_odbc_runs_the_same_statements(backend: str, request: pytest.FixtureRequest) -> None:
    """Through pyodbc (the generic DB-API runner): same statements, same counts."""
    import pyodbc

    wanted = {"postgresql": "PostgreSQL", "mysql": "MariaDB"}[backend]
    if not any(wanted in name for name in pyodbc.drivers()):
        unavailable(f"an ODBC driver for {wanted}", pyodbc.drivers())
    db = request.getfixturevalue("sb_pg" if backend == "postgresql" else "sb_mysql")
    host = PG_HOST if backend == "postgresql" else MYSQL_HOST
    user = "postgres" if backend == "postgresql" else "root"
    url = f"{backend}+pyodbc://{user}@{host}/{db}"
    prepare(url, 1, 300, seed=2)
    for mode in ("oltp_read_write", "oltp_insert", "select_random_ranges"):
        wl, session = open_session(url, mode)
        assert type(session.runner).__name__ == "DbapiCountingCursor"
        run_transactions(session, 10)
        assert session.statement_counts == {k: 10 * v for k, v in wl.statement_mix().items()}, (backend, mode)
        session.conn.close()


# -- through the engine ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.postgresql
def test_engine_runs_oltp_insert_and_the_rows_match_the_commits(sb_pg: str) -> None:
    from tpsbench.engine import coordinator as engine
    url = pg_url(sb_pg)
    prepare(url, TABLES, SIZE, seed=2)
    target = open_target(url)
    wl = SysbenchWorkload()
    wl.configure({"mode": "oltp_insert"})
    meta = wl.verify_schema(target)
    ctx = RunContext("sysbench", url, int(meta["scale"]), 1, {"table_size": SIZE}, {"mode": "oltp_insert"})
    conn = target.connect()
    before = wl.database_counts(conn)
    steps = [engine.LoadStep(users=2, duration_s=1.5, interval_s=0.5),
             engine.LoadStep(users=3, duration_s=1.5, interval_s=0.5)]
    outcome = engine.run_steps(ctx, wl, steps, processes=1, live=None)
    after = wl.database_counts(conn)
    conn.close()
    commits: dict[str, int] = {}
    for step in outcome.steps:  # the second step reuses the first one's connections
        total = step.total()
        assert not step.problems and sum(t.errors for t in total.txns.values()) == 0, step.problems
        for name, txn in total.txns.items():
            commits[name] = commits.get(name, 0) + txn.commits
    assert commits["oltp_insert"] > 0
    assert after["rows"] - before["rows"] == wl.expected_counts(commits)["rows"]


@pytest.mark.slow
@pytest.mark.postgresql
@pytest.mark.parametrize("multiplex", [True, False], ids=["shared-thread", "thread-per-user"])
def test_engine_qps_split_matches_postgresql_counters(sb_pg: str, multiplex: bool) -> None:
    """Reads, writes and other as the engine reports them (worker -> coordinator, two workers,
    two steps, every interval; users on the workers' shared threads or on threads of their
    own), against the server's own counters of the scratch database:
    every read is one index scan; every write changed exactly one row and every other DML
    statement none (ids are primary keys); a duplicate-key INSERT that ended a transaction
    (an expected rollback) may have left a row counted by the server and not by us."""
    from tpsbench.engine import coordinator as engine
    url = pg_url(sb_pg)
    prepare(url, TABLES, SIZE, seed=2)
    with psycopg.connect(host=PG_HOST, user="postgres", dbname=sb_pg, autocommit=True) as conn:
        for n in range(1, TABLES + 1):
            conn.execute(f"VACUUM ANALYZE sbtest{n}")
        conn.execute(f'ALTER DATABASE "{sb_pg}" SET plan_cache_mode = force_generic_plan')  # no index probes
    counters = PgCounters(sb_pg)
    steps = [engine.LoadStep(users=2, duration_s=1.0, rampup_s=0.3, interval_s=0.5, multiplex=multiplex),
             engine.LoadStep(users=3, duration_s=1.0, rampup_s=0.3, interval_s=0.5, multiplex=multiplex)]
    for mode in ("oltp_point_select", "oltp_read_only", "oltp_write_only"):  # the first: one statement a transaction
        wl, ctx = configured(url, mode, {"rand_type": "uniform"}, seed=11)
        before = counters.settled()
        outcome = engine.run_steps(ctx, wl, steps, processes=2, live=None)
        totals = [step.total() for step in outcome.steps]
        assert all(not step.problems for step in outcome.steps) and all(t.total("errors") == 0 for t in totals)
        got = {kind: sum(t.statements[kind] for t in totals) for kind in ("read", "write", "other")}
        commits = sum(t.total("commits") for t in totals)
        rollbacks = sum(t.total("rollbacks") for t in totals)
        delta = {k: v - before[k] for k, v in counters.settled(before["commits"] + commits).items()}
        assert commits > 0 and all(s.summary.qps["total"] > 0 for s in outcome.steps)
        if mode == "oltp_point_select":
            assert got == {"read": delta["scans"], "write": 0, "other": 0} == {"read": commits, "write": 0, "other": 0}
        elif mode == "oltp_read_only":
            assert got == {"read": delta["scans"], "write": 0, "other": 2 * commits} == \
                {"read": 14 * commits, "write": 0, "other": 2 * commits}
        else:
            changed = delta["INSERT"] + delta["UPDATE"] + delta["DELETE"]
            assert got["write"] <= changed <= got["write"] + rollbacks, (got, delta, rollbacks)
            if not sum(t.total("retries") for t in totals):  # a deadlocked attempt sent an unknown part
                # BEGIN and COMMIT around 4 DML statements; BEGIN, 3 DML and ROLLBACK after a duplicate
                assert got["write"] + got["other"] == 6 * commits + 5 * rollbacks
    counters.close()


@pytest.mark.slow
@pytest.mark.mysql
@pytest.mark.alone  # the server's global statement counters
def test_engine_on_mariadb_sends_every_statement_of_the_mix(sb_mysql: str) -> None:
    """oltp_read_write through the engine (users on the workers' shared threads, two
    steps): MariaDB's own statement counters (global Com_*, which only this test moves
    while it runs) agree with the statements the engine reported and with the mix."""
    from tpsbench.engine import coordinator as engine
    url = mysql_url(sb_mysql)
    prepare(url, TABLES, SIZE, seed=2)
    wl, ctx = configured(url, "oltp_read_write", {"rand_type": "uniform"}, seed=13)
    admin = pymysql.connect(host=MYSQL_HOST, user="root", autocommit=True)
    names = ("Com_select", "Com_update", "Com_insert", "Com_delete", "Com_begin", "Com_commit", "Com_rollback")

    def status() -> dict[str, int]:
        with admin.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(", ".join(f"'{n}'" for n in names)))
            return {name: int(value) for name, value in cur.fetchall()}

    before = status()
    steps = [engine.LoadStep(users=2, duration_s=1.0, rampup_s=0.3, interval_s=0.5),
             engine.LoadStep(users=4, duration_s=1.0, rampup_s=0.3, interval_s=0.5)]
    outcome = engine.run_steps(ctx, wl, steps, processes=2, live=None)
    delta = {k: v - before[k] for k, v in status().items()}
    admin.close()
    totals = [step.total() for step in outcome.steps]
    assert all(not step.problems for step in outcome.steps) and all(t.total("errors") == 0 for t in totals)
    got = {kind: sum(t.statements[kind] for t in totals) for kind in ("read", "write", "other")}
    commits = sum(t.total("commits") for t in totals)
    rollbacks = sum(t.total("rollbacks") for t in totals)
    assert commits > 0 and delta["Com_commit"] == commits and delta["Com_rollback"] == rollbacks
    assert delta["Com_select"] == got["read"] + 1  # and the engine's one SELECT @@GLOBAL.max_connections
    # DML that changed no row is "other" to sysbench, as BEGIN, COMMIT and ROLLBACK are
    assert got["write"] + got["other"] == sum(delta[name] for name in names[1:])
    if not rollbacks and not sum(t.total("retries") for t in totals):
        assert got["read"] == 14 * commits and got["write"] + got["other"] == 6 * commits


@pytest.mark.postgresql
def test_postgresql_connection_kept_for_the_next_session_keeps_its_statements(sb_pg: str) -> None:
    """The engine keeps a user's connection from one step to the next and opens a new
    session on it: the statements prepared by the first session must not be prepared twice."""
    url = pg_url(sb_pg)
    prepare(url, 1, 200, seed=2)
    conn = open_target(url).connect()
    for _ in range(2):
        _, session = open_session(url, "oltp_read_only", conn=conn)
        run_transactions(session, 2)
        assert session.statement_counts["read"] == 28
    conn.close()


@pytest.mark.postgresql
def test_postgresql_disconnect_is_recognised_and_rebind_recovers(sb_pg: str) -> None:
    url = pg_url(sb_pg)
    prepare(url, 1, 200, seed=2)
    _, session = open_session(url, "oltp_point_select")
    run_transactions(session, 3)
    (pid,) = session.conn.execute("SELECT pg_backend_pid()").fetchone()
    with psycopg.connect(host=PG_HOST, user="postgres", dbname="postgres", autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    time.sleep(0.2)
    with pytest.raises(Exception) as info:
        run_transactions(session, 1)
    assert session.target.is_disconnect(info.value)
    session.rebind(session.target.connect())
    run_transactions(session, 3)
    assert session.statement_counts["read"] == 6
