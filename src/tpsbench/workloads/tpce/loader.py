"""TPC-E initial data: the load tasks of a build and the batches of each.

Four kinds of task, each deterministic in (seed, kind, load unit) alone, so a build is
the same for any number of loader processes and any order of tasks:

- ``LoadTask("trades", (lu,))``: the initial trades of load unit lu and what they leave
  (trades.py), the largest;
- ``LoadTask("market", (lu,))``: its companies, securities and their history (market.py);
- ``LoadTask("customers", (lu,))``: its customers, accounts and watch lists (customers.py);
- ``LoadTask("fixed")``: the tables that do not grow with the scale (fixed.py).

The build constants ``trade_days`` and ``market_days`` (build options, kept in
tpsbench_meta) shape the trades and DAILY_MARKET; every "now" is ``params.load_time``,
before which the initial trades and the market history end (layout.business_days).
Money is float64 made from integer cents, so each value is the double nearest its
decimal and prints as that decimal; dates travel as ``YYYY-MM-DD`` text.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpsbench.core.batch import Batch
from tpsbench.core.workload import LoadParams, LoadTask
from tpsbench.workloads.tpce import customers, fixed, market, trades
from tpsbench.workloads.tpce.layout import (
    DEFAULT_MARKET_DAYS,
    DEFAULT_TRADE_DAYS,
    SECURITIES_PER_LU,
    TRADES_PER_DAY,
    load_units,
)

#: about how many rows a task loads per load unit, to order the tasks: the customers
#: task a fixed number, the market task that and DAILY_MARKET's, the trades task some
#: 6.4 rows per trade (TRADE, TRADE_HISTORY, SETTLEMENT, CASH_TRANSACTION, HOLDING_HISTORY ...)
CUSTOMER_TASK_ROWS, MARKET_TASK_ROWS, ROWS_PER_TRADE = 125_000, 15_000, 6.4


def constants(trade_days: int, market_days: int) -> dict[str, int]:
    """The build constants kept in tpsbench_meta (``const_trade_days``, ``const_market_days``)."""
    return {"trade_days": trade_days, "market_days": market_days}


def tasks(scale: int, trade_days: int, market_days: int) -> list[LoadTask]:
    """Every task of a build, the largest first (per load unit: trades, market or
    customers by the days asked for), the small fixed task last."""
    sizes = {"trades": ROWS_PER_TRADE * TRADES_PER_DAY * trade_days,
             "market": MARKET_TASK_ROWS + SECURITIES_PER_LU * market_days, "customers": CUSTOMER_TASK_ROWS}
    kinds = sorted(sizes, key=lambda kind: -sizes[kind])
    units = range(load_units(scale))
    return [LoadTask(kind, (lu,)) for kind in kinds for lu in units] + [LoadTask("fixed")]


def generate(task: LoadTask, params: LoadParams) -> Iterator[Batch]:
    """The batches of one task, in table order within each part."""
    lus = load_units(params.scale)
    trade_days = int(params.constants.get("trade_days", DEFAULT_TRADE_DAYS))
    market_days = int(params.constants.get("market_days", DEFAULT_MARKET_DAYS))
    if task.kind == "fixed" and not task.key:
        yield from fixed.generate(params.seed, market.symbols_per_exchange(params.seed, lus))
        return
    (lu,) = task.key if len(task.key) == 1 else (-1,)
    if not 0 <= lu < lus:
        raise ValueError(f"unknown TPC-E load task {task!r} for {lus} load unit(s)")
    if task.kind == "trades":
        yield from trades.generate(lu, params, trade_days)
    elif task.kind == "market":
        yield from market.generate(lu, params, market_days)
    elif task.kind == "customers":
        yield from customers.generate(lu, params, lus)
    else:
        raise ValueError(f"unknown TPC-E load task {task!r}")
