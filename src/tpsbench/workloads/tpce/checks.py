"""``tpsbench check tpce``: the integrity of a TPC-E database, as portable SQL.

TPC-E has no numbered consistency conditions as TPC-C has; these are what its
transactions keep true (and the loader builds true), each a query selecting the rows
that break it, numbered here:

1-3. a trade's bookkeeping: a TRADE_HISTORY row of its current status; a SETTLEMENT row
     exactly when completed; a CASH_TRANSACTION row exactly when completed for cash;
4-5. holdings: HOLDING_SUMMARY is the sum of the lots (and no flat summary row
     remains), and every lot has its summary row;
6.   each broker's B_NUM_TRADES and B_COMM_TOTAL count and sum its accounts' completed
     trades (what Trade-Result adds to both);
7-8. the order book: a TRADE_REQUEST row exactly for the pending (PNDG) trades;
9.   LAST_TRADE's volumes only grew: their sum is at least the figure the first run
     kept before it started (prepare_run; none before any run, when 10 says more);
10.  only before any run: each LAST_TRADE volume is the shares of the symbol's
     completed trades (a run's Market-Feeds add their ticker's volumes, which include
     trades not booked and entries of no trade, so afterwards only 9 holds);
11.  only before any run: every table has the rows a build of this scale, seed and
     days has (expected.py), which each run changes.

Money compares to within half a cent: exact on databases with decimals, immune to
SQLite's doubles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpsbench.core.meta import read_meta
from tpsbench.core.workload import Check
from tpsbench.workloads.tpce import expected
from tpsbench.workloads.tpce.layout import (
    DEFAULT_MARKET_DAYS,
    DEFAULT_TRADE_DAYS,
    TABLES,
    load_units,
)

if TYPE_CHECKING:
    from tpsbench.core.target import Target

#: the figure a run keeps in tpsbench_meta before it starts, when there is none yet (check 9)
LT_VOL_KEY = "lt_vol_before_runs"
LT_VOL_SQL = "SELECT SUM(lt_vol) FROM last_trade"
DIFFERS = "> 0.004"


def volume_shrank(target: Target) -> int:
    """Check 9: 1 when SUM(LT_VOL) is below the figure kept before the first run, else 0."""
    kept = read_meta(target, "tpce").get(LT_VOL_KEY)
    if kept is None:
        return 0
    (now,), = target.fetch_all(LT_VOL_SQL, "reading LAST_TRADE's volumes")
    return int(int(now or 0) < int(kept))


def row_counts_differ(target: Target) -> int:
    """Check 11: how many tables hold other than the build's row count."""
    meta = read_meta(target, "tpce")
    want = expected.expected_rows(load_units(int(meta["scale"])), int(meta["seed"]),
                                  int(meta.get("const_trade_days", DEFAULT_TRADE_DAYS)),
                                  int(meta.get("const_market_days", DEFAULT_MARKET_DAYS)))
    counts = " UNION ALL ".join(f"SELECT '{table}', COUNT(*) FROM {table}" for table in TABLES)
    found = dict(target.fetch_all(counts, "counting rows"))
    return sum(int(found.get(table, -1)) != rows for table, rows in want.items())


CHECKS = [
    Check(1, "every trade has a TRADE_HISTORY row of its status", """
        SELECT t.t_id FROM trade t
        LEFT JOIN trade_history th ON th.th_t_id = t.t_id AND th.th_st_id = t.t_st_id
        WHERE th.th_t_id IS NULL"""),
    Check(2, "a trade has a SETTLEMENT row exactly when completed", """
        SELECT t.t_id FROM trade t LEFT JOIN settlement se ON se.se_t_id = t.t_id
        WHERE (t.t_st_id = 'CMPT' AND se.se_t_id IS NULL) OR (t.t_st_id <> 'CMPT' AND se.se_t_id IS NOT NULL)"""),
    Check(3, "a trade has a CASH_TRANSACTION row exactly when completed for cash", """
        SELECT t.t_id FROM trade t LEFT JOIN cash_transaction ct ON ct.ct_t_id = t.t_id
        WHERE (t.t_st_id = 'CMPT' AND t.t_is_cash = 1 AND ct.ct_t_id IS NULL)
           OR ((t.t_st_id <> 'CMPT' OR t.t_is_cash <> 1) AND ct.ct_t_id IS NOT NULL)"""),
    Check(4, "HOLDING_SUMMARY = sum(H_QTY) per (account, symbol), and no flat summary row", """
        SELECT hs.hs_ca_id, hs.hs_s_symb FROM holding_summary hs
        LEFT JOIN (SELECT h_ca_id, h_s_symb, SUM(h_qty) AS q FROM holding GROUP BY h_ca_id, h_s_symb) h
          ON h.h_ca_id = hs.hs_ca_id AND h.h_s_symb = hs.hs_s_symb
        WHERE COALESCE(h.q, 0) <> hs.hs_qty OR hs.hs_qty = 0"""),
    Check(5, "every HOLDING lot has its HOLDING_SUMMARY row", """
        SELECT h.h_t_id FROM holding h
        LEFT JOIN holding_summary hs ON hs.hs_ca_id = h.h_ca_id AND hs.hs_s_symb = h.h_s_symb
        WHERE hs.hs_ca_id IS NULL"""),
    Check(6, "B_NUM_TRADES and B_COMM_TOTAL count and sum the broker's completed trades", f"""
        SELECT b.b_id FROM broker b
        LEFT JOIN (SELECT ca.ca_b_id, COUNT(*) AS n, SUM(t.t_comm) AS c FROM trade t
                   JOIN customer_account ca ON ca.ca_id = t.t_ca_id
                   WHERE t.t_st_id = 'CMPT' GROUP BY ca.ca_b_id) x ON x.ca_b_id = b.b_id
        WHERE b.b_num_trades <> COALESCE(x.n, 0) OR ABS(b.b_comm_total - COALESCE(x.c, 0)) {DIFFERS}"""),
    Check(7, "no TRADE_REQUEST row for a trade that is not pending", """
        SELECT tr.tr_t_id FROM trade_request tr LEFT JOIN trade t ON t.t_id = tr.tr_t_id
        WHERE t.t_id IS NULL OR t.t_st_id <> 'PNDG'"""),
    Check(8, "every pending trade has its TRADE_REQUEST row", """
        SELECT t.t_id FROM trade t LEFT JOIN trade_request tr ON tr.tr_t_id = t.t_id
        WHERE t.t_st_id = 'PNDG' AND tr.tr_t_id IS NULL"""),
    Check(9, "sum(LT_VOL) is at least what it was before the first run", violations=volume_shrank),
    Check(10, "LT_VOL = the shares of the symbol's completed trades (only before any run)", """
        SELECT lt.lt_s_symb FROM last_trade lt
        LEFT JOIN (SELECT t_s_symb, SUM(t_qty) AS v FROM trade WHERE t_st_id = 'CMPT' GROUP BY t_s_symb) t
          ON t.t_s_symb = lt.lt_s_symb
        WHERE lt.lt_vol <> COALESCE(t.v, 0)""", holds_after_run=False),
    Check(11, "every table has the build's row count (only before any run)", holds_after_run=False,
          violations=row_counts_differ),
]
