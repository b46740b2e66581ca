"""Consistency conditions of a sysbench database, and recognition of one sysbench prepared.

Conditions (as :class:`~tpsbench.core.workload.Check` asks: SQL that selects what violates
them, or for the catalogue questions a count through SQLAlchemy's inspector, which
knows every database's catalogue):

1. every table sbtest1..N exists;
2. every table has its secondary index on k (sysbench's ``k_N``, any name accepted);
3. every table holds exactly ids 1..table_size (until the first run: oltp_insert and
   oltp_delete change that, as they do under sysbench);
4. every k lies in [1, table_size] (until the first run: index updates add 1 to k).

:func:`detect_sysbench_tables` recognises tables that sysbench itself prepared (no
tpsbench_meta rows): sbtest1..N with sysbench's columns, which a run can use as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target
from tpsbench.core.workload import Check
from tpsbench.workloads.sysbench.common import table_names

SBTEST = re.compile(r"^sbtest([1-9][0-9]*)$")
COLUMNS = ("id", "k", "c", "pad")


def _missing_tables(tables: int) -> Callable[[Target], int]:
    def count(target: Target) -> int:
        return len(set(table_names(tables)) - target.table_names())
    return count


def _tables_without_k_index(tables: int) -> Callable[[Target], int]:
    """Tables among sbtest1..N that exist and have no index whose first column is k."""
    def count(target: Target) -> int:
        present = target.table_names()
        with target.translate_errors("reading the sysbench indexes"):
            inspector = sa.inspect(target.engine)
            return sum(1 for name in table_names(tables) if name in present and not any(
                index["column_names"][:1] == ["k"] for index in inspector.get_indexes(name)))
    return count


def checks_for(tables: int, table_size: int) -> list[Check]:
    """The four conditions for ``tables`` tables of ``table_size`` rows."""
    per_table = " UNION ALL ".join(
        f"SELECT '{name}' AS t, COUNT(*) AS n, MIN(id) AS lo, MAX(id) AS hi,"
        f" MIN(k) AS klo, MAX(k) AS khi FROM {name}"
        for name in table_names(tables)
    )
    return [
        Check(1, f"tables sbtest1..sbtest{tables} exist", violations=_missing_tables(tables)),
        Check(2, "every table has its secondary index on k", violations=_tables_without_k_index(tables)),
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
