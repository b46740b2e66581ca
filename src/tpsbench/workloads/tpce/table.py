"""TPC-E's transactions as one table (tpsbench.core.transactions), in report order.

The emulated customers (the users) deal the mix of the brief's B2 without Trade-Result
and Market-Feed, which come from the market exchange emulator (mee.py) alone: per 1000
transactions of the whole mix 49 Broker-Volume, 130 Customer-Position, 180 Market-Watch,
140 Security-Detail, 80 Trade-Lookup, 101 Trade-Order, 190 Trade-Status and 20
Trade-Update, i.e. a deck of 890 cards that each user shuffles on its own and deals to
the end (every window of 890 of one user's transactions is exactly at the weights, as
TPC-C's deck is). Trade-Result (100 of the 1000) and Market-Feed (10) then emerge from
the orders the Trade-Orders place: they have no cards, and their inputs are the
exchange's work (``dispatched``). Data-Maintenance has none either: a component of its
own sends it once a minute (maintenance.py).

Every transaction runs as its frames and a commit (``run``); seven have a stored
procedure (procedures.py) and go as one call of it where the run turns calls on. The
rules set no keying or think times for TPC-E's customers: --keying and --think apply.

Each transaction module writes its own SQL (its ``statements(d)``: a dataclass of its
statements and, where it has one, its stored procedure's call); :class:`TpceSql` puts
them together once per (dialect, marker) and process, so that every session of a worker,
the market exchange emulator's and Data-Maintenance's included, shares one table and
nothing is formatted on the hot path. A transaction reaches its own statements as
``user.sql.<its name>``, which a type checker follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect
from tpsbench.core.target import Target
from tpsbench.core.transactions import Transaction, TransactionTable
from tpsbench.workloads.tpce import (
    broker_volume,
    customer_position,
    data_maintenance,
    market_feed,
    market_watch,
    security_detail,
    trade_lookup,
    trade_order,
    trade_result,
    trade_status,
    trade_update,
)
from tpsbench.workloads.tpce.sql import prepared

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

TABLE: TransactionTable[FramesSession] = TransactionTable((
    Transaction("broker_volume", 49, broker_volume.drawn, run=broker_volume.run),
    Transaction("customer_position", 130, customer_position.drawn, run=customer_position.run,
                call=customer_position.call, answer=customer_position.answer),
    Transaction("market_feed", 0, market_feed.dispatched, run=market_feed.run, call=market_feed.call,
                answer=market_feed.answer),
    Transaction("market_watch", 180, market_watch.drawn, run=market_watch.run),
    Transaction("security_detail", 140, security_detail.drawn, run=security_detail.run,
                call=security_detail.call, answer=security_detail.answer),
    Transaction("trade_lookup", 80, trade_lookup.drawn, run=trade_lookup.run, call=trade_lookup.call,
                answer=trade_lookup.answer),
    Transaction("trade_order", 101, trade_order.drawn, run=trade_order.run, call=trade_order.call,
                answer=trade_order.answer),
    Transaction("trade_result", 0, trade_result.dispatched, run=trade_result.run, call=trade_result.call,
                answer=trade_result.answer),
    Transaction("trade_status", 190, trade_status.drawn, run=trade_status.run),
    Transaction("trade_update", 20, trade_update.drawn, run=trade_update.run, call=trade_update.call,
                answer=trade_lookup.answer),
    Transaction("data_maintenance", 0, data_maintenance.drawn, run=data_maintenance.run),
))
#: the users' deck: B2's weights per 1000 of the whole mix, without the market's
CUSTOMER_WEIGHTS = TABLE.cards()


@dataclass(frozen=True)
class TpceSql:
    """Every transaction's statements, by the transaction's name (``vars()`` lists them)."""

    broker_volume: broker_volume.BrokerVolumeSql
    customer_position: customer_position.CustomerPositionSql
    data_maintenance: data_maintenance.DataMaintenanceSql
    market_feed: market_feed.MarketFeedSql
    market_watch: market_watch.MarketWatchSql
    security_detail: security_detail.SecurityDetailSql
    trade_lookup: trade_lookup.TradeLookupSql
    trade_order: trade_order.TradeOrderSql
    trade_result: trade_result.TradeResultSql
    trade_status: trade_status.TradeStatusSql
    trade_update: trade_update.TradeUpdateSql


@cache
def statements(d: SqlDialect, mark: str = "?") -> TpceSql:
    """Every transaction's statements for ``d`` with the driver's ``mark``."""
    return prepared(TpceSql(
        broker_volume.statements(d), customer_position.statements(d), data_maintenance.statements(d),
        market_feed.statements(d), market_watch.statements(d), security_detail.statements(d),
        trade_lookup.statements(d), trade_order.statements(d), trade_result.statements(d),
        trade_status.statements(d), trade_update.statements(d)), mark)


def for_target(target: Target) -> TpceSql:
    return statements(target.sql, target.placeholder())
