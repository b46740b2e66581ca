"""Trade-Cleanup (TPC-E, B2): before a run, cancel the orders earlier runs left open.

A run ends with orders the market never executed: limit orders still pending (their
TRADE_REQUEST rows) and submitted orders whose Trade-Result had not come when the step
ended. The spec cancels them once before the run, so that a run starts from a market
with no order book; here (in one transaction, set by set rather than order by order):

1. every TRADE_REQUEST row's trade gets TRADE_HISTORY rows for SBMT and CNCL and is set
   to CNCL; the TRADE_REQUEST rows are deleted;
2. every trade still submitted (SBMT) from ``start_trade_id`` on gets a CNCL history row
   and is set to CNCL.

``start_trade_id`` is the first id after the initial trades, which are all completed
when the database is built; run-time ids only grow from there (TpceSession), so the
primary key finds the submitted ones without reading the initial trades.

It runs once per run from the workload's prepare_run, on a connection of its own and
outside the measurement, so the time is written into the SQL as a literal (a
parameter in a SELECT list has no type some databases would infer).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tpsbench.core.target import Target
from tpsbench.workloads.tpce.sql import Link, stamp


def statements(now: str) -> list[tuple[str, str]]:
    """(what it counts, statement) in order, with ``?`` for start_trade_id."""
    history = "INSERT INTO trade_history (th_t_id, th_dts, th_st_id) SELECT {id}, '{now}', '{st}' FROM {source}"
    cancel = f"UPDATE trade SET t_st_id = 'CNCL', t_dts = '{now}' WHERE "
    submitted = "trade WHERE t_id >= ? AND t_st_id = 'SBMT'"
    return [
        ("", history.format(id="tr_t_id", now=now, st="SBMT", source="trade_request")),
        ("", history.format(id="tr_t_id", now=now, st="CNCL", source="trade_request")),
        ("pending", cancel + "t_id IN (SELECT tr_t_id FROM trade_request)"),
        ("", "DELETE FROM trade_request"),
        ("", history.format(id="t_id", now=now, st="CNCL", source=submitted)),
        ("submitted", cancel + "t_id >= ? AND t_st_id = 'SBMT'"),
    ]


def run(target: Target, start_trade_id: int) -> dict[str, int]:
    """Clean up on a connection of its own; how many pending and submitted orders it cancelled."""
    conn = target.connect()
    try:
        link = Link(target, conn)
        return execute(link, target.placeholder(), start_trade_id)
    finally:
        conn.close()


def execute(link: Link, mark: str, start_trade_id: int) -> dict[str, int]:
    """The cleanup on ``link``, committed."""
    cur = link.cur
    cancelled: dict[str, int] = {}
    try:
        link.begin()
        for counts, sql in statements(stamp(datetime.now(UTC))):
            params: Any = (start_trade_id,) * sql.count("?")
            if params:
                cur.execute(sql.replace("?", mark), params)
            else:
                cur.execute(sql)
            if counts:
                cancelled[counts] = max(cur.rowcount, 0)
        link.commit()
    except BaseException:
        link.rollback()
        raise
    return cancelled
