"""TPC-E's stored procedures (workloads/tpce/procedures.py) against the client SQL they replace.

One build per server (test_tpce_transactions.built: 1,000 customers, a day of initial
trades), PostgreSQL and MariaDB; a server that does not answer skips its tests, or fails
them with CI=true. Each transaction runs its client-SQL frames first, in a transaction
that is rolled back after the rows it touched were read through it, then its procedure
on the same inputs, committed: the outputs must be equal, and so must those rows and the
row counts of the tables it writes. The time a transaction stamps on its rows differs
between the two by the moment it ran, so such times (those after the tests began) read
as "now", and such dates as days from then. Rows of equal time come in no set order (a
trade's SBMT and CMPT in the same second): lists of them are compared sorted. Then a
short run with procedures on, its honesty reconciliation and ``check tpce``; the
requested rollback; the rounding to cents; SQLite's refusal on the command line.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_in_process
from test_cli_errors import assert_one_line_error
from test_tpce_transactions import Db, built, order

from tpsbench.commands.check import check
from tpsbench.commands.run import RunConfig, run
from tpsbench.core.procedures import install_for_run
from tpsbench.workloads.tpce import TpceWorkload, procedures, trade_order
from tpsbench.workloads.tpce.market_feed import MarketFeedInputs
from tpsbench.workloads.tpce.mee import MarketExchange
from tpsbench.workloads.tpce.session import TpceSession
from tpsbench.workloads.tpce.sql import cents
from tpsbench.workloads.tpce.trade_lookup import TradeLookupInputs
from tpsbench.workloads.tpce.trade_result import TradeResultInputs

#: a query of the rows a transaction touched: SQL with ``?`` markers, and its parameters
Query = tuple[str, tuple]
#: what a test began at (UTC, as the transactions stamp rows): later times read as "now"
SINCE = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(seconds=2)
#: per writer, the tables it adds rows to or deletes rows from, whose counts must come out the same
WRITTEN = {
    "trade_order": ("trade", "trade_history", "trade_request"),
    "trade_result": ("trade_history", "holding", "holding_history", "holding_summary", "settlement",
                     "cash_transaction"),
    "market_feed": ("trade_history", "trade_request"),
    "trade_update": (),
}


@pytest.fixture(scope="module", params=[
    pytest.param("postgresql", marks=pytest.mark.postgresql),
    # a copy of the build and its routines, seconds on MariaDB: the quick lane calls PostgreSQL's
    pytest.param("mysql", marks=[pytest.mark.mysql, pytest.mark.slow]),
])
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
       db_template: Callable[..., str]) -> Iterator[Db]:
    with built(request.param, tmp_path_factory, db_template) as probe:
        yield probe


def session(db: Db, mode: str, user_id: int, exchange: MarketExchange | None = None) -> TpceSession:
    """A user with the run option procedures=``mode``."""
    ctx = replace(db.ctx, options={"procedures": mode})
    return TpceSession(ctx, user_id, 2, db.connect(), db.target, exchange)


@pytest.fixture(scope="module")
def routines(db: Db) -> Db:
    """The database with the routines installed, as a run installs them."""
    install_for_run(TpceWorkload(), db.target, users=2)
    return db


@pytest.fixture
def pair(routines: Db) -> tuple[TpceSession, TpceSession]:
    """A client-SQL user and a procedure-calling one."""
    client, calling = session(routines, "off", 0), session(routines, "on", 1)
    assert not client.calls and calling.calls == set(procedures.CALLS)
    return client, calling


def now_as_marker(value: object) -> object:
    """A time this test's transactions stamped ("now"), a day counted from theirs (a
    settlement's due date: "today+2"), or the value as read."""
    if isinstance(value, datetime) and value >= SINCE:
        return "now"
    if isinstance(value, date) and not isinstance(value, datetime) and value >= SINCE.date():
        return f"today{(value - SINCE.date()).days:+d}"
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


def read(cur: Any, db: Db, name: str, queries: list[Query]) -> list[list[tuple]]:
    """The rows of ``queries`` and the row counts of the tables ``name`` writes, through ``cur``."""
    out = []
    for sql, params in [*queries, *((f"SELECT COUNT(*) FROM {table}", ()) for table in WRITTEN[name])]:
        cur.execute(sql.replace("?", db.target.placeholder()), params)
        out.append(sorted((tuple(now_as_marker(v) for v in row) for row in cur.fetchall()), key=repr))
    return out


def unordered(output: Any) -> Any:
    """``output`` with the lists whose rows may tie on time sorted (the module docstring)."""
    history = getattr(output, "history", None)
    if isinstance(history, dict):
        return replace(output, history={t_id: sorted(changes) for t_id, changes in history.items()})
    if isinstance(history, list):
        return replace(output, history=sorted(history))
    return output


def both_ways(db: Db, pair: tuple[TpceSession, TpceSession], name: str, inputs: object,
              touched: Callable[[Any], list[Query]] | None = None) -> Any:
    """``name`` on ``inputs`` as client SQL (rolled back) and as a call (committed):
    asserts equal outputs and, for a writer, equal rows (``touched(output)``'s, and the
    counts of WRITTEN); returns the call's output."""
    client, calling = pair
    link = client.link
    try:
        expected = client.table[name].run(client, inputs)  # type: ignore[misc]  # every TPC-E transaction has its frames
        rows_then = read(link.cur, db, name, touched(expected)) if touched and expected is not None else None
    finally:
        link.rollback()
    got = calling.perform(name, inputs)
    assert unordered(got) == unordered(expected), name
    if rows_then is not None:
        cur = db.conn.cursor()  # the probe's last read ended its transaction: a fresh snapshot
        try:
            assert read(cur, db, name, touched(got)) == rows_then, name  # type: ignore[misc]  # touched is set: rows_then is only kept when it is
        finally:
            cur.close()
            db.conn.rollback()
    return got


def trade_rows(t_id: int) -> list[Query]:
    return [("SELECT * FROM trade WHERE t_id = ?", (t_id,)), ("SELECT * FROM trade_history WHERE th_t_id = ?", (t_id,)),
            ("SELECT * FROM trade_request WHERE tr_t_id = ?", (t_id,)),
            ("SELECT * FROM settlement WHERE se_t_id = ?", (t_id,)),
            ("SELECT * FROM cash_transaction WHERE ct_t_id = ?", (t_id,))]


def booked_rows(db: Db, t_id: int) -> list[Query]:
    """A Trade-Result's rows: its trade's, and its account's holdings, broker and balance."""
    acct, symbol = db.one("SELECT t_ca_id, t_s_symb FROM trade WHERE t_id = ?", t_id)
    return [*trade_rows(t_id),
            ("SELECT * FROM holding WHERE h_ca_id = ? AND h_s_symb = ?", (acct, symbol)),
            ("SELECT * FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?", (acct, symbol)),
            ("SELECT * FROM holding_history WHERE hh_t_id = ?", (t_id,)),
            ("SELECT * FROM customer_account WHERE ca_id = ?", (acct,)),
            ("SELECT * FROM broker WHERE b_id = (SELECT ca_b_id FROM customer_account WHERE ca_id = ?)", (acct,))]


# -- the writers ---------------------------------------------------------------------------------
def test_trade_order_and_trade_result_write_what_the_frames_write(db: Db,
                                                                  pair: tuple[TpceSession, TpceSession]) -> None:
    client, calling = pair
    world = calling.world
    (acct,), = db.rows("SELECT MIN(ca_id) FROM customer_account WHERE ca_tax_st = 1")  # pays tax on gains
    symbol = next(s.symbol for s in world.securities
                  if not db.rows("SELECT 1 FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?", acct, s.symbol))
    # a position opened, added to, sold LIFO in part at a gain, sold FIFO past flat on
    # margin (a short lot), covered
    scenario = [("TMB", 200, False, False, "20.00"), ("TMB", 400, False, False, "21.00"),
                ("TMS", 500, True, False, "25.00"), ("TMS", 300, False, True, "24.00"),
                ("TMB", 200, False, False, "23.00")]
    draws = random.Random(11)
    orders = [order(calling, kind, qty, acct, symbol, is_lifo=lifo, is_margin=margin)
              for kind, qty, lifo, margin, _ in scenario]
    prices = [Decimal(price) for *_, price in scenario]
    for _ in range(16):  # and skewed customers' orders of every kind, margin and tax included
        drawn = trade_order.inputs(calling.draw, calling.next_trade_id())
        orders.append(replace(drawn, trade_type=draws.choice(("TMB", "TMS")), roll_it_back=False))
        prices.append(Decimal(draws.randint(1500, 3500)).scaleb(-2))
    for at, (inputs, price) in enumerate(zip(orders, prices)):
        placed = both_ways(db, pair, "trade_order", inputs, lambda out, t=inputs.trade_id: trade_rows(t))
        booked = both_ways(db, pair, "trade_result", TradeResultInputs(inputs.trade_id, price),
                           lambda out, t=inputs.trade_id: booked_rows(db, t))
        assert (booked.symbol, booked.qty, booked.price) == (placed.symbol, placed.qty, price)
        if at == 2:
            assert booked.tax > 0  # the LIFO sale gained, on a taxed account
        if at == len(scenario) - 1:  # the short position covered: no lot, no summary
            assert not db.rows("SELECT 1 FROM holding_summary WHERE hs_ca_id = ? AND hs_s_symb = ?", acct, symbol)
    # limit orders, by company name as well, and a permitted executor and a stranger
    permitted_acct, people = next(iter(world.permitted.items()))
    f, last, tax = people[0]
    for inputs in (order(calling, "TLB", price="19.99", symbol=symbol, is_margin=True),
                   replace(order(calling, "TSL", symbol=symbol, price="30.00"), symbol=""),
                   order(calling, "TMS", acct=permitted_acct, exec_f_name=f, exec_l_name=last, exec_tax_id=tax)):
        assert both_ways(db, pair, "trade_order", inputs, lambda out, t=inputs.trade_id: trade_rows(t)) is not None
    stranger = order(calling, "TMS", acct=permitted_acct, exec_f_name="Nobody", exec_tax_id="X")
    with pytest.raises(LookupError, match="may not trade"):
        calling.perform("trade_order", stranger)
    with pytest.raises(LookupError, match="not submitted"):
        calling.perform("trade_result", TradeResultInputs(orders[0].trade_id, Decimal("1.00")))
    assert client.calls == frozenset()


def test_market_feed_triggers_the_same_orders_and_sends_them_back_to_the_exchange(
        db: Db, pair: tuple[TpceSession, TpceSession]) -> None:
    client, calling = pair
    rng = random.Random(5)
    securities = calling.world.securities[40:70]
    triggered = 0
    for _ in range(6):
        for _ in range(8):  # limit orders on the feed's securities, some in the money
            security = rng.choice(securities)
            placed = order(calling, rng.choice(("TLB", "TLS", "TSL")), symbol=security.symbol,
                           price=str(cents(security.price * Decimal(rng.uniform(0.95, 1.05)))))
            assert calling.perform("trade_order", placed) is not None
        entries = [(s.symbol, cents(s.price * Decimal(rng.uniform(0.94, 1.06))), rng.choice((100, 200)))
                   for s in (rng.choice(securities) for _ in range(20))]
        symbols = sorted({e[0] for e in entries})
        marks = ", ".join("?" * len(symbols))

        def touched(out: Any, marks: str = marks, symbols: list[str] = symbols) -> list[Query]:
            ids = [t.trade_id for t in out] or [0]
            in_ids = ", ".join(map(str, ids))
            return [(f"SELECT * FROM last_trade WHERE lt_s_symb IN ({marks})", tuple(symbols)),
                    (f"SELECT * FROM trade_request WHERE tr_s_symb IN ({marks})", tuple(symbols)),
                    (f"SELECT * FROM trade WHERE t_id IN ({in_ids})", ()),
                    (f"SELECT * FROM trade_history WHERE th_t_id IN ({in_ids})", ())]

        found = both_ways(db, pair, "market_feed", MarketFeedInputs(entries), touched)
        triggered += len(found)
    assert triggered > 5
    # back at the exchange: a feed's triggered orders become Trade-Results at their limit price
    exchange = MarketExchange(7, 0)
    market = db.market(exchange)  # the module's ctx: procedures auto, so calls on this server
    assert market.calls
    security = securities[0]
    buy = order(calling, "TLB", symbol=security.symbol, price="99.00")
    assert calling.perform("trade_order", buy) is not None
    assert market.execute("market_feed", MarketFeedInputs([(security.symbol, Decimal("50.00"), 100)] * 20))
    assert {o[2]: o[4] for o in exchange._orders}[buy.trade_id] == Decimal("99.00")


def test_trade_update_changes_what_the_frames_change(db: Db, pair: tuple[TpceSession, TpceSession]) -> None:
    client, calling = pair
    frames_seen = set()
    for _ in range(24):
        inputs = client.inputs("trade_update")
        if inputs.frame > 1:  # from the first initial trade on, so that there is something to change
            inputs = replace(inputs, start_dts=str(calling.world.trade_times[0]))
        frames_seen.add(inputs.frame)

        def touched(out: Any) -> list[Query]:
            ids = ", ".join(str(t[0]) for t in out.trades) or "0"
            return [(f"SELECT t_id, t_exec_name FROM trade WHERE t_id IN ({ids})", ()),
                    (f"SELECT * FROM settlement WHERE se_t_id IN ({ids})", ()),
                    (f"SELECT * FROM cash_transaction WHERE ct_t_id IN ({ids})", ())]

        out = both_ways(db, pair, "trade_update", inputs, touched)
        assert out.trades
    assert frames_seen == {1, 2, 3}


# -- the readers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["trade_lookup", "security_detail", "customer_position"])
def test_the_readers_answer_what_the_frames_read(db: Db, pair: tuple[TpceSession, TpceSession], name: str) -> None:
    client, calling = pair
    seen: set[object] = set()
    for _ in range(40):
        inputs = client.inputs(name)
        if name == "trade_lookup":
            seen.add(inputs.frame)
        elif name == "security_detail":
            inputs = replace(inputs, access_lob=len(seen) % 2 == 0)
            seen.add(inputs.access_lob)
        else:
            seen.add((inputs.cust_id == 0, inputs.get_history))
        both_ways(db, pair, name, inputs)
    assert len(seen) == {"trade_lookup": 4, "security_detail": 2, "customer_position": 4}[name]
    empty = both_ways(db, pair, "trade_lookup", TradeLookupInputs(4, [], 1, "", "2099-01-01 00:00:00", ""))
    assert empty.trades == [] and empty.holding_history == []


def test_money_is_rounded_to_cents_as_the_driver_rounds_it(db: Db) -> None:
    """Half a cent goes to the even cent, as Decimal.quantize has it (the frames' cents)."""
    values = ["0.505", "0.515", "-0.505", "-0.515", "2.675", "1.004999", "10.0050001", "3.125", "7"]
    for text in values:
        (got,), = db.rows(f"SELECT tpce_cents({text})")
        assert Decimal(str(got)) == cents(Decimal(text)), text


# -- runs ------------------------------------------------------------------------------------------
@pytest.mark.slow  # a run of seconds on each server
def test_a_run_with_procedures_on_reconciles_and_passes_the_checks(db: Db, tmp_path: Path) -> None:
    record = run(RunConfig("tpce", db.url, users=[4], rampup_s=0.5, duration_s=5.0, interval_s=2.5, seed=8,
                           options={"procedures": "on"}, results_url=f"sqlite:///{tmp_path}/results.db"), live=None,
                 observers=[])
    assert record.status == "completed" and not record.outcome.steps[0].problems
    assert record.honesty["match"], record.honesty
    txns = record.outcome.steps[0].summary.txns
    assert all(t.errors == 0 for t in txns.values()), {n: t.errors for n, t in txns.items()}
    assert txns["trade_result"].commits > 0 and txns["market_feed"].commits > 0 and txns["trade_update"].commits > 0
    # the 1% requested rollback counts as a rollback, not as an error
    assert txns["trade_order"].rollbacks > 0 and txns["trade_order"].errors == 0
    results = check("tpce", db.url)
    assert {r.number: r.violations for r in results if r.violations is not None and not r.passed} == {}


def test_the_requested_rollback_is_a_rollback_and_leaves_no_trace(db: Db,
                                                                  pair: tuple[TpceSession, TpceSession]) -> None:
    _, calling = pair
    counts = ("SELECT (SELECT COUNT(*) FROM trade), (SELECT COUNT(*) FROM trade_history),"
              " (SELECT COUNT(*) FROM trade_request)")
    before = db.one(counts)
    exchange = MarketExchange(7, 0)
    user = session(db, "on", 1, exchange)
    for kind in ("TMB", "TLS"):
        assert user.execute("trade_order", order(user, kind, price="99.00", roll_it_back=True)) is False
    assert db.one(counts) == before and not exchange._orders and not exchange._limits


def test_procedures_on_sqlite_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """In this process (conftest.cli_in_process): a SQLite build loads here, the runs are refused before they start."""
    url = f"sqlite:///{tmp_path / 'tpce.db'}"
    built_ = cli_in_process("build", "tpce", "--customers", "1000", "--trade-days", "1", "--market-days", "1", "--db",
                            url, cwd=tmp_path)
    assert built_.returncode == 0, built_.stderr
    result = cli_in_process("run", "tpce", "--db", url, "--procedures", "on", "--users", "1", "--duration", "1s",
                            cwd=tmp_path)
    assert_one_line_error(result, "TPC-E has no stored procedures for sqlite", "--procedures off")
    assert result.returncode == 2
    assert not (tmp_path / "tpsbench-results.db").exists()
    bad = cli_in_process("run", "tpce", "--db", url, "--procedures", "maybe", "--users", "1", "--duration", "1s",
                         cwd=tmp_path)
    assert bad.returncode == 2 and "procedures" in bad.stderr


def test_the_option_is_refused_where_there_are_no_procedures() -> None:
    """Calls where the schema has the routines and the driver reads their answers; a bad
    value, or ``on`` through ODBC or on SQL Server, is a one-line error naming the way out."""
    from tpsbench.core.errors import TpsbenchError
    from tpsbench.targets import open_target

    odbc = open_target("postgresql+pyodbc://postgres@127.0.0.1/x?driver=PostgreSQL+Unicode")
    mssql = open_target("mssql+pyodbc://sa@127.0.0.1/x?driver=ODBC+Driver+18+for+SQL+Server")
    native = open_target("postgresql://postgres@127.0.0.1/x")
    assert procedures.uses_procedures({}, native) and not procedures.uses_procedures({"procedures": "off"}, native)
    for target in (odbc, mssql):
        assert not procedures.uses_procedures({}, target)
        with pytest.raises(TpsbenchError, match="no stored procedures for .*; use --procedures off"):
            procedures.uses_procedures({"procedures": "on"}, target)
    with pytest.raises(TpsbenchError, match="procedures='maybe': use one of auto, on, off"):
        procedures.uses_procedures({"procedures": "maybe"}, native)
