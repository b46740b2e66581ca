"""Consistency conditions of a sysbench database, and recognition of one sysbench prepared.

Conditions (each SQL selects what violates it, as :class:`~tpsbench.api.workload.Check`
asks):

1. every table sbtest1..N exists;
2. every table has its secondary index on k (sysbench's ``k_N``, any name accepted);
3. every table holds exactly ids 1..table_size (until the first run: oltp_insert and
   oltp_delete change that, as they do under sysbench);
4. every k lies in [1, table_size] (until the first run: index updates add 1 to k).

The catalogue queries differ per dialect, so the checks are built for one.

:func:`detect_sysbench_tables` recognises tables that sysbench itself prepared (no
tpsbench_meta rows): sbtest1..N with sysbench's columns, which a run can use as they are.
"""

from __future__ import annotations

import re

import sqlalchemy as sa

from tpsbench.api.workload import Check
from tpsbench.errors import TpsbenchError
from tpsbench.targets.base import Target
from tpsbench.workloads.sysbench.common import table_names

SBTEST = re.compile(r"^sbtest([1-9][0-9]*)$")
COLUMNS = ("id", "k", "c", "pad")

#: tables of the current database/schema, by dialect
_TABLES_SQL = {
    "postgresql": "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
    "mysql": "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
    "mssql": "SELECT table_name FROM information_schema.tables WHERE table_schema = SCHEMA_NAME()",
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
}
#: a correlated condition "table v.t has an index whose first column is k", by dialect
_INDEX_ON_K = {
    "postgresql": "SELECT 1 FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
                  " JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0]"
                  " WHERE t.relname = v.t AND t.relnamespace = current_schema()::regnamespace AND a.attname = 'k'",
    "mysql": "SELECT 1 FROM information_schema.statistics s WHERE s.table_schema = DATABASE()"
             " AND s.table_name = v.t AND s.column_name = 'k' AND s.seq_in_index = 1",
    "mssql": "SELECT 1 FROM sys.indexes i JOIN sys.index_columns ic ON ic.object_id = i.object_id"
             " AND ic.index_id = i.index_id JOIN sys.columns c ON c.object_id = ic.object_id"
             " AND c.column_id = ic.column_id WHERE i.object_id = OBJECT_ID(v.t) AND ic.key_ordinal = 1"
             " AND c.name = 'k'",
    "sqlite": "SELECT 1 FROM sqlite_master m, pragma_index_info(m.name) p WHERE m.type = 'index'"
              " AND m.tbl_name = v.t AND p.seqno = 0 AND p.name = 'k'",
}


def _names(tables: int) -> str:
    """The expected table names as a derived table ``(SELECT 'sbtest1' AS t UNION ALL ...)``."""
    return " UNION ALL ".join(f"SELECT '{name}' AS t" for name in table_names(tables))


def checks_for(tables: int, table_size: int, dialect: str) -> list[Check]:
    """The four conditions for ``tables`` tables of ``table_size`` rows on ``dialect``."""
    if dialect not in _TABLES_SQL:
        raise TpsbenchError(f"sysbench checks do not know the {dialect!r} dialect")
    names = _names(tables)
    per_table = " UNION ALL ".join(
        f"SELECT '{name}' AS t, COUNT(*) AS n, MIN(id) AS lo, MAX(id) AS hi,"
        f" MIN(k) AS klo, MAX(k) AS khi FROM {name}"
        for name in table_names(tables)
    )
    return [
        Check(1, f"tables sbtest1..sbtest{tables} exist",
              f"SELECT v.t FROM ({names}) v WHERE v.t NOT IN ({_TABLES_SQL[dialect]})"),
        Check(2, "every table has its secondary index on k",
              f"SELECT v.t FROM ({names}) v WHERE NOT EXISTS ({_INDEX_ON_K[dialect]})"),
        Check(3, f"every table holds exactly ids 1..{table_size}",
              f"SELECT v.t FROM ({per_table}) v WHERE v.n <> {table_size} OR v.lo <> 1 OR v.hi <> {table_size}",
              holds_after_run=False),
        Check(4, f"every k lies in [1, {table_size}]",
              f"SELECT v.t FROM ({per_table}) v WHERE v.klo < 1 OR v.khi > {table_size}",
              holds_after_run=False),
    ]


def detect_sysbench_tables(target: Target) -> tuple[int, int]:
    """(tables, table size) of sbtest tables that sysbench prepared, or a one-line error.

    The tables must be numbered 1..N without gaps and have sysbench's columns. The table
    size is the smallest MAX(id) over them (an index lookup, not a count): right after
    ``sysbench prepare`` it is --table-size, and every id a run draws in [1, size] exists.
    """
    numbers = sorted(int(m.group(1)) for name in target.table_names() if (m := SBTEST.match(name)))
    where = target.describe()
    if not numbers:
        raise TpsbenchError(f"no sysbench tables at {where}: build them with `tpsbench build sysbench`"
                            " or prepare them with `sysbench oltp_read_write prepare`")
    if numbers != list(range(1, len(numbers) + 1)):
        raise TpsbenchError(f"the sbtest tables at {where} are not numbered 1..N: found {numbers[:12]}")
    with target.translate_errors("reading the sysbench tables"):
        inspector = sa.inspect(target.engine)
        columns = tuple(c["name"].lower() for c in inspector.get_columns("sbtest1"))
        if columns != COLUMNS:
            raise TpsbenchError(f"sbtest1 at {where} does not have sysbench's columns {COLUMNS}: it has {columns}")
        with target.engine.connect() as conn:
            size = min(conn.execute(sa.text(f"SELECT MAX(id) FROM sbtest{n}")).scalar() or 0 for n in numbers)
    if size < 1:
        raise TpsbenchError(f"the sbtest tables at {where} are empty: prepare them with a --table-size")
    return len(numbers), int(size)
