"""Evidence that the driver's commit counts are real, read from the database itself.

Every committed New-Order adds exactly 1 to one district's D_NEXT_O_ID (a rolled-back
one adds nothing), and every committed Payment adds exactly one HISTORY row; no other
transaction touches either. So between two readings, the change of SUM(D_NEXT_O_ID)
must equal the committed New-Orders and the change of COUNT(HISTORY) the committed
Payments, exactly: a driver that counted a commit the database never made, or
missed one it made, is caught.
"""

from __future__ import annotations

from typing import Any

EVIDENCE_SQL = {
    "sum_d_next_o_id": "SELECT SUM(d_next_o_id) FROM district",
    "count_history": "SELECT COUNT(*) FROM history",
}


def database_counts(conn: Any) -> dict[str, int]:
    """The two counters, read in one transaction that is then ended (rolled back)."""
    cur = conn.cursor()
    try:
        found = {}
        for name, sql in EVIDENCE_SQL.items():
            cur.execute(sql)
            found[name] = int(cur.fetchone()[0] or 0)
        return found
    finally:
        cur.close()
        conn.rollback()


def expected_counts(commits: dict[str, int]) -> dict[str, int]:
    """The change of :func:`database_counts` that ``commits`` (committed count per transaction) implies."""
    return {
        "sum_d_next_o_id": int(commits.get("new_order", 0)),
        "count_history": int(commits.get("payment", 0)),
    }
