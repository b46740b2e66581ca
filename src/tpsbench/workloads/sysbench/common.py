"""The SQL of the sysbench family, as oltp_common.lua defines it, once per dialect.

Statement text is sysbench's own (same columns, same predicates, same ORDER BY), with its
``?`` markers replaced by the target driver's placeholder and ``%u`` by the table number.
Texts are built once per (dialect, placeholder, tables) and shared by every session of a
process, so the hot path only looks them up.

Dialect differences are only where sysbench itself has them, and the target's
:class:`~tpsbench.core.sql.SqlDialect` says which: the auto-increment id of oltp_insert
(``auto_id``: PostgreSQL and SQLite leave the column out, MySQL passes 0 as sysbench
does; SQL Server's table has no IDENTITY, see schemas/mssql.sql, so its inserts carry an
id) and the transaction statements (``begin``, ``commit``, ``rollback``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tpsbench.core.sql import SqlDialect

#: sysbench's statements by group; ``{t}`` is the table number, ``?`` a parameter
TEMPLATES = {
    "point_selects": "SELECT c FROM sbtest{t} WHERE id=?",
    "simple_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "sum_ranges": "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "order_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "distinct_ranges": "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "index_updates": "UPDATE sbtest{t} SET k=k+1 WHERE id=?",
    "non_index_updates": "UPDATE sbtest{t} SET c=? WHERE id=?",
    "deletes": "DELETE FROM sbtest{t} WHERE id=?",
    "inserts": "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)",
}
#: oltp_insert.lua, by how the dialect leaves the id to the server (SqlDialect.auto_id)
INSERT_AUTO = {
    "omit": "INSERT INTO sbtest{t} (k, c, pad) VALUES (?, ?, ?)",
    "zero": "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (0, ?, ?, ?)",
    "": "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)",
}


@dataclass(frozen=True)
class SqlSet:
    """Every statement a session may run, ready for the driver.

    ``by_group[group][t]`` is the text for table ``t`` (index 0 unused, so that sysbench's
    1-based table numbers index it directly).
    """

    dialect: str
    by_group: dict[str, tuple[str, ...]]
    random_points: str
    random_ranges: str
    begin: str
    commit: str
    rollback: str
    client_ids: bool


def _mark(text: str, placeholder: str) -> str:
    return text.replace("?", placeholder)


@cache
def sql_set(dialect: SqlDialect, placeholder: str, tables: int, random_points: int = 10,
            number_of_ranges: int = 10) -> SqlSet:
    """The statements of ``tables`` tables for one dialect and driver placeholder (cached)."""
    by_group: dict[str, tuple[str, ...]] = {}
    templates = dict(TEMPLATES, insert_auto=INSERT_AUTO[dialect.auto_id])
    for group, template in templates.items():
        by_group[group] = ("",) + tuple(_mark(template.format(t=t), placeholder) for t in range(1, tables + 1))
    # select_random_points.lua / select_random_ranges.lua: table sbtest1 only
    points = ", ".join(["?"] * random_points)
    ranges = " OR ".join(["k BETWEEN ? AND ?"] * number_of_ranges)
    return SqlSet(
        dialect=dialect.name,
        by_group=by_group,
        random_points=_mark(f"SELECT id, k, c, pad FROM sbtest1 WHERE k IN ({points})", placeholder),
        random_ranges=_mark(f"SELECT count(k) FROM sbtest1 WHERE {ranges}", placeholder),
        begin=dialect.begin,
        commit=dialect.commit,
        rollback=dialect.rollback,
        client_ids=not dialect.auto_id,
    )


def table_ddl(template_statements: list[str], tables: int) -> list[str]:
    """The statements of a schemas/<dialect>.sql part for tables 1..``tables``.

    The file describes one table with ``{n}`` where sysbench puts the table number
    (``sbtest{n}``, ``k_{n}``); each statement is repeated per table, table by table, as
    sysbench's prepare creates them.
    """
    return [statement.replace("{n}", str(n)) for n in range(1, tables + 1) for statement in template_statements]


def table_names(tables: int) -> tuple[str, ...]:
    return tuple(f"sbtest{n}" for n in range(1, tables + 1))
