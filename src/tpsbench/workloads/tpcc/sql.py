"""What the SQL of the TPC-C transactions shares: the dialect's forms, and the builders.

Each transaction's module writes its own statements (its ``XxxSql`` record and
``statements(d, mark)``), once, in the SQL the databases share; the target's
:class:`~tpsbench.core.sql.SqlDialect` says what differs and the builders below
substitute it:

- the parameter marker (``?`` or ``%s``: it comes from the target, because one dialect
  can be reached through drivers of either style, e.g. MySQL through mysqlclient or ODBC);
- ``LIMIT 1`` or ``TOP 1``;
- row locks for read-then-write: ``FOR UPDATE`` after the statement (PostgreSQL, MySQL),
  a ``WITH (UPDLOCK, ROWLOCK)`` hint after the table (SQL Server), nothing on SQLite,
  whose writers are serialised by the database lock the transaction already holds;
- returning the rows a DML statement touched: ``RETURNING`` (PostgreSQL, SQLite >= 3.35,
  MariaDB's DELETE only, so unused), ``OUTPUT inserted.*/deleted.*`` (SQL Server); MySQL
  has neither and takes one more statement where it matters;
- UPDATE joined to a derived table: ``UPDATE t SET .. FROM src WHERE ..`` (PostgreSQL,
  SQLite >= 3.33), ``UPDATE t JOIN src ON .. SET ..`` (MySQL), ``UPDATE t SET .. FROM t
  JOIN src ON ..`` (SQL Server);
- string concatenation (``||`` or ``CONCAT``);
- SQLite keeps money in doubles, so its money updates are wrapped in ``ROUND(.., 2)``:
  every stored amount stays the double nearest a whole number of cents and sums do
  not drift.

"Oldest" and "last" are mostly MIN/MAX subqueries, which PostgreSQL, SQLite and SQL
Server answer with one probe of the primary key or the customer index. A locking read
of one oldest row needs ``ORDER BY .. LIMIT 1`` (``TOP 1`` on SQL Server) instead, and so
does MySQL's Delivery, because MariaDB does not turn a correlated MIN into one probe
(it reads the whole district).

Statements whose shape depends on a count (k stock rows, k delivered districts, n order
lines) are built for every count up to the maximum when the table is first asked for, and
the table (statements.py) is cached per (dialect, marker): nothing is formatted per
transaction.
"""

from __future__ import annotations

from tpsbench.core.sql import SqlDialect

#: §2.5.2.2 middle customer by last name: 1-based row ceil(n/2) of the rows ordered by
#: C_FIRST, i.e. 2*rn - n in {0, 1}; integer arithmetic without division, which MySQL
#: would turn into a decimal. Parameters: C_W_ID, C_D_ID, C_LAST.
MIDDLE_CUSTOMER = (
    "(SELECT m.c_id FROM (SELECT c_id, ROW_NUMBER() OVER (ORDER BY c_first) AS rn, COUNT(*) OVER () AS n"
    " FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?) m WHERE 2 * m.rn - m.n IN (0, 1))"
)
#: the customer key of Payment and Order-Status: its extra parameters follow C_W_ID, C_D_ID
CUSTOMER_KEY = {"id": "c_id = ?", "name": f"c_id = {MIDDLE_CUSTOMER}"}


def customer_key(c_w_id: int, c_d_id: int, c_id: int | None, c_last: str | None) -> tuple[str, tuple]:
    """Which CUSTOMER_KEY statement variant to run and its parameters after C_W_ID, C_D_ID."""
    if c_last is None:
        return "id", (c_id,)
    return "name", (c_w_id, c_d_id, c_last)


def pair_keys(a: str, b: str, k: int) -> str:
    """``((a = ? AND b = ?) OR ...)`` for k pairs: every optimiser turns it into k key probes."""
    return "(" + " OR ".join([f"({a} = ? AND {b} = ?)"] * k) + ")"


def returning(d: SqlDialect, head: str, where: str, columns: str, table: str = "inserted") -> str:
    """``head where RETURNING columns``, SQL Server's ``head OUTPUT table.columns where``,
    or just ``head where`` on a dialect that can return nothing (MySQL)."""
    if not d.returning:
        return f"{head} {where}"
    if d.returning == "output":
        out = ", ".join(f"{table}.{c.strip()}" for c in columns.split(","))
        return f"{head} OUTPUT {out} {where}"
    return f"{head} {where} RETURNING {columns}"


def update_from(d: SqlDialect, table: str, assignments: str, source: str, condition: str) -> str:
    """UPDATE ``table`` joined to ``source`` on ``condition`` in the dialect's syntax.

    The shapes put SET and the join condition in different orders, so ``assignments``
    must hold no parameter: then the parameters come in the same order in all of them.
    """
    if "?" in assignments:
        raise ValueError("UPDATE ... FROM assignments must not hold parameters")
    if d.update_join == "join":
        return f"UPDATE {table} JOIN {source} ON {condition} SET {assignments}"
    if d.update_join == "from-join":
        return f"UPDATE {table} SET {assignments} FROM {table} JOIN {source} ON {condition}"
    return f"UPDATE {table} SET {assignments} FROM {source} WHERE {condition}"
