"""The trace's tables on a target: refused before anything runs when one is missing.

Why before: a replay or a mix on a database without a table the trace uses would only
fail statement after statement, and store a run that measured errors.
"""

from __future__ import annotations

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target


def missing_tables(target: Target, tables: list[str]) -> list[str]:
    """The tables of ``tables`` the target cannot see (PostgreSQL: through its search_path,
    catalogue views included)."""
    if target.dialect == "postgresql":
        with target.session("checking the trace's tables") as conn:
            return [t for t in tables
                    if conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is None]
    have = target.table_names()
    return [t for t in tables if t.lower() not in have]


def refuse_missing(target: Target, tables: list[str], outcome: str) -> None:
    """One line naming the first table of ``tables`` the target lacks (and the others),
    ending with ``outcome`` ("nothing replayed")."""
    missing = missing_tables(target, tables)
    if missing:
        raise TpsbenchError(f"the target has no table {missing[0]}, which the trace uses"
                            + (f" (nor {', '.join(missing[1:])})" if missing[1:] else "") + f": {outcome}")
