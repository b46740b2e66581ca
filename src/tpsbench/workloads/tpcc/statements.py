"""Every TPC-C statement for one database: each transaction's record, in one bundle.

Each transaction's module writes its own statements (its ``XxxSql`` record, built by its
``statements(d, mark)``); this puts the five together once per (dialect, marker) and
process, so that every session of a worker shares them and nothing is formatted on the
hot path. A session reaches them as typed attributes (``session.stmts.payment.history``),
which a reader and a type checker can follow to the SQL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from tpsbench.core.sql import SqlDialect, money_binder
from tpsbench.workloads.tpcc import delivery, new_order, order_status, payment, stock_level


@dataclass(frozen=True, slots=True)
class Statements:
    """The statements of the five transactions for one SQL dialect and parameter marker."""

    dialect: SqlDialect
    #: True where DML can return the rows it touched (all but MySQL)
    returning: bool
    #: what a Decimal amount is bound as: sqlite3 cannot bind Decimal, and a double is
    #: what SQLite would store anyway
    bind_money: Callable[[Decimal], object]
    new_order: new_order.NewOrderSql
    payment: payment.PaymentSql
    order_status: order_status.OrderStatusSql
    delivery: delivery.DeliverySql
    stock_level: stock_level.StockLevelSql


@cache
def statements(dialect: SqlDialect, mark: str = "?") -> Statements:
    """The statements of a target's ``sql`` dialect with its parameter marker ``mark``."""
    if mark not in ("?", "%s"):
        raise ValueError(f"unsupported parameter marker {mark!r}")
    return Statements(dialect, bool(dialect.returning), money_binder(dialect),
                      new_order.statements(dialect, mark), payment.statements(dialect, mark),
                      order_status.statements(dialect, mark), delivery.statements(dialect, mark),
                      stock_level.statements(dialect, mark))
