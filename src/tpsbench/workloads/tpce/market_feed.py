"""Market-Feed (TPC-E, B2): the ticker's last 20 trades reach the brokerage's prices.

Sent by the market exchange emulator (mee.py) once per 20 ticker entries. One
read-write transaction:

1. one ``UPDATE last_trade SET lt_price = CASE lt_s_symb WHEN .. END, lt_vol = lt_vol +
   CASE ..., lt_dts = now WHERE lt_s_symb IN (..)`` for the feed's symbols, where the
   frame updates them one by one: entries of one symbol are applied in their order
   (the last price stays, the volumes add up), and the rows are locked in the primary
   key's order, so two feeds never deadlock on them. The CASE values are cast, because
   PostgreSQL gives an untyped parameter in a CASE the type text;
2. the limit orders the prices trigger, locked: a stop-loss or limit buy whose bid is
   at or above a price the symbol had in the feed, a limit sell whose bid is at or below
   one; per symbol that is its lowest and its highest price of the feed;
3. for those, ``UPDATE trade`` to submitted (SBMT), ``DELETE`` their TRADE_REQUEST rows,
   INSERT TRADE_HISTORY, 20 at a time;
4. commit; the emulator then sends the triggered orders to market, as Trade-Results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tpsbench.core.sql import SqlDialect, to_decimal
from tpsbench.workloads.tpce import calls
from tpsbench.workloads.tpce.sql import MAX_TRADES, as_text, counted, marks, stamp

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

#: ticker entries per feed
FEED_ENTRIES = 20
#: a ticker entry: (symbol, price, shares traded)
Entry = tuple[str, Decimal, int]
#: tpce_market_feed's parameters, as PostgreSQL types (calls.routine)
ROUTINE = ("VARCHAR[]", "NUMERIC[]", "INTEGER[]", "NUMERIC[]", "NUMERIC[]", "TIMESTAMP")


@dataclass(slots=True)
class MarketFeedInputs:
    #: the feed's entries, in ticker order
    entries: list[Entry]


@dataclass(slots=True)
class Triggered:
    """A limit order a feed set off: the emulator's next Trade-Result."""

    trade_id: int
    symbol: str
    qty: int
    bid_price: Decimal
    trade_type: str


@dataclass(frozen=True, slots=True)
class MarketFeedSql:
    mf_last_trade_k: tuple[str | None, ...]
    mf_requests_k: tuple[str | None, ...]
    mf_trades_k: tuple[str | None, ...]
    mf_delete_k: tuple[str | None, ...]
    mf_history_k: tuple[str | None, ...]
    #: the stored procedure's call ("" where the dialect has none)
    call: str


def statements(d: SqlDialect) -> MarketFeedSql:
    triggered = ("(tr_s_symb = ? AND ((tr_tt_id IN ('TSL', 'TLB') AND tr_bid_price >= ?)"
                 " OR (tr_tt_id = 'TLS' AND tr_bid_price <= ?)))")
    return MarketFeedSql(
        mf_last_trade_k=counted(lambda k: (
            f"UPDATE last_trade SET lt_price = CASE lt_s_symb {' '.join(['WHEN ? THEN CAST(? AS DECIMAL(8,2))'] * k)}"
            f" END, lt_vol = lt_vol + CASE lt_s_symb {' '.join([f'WHEN ? THEN {d.int_param}'] * k)} END,"
            f" lt_dts = ? WHERE lt_s_symb IN ({marks(k)})"), FEED_ENTRIES),
        mf_requests_k=counted(lambda k: (
            f"SELECT tr_t_id, tr_s_symb, tr_qty, tr_bid_price, tr_tt_id FROM trade_request{d.table_lock}"
            f" WHERE {' OR '.join([triggered] * k)} ORDER BY tr_t_id{d.row_lock}"), FEED_ENTRIES),
        mf_trades_k=counted(lambda k: (
            f"UPDATE trade SET t_dts = ?, t_st_id = 'SBMT' WHERE t_id IN ({marks(k)})")),
        mf_delete_k=counted(lambda k: f"DELETE FROM trade_request WHERE tr_t_id IN ({marks(k)})"),
        mf_history_k=counted(lambda k: (
            "INSERT INTO trade_history (th_t_id, th_dts, th_st_id) VALUES "
            + ", ".join(["(?, ?, 'SBMT')"] * k))),
        call=calls.routine(d, "market_feed", ROUTINE),
    )


def dispatched(user: FramesSession) -> MarketFeedInputs:
    """The inputs of the exchange's work the session runs: its ticker entries."""
    work = user.work
    assert work is not None, "a Market-Feed is the exchange's work"
    return MarketFeedInputs(work.entries)


def run(user: FramesSession, inp: MarketFeedInputs) -> list[Triggered]:
    """The feed on the user's link, its transaction left open for the caller to commit; the
    limit orders it triggered."""
    link, s = user.link, user.sql.market_feed
    cur, money = link.cur, link.money
    ordered = per_symbol(inp.entries)
    now = stamp(datetime.now(UTC))
    link.begin()
    prices: list[Any] = []
    volumes: list[Any] = []
    requests: list[Any] = []
    for symbol, (price, volume, lowest, highest) in ordered:
        prices += (symbol, money(price))
        volumes += (symbol, volume)
        requests += (symbol, money(lowest), money(highest))
    k = len(ordered)
    cur.execute(s.mf_last_trade_k[k], [*prices, *volumes, now, *(symbol for symbol, _ in ordered)])
    cur.execute(s.mf_requests_k[k], requests)
    found = triggered(cur.fetchall())
    for at in range(0, len(found), MAX_TRADES):
        ids = [t.trade_id for t in found[at:at + MAX_TRADES]]
        cur.execute(s.mf_trades_k[len(ids)], [now, *ids])
        cur.execute(s.mf_delete_k[len(ids)], ids)
        history: list[Any] = []
        for t_id in ids:
            history += (t_id, now)
        cur.execute(s.mf_history_k[len(ids)], history)
    return found


def per_symbol(entries: list[Entry]) -> list[tuple[str, list[Any]]]:
    """The feed's symbols in symbol order, each with its last price, its volume, and its
    lowest and highest price in the feed (the frame's inputs, procedures.py's too)."""
    symbols: dict[str, list[Any]] = {}
    for symbol, price, qty in entries:
        seen = symbols.get(symbol)
        if seen is None:
            symbols[symbol] = [price, qty, price, price]
        else:
            seen[0], seen[1], seen[2], seen[3] = price, seen[1] + qty, min(seen[2], price), max(seen[3], price)
    return sorted(symbols.items())


def triggered(rows: Iterable[Sequence[Any]]) -> list[Triggered]:
    """The triggered orders of (t_id, symbol, qty, bid, type) rows, as read."""
    return [Triggered(int(t_id), as_text(symb), int(qty), to_decimal(bid), as_text(tt))
            for t_id, symb, qty, bid, tt in rows]


def call(user: FramesSession, inp: MarketFeedInputs) -> tuple[str, tuple]:
    """The whole transaction as one call of tpce_market_feed (procedures.py): per symbol,
    in symbol order as the frame has them, its last price, its volume, its lowest and its
    highest price, one list each."""
    link, s = user.link, user.sql.market_feed
    ordered = per_symbol(inp.entries)
    columns = zip(*(values for _, values in ordered))
    return s.call, (calls.as_list(link, [symbol for symbol, _ in ordered]),
                    *(calls.as_list(link, c) for c in columns), calls.now())


def answer(user: FramesSession, inp: MarketFeedInputs, error: Exception | None) -> bool:
    return calls.answered(user, inp, error, decoded)


def decoded(user: FramesSession, inp: MarketFeedInputs) -> list[Triggered]:
    link = user.link
    return triggered(calls.parts(link, ((range(5), True),), False)[0])
