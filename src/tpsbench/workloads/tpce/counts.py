"""Evidence that the driver's commit counts are real, read from the database itself.

Every committed Trade-Order inserts exactly one TRADE row (a rolled-back one none), and
every committed Trade-Result adds exactly 1 to its broker's B_NUM_TRADES; no other
transaction (Trade-Cleanup, Market-Feed, Trade-Update, Data-Maintenance included)
inserts trades or touches the broker counters. So between two readings, the change of
COUNT(TRADE) must equal the committed Trade-Orders and the change of SUM(B_NUM_TRADES)
the committed Trade-Results, exactly, the way TPC-C's D_NEXT_O_ID and HISTORY
reconcile New-Orders and Payments. The broker counter also ties Trade-Results to
tpsE, the headline metric. COUNT(TRADE) reads the whole primary key, once before and
once after the run.
"""

from __future__ import annotations

from typing import Any

#: the counters, in the order of EVIDENCE's one SELECT
NAMES = ("count_trade", "sum_b_num_trades")
EVIDENCE = "SELECT (SELECT COUNT(*) FROM trade), (SELECT SUM(b_num_trades) FROM broker)"


def database_counts(conn: Any) -> dict[str, int]:
    """The counters, read in one statement whose transaction is then ended (rolled back)."""
    cur = conn.cursor()
    try:
        cur.execute(EVIDENCE)
        return {name: int(value or 0) for name, value in zip(NAMES, cur.fetchone())}
    finally:
        cur.close()
        conn.rollback()


def expected_counts(commits: dict[str, int]) -> dict[str, int]:
    """The change of :func:`database_counts` that ``commits`` (committed count per transaction) implies."""
    return {"count_trade": int(commits.get("trade_order", 0)), "sum_b_num_trades": int(commits.get("trade_result", 0))}
