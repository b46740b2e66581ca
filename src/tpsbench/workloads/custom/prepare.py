"""Before the first step: every statement of the file prepared on the target, and the
values of the query parameters read.

Why prepare: a misspelt column or a statement that only one database's SQL allows would
otherwise show as a step full of errors, after its ramp-up. Preparing a statement asks
the server to parse it and resolve its names without running it: PostgreSQL's
``PREPARE ... AS`` (with ``$1`` markers), MySQL's and MariaDB's ``PREPARE ... FROM`` (with
``?``), SQLite's ``EXPLAIN`` (it compiles the statement into its program and does not run
it). These are SQL statements the databases share with every client, so no driver's
own API is needed. SQL Server is not asked: its statements show their errors in the
first step (said in the run's plan line).

PostgreSQL prepares the statements a client runs (SELECT, INSERT, UPDATE, DELETE, MERGE,
VALUES, WITH); any other statement (a CALL) goes unchecked there too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from tpsbench.core.errors import error_message
from tpsbench.core.target import Target
from tpsbench.workloads.custom.readonly import read_only
from tpsbench.workloads.custom.sqltext import Named, parse

#: how each dialect prepares one statement without running it: (statements to send with
#: their parameters) for a parsed statement
Preparer = Callable[[Named], list[tuple[str, Sequence[Any]]]]
#: the statements PostgreSQL's PREPARE takes
PG_PREPARABLE = re.compile(r"^[\s(]*(SELECT|INSERT|UPDATE|DELETE|MERGE|VALUES|WITH|TABLE)\b", re.IGNORECASE)
#: the most rows a query parameter may read (its values travel to every driver process)
MOST_QUERY_ROWS = 1_000_000


def _postgresql(named: Named) -> list[tuple[str, Sequence[Any]]]:
    if not PG_PREPARABLE.match(named.parts[0]):
        return []
    return [(f"PREPARE tpsb_check AS {named.render(lambda i: f'${i}')}", ()), ("DEALLOCATE tpsb_check", ())]


def _mysql(named: Named) -> list[tuple[str, Sequence[Any]]]:
    return [("PREPARE tpsb_check FROM %s", (named.render(lambda i: "?"),)), ("DEALLOCATE PREPARE tpsb_check", ())]


def _sqlite(named: Named) -> list[tuple[str, Sequence[Any]]]:
    return [(f"EXPLAIN {named.render(lambda i: '?')}", (None,) * len(named.names))]


PREPARERS: dict[str, Preparer] = {"postgresql": _postgresql, "mysql": _mysql, "sqlite": _sqlite}


def can_prepare(target: Target) -> bool:
    return target.dialect in PREPARERS


def unprepared(target: Target, statements: Sequence[tuple[str, str]]) -> list[str]:
    """Each of ``statements`` (where it is, its SQL with named parameters) that the target
    will not prepare, as "where: does not prepare on DIALECT: the server's message"."""
    preparer = PREPARERS.get(target.dialect)
    if preparer is None or not statements:
        return []
    problems = []
    with target.session("preparing the workload file's statements") as conn:
        target.set_autocommit(conn)
        cur = conn.cursor()
        for where, sql in statements:
            try:
                for text, params in preparer(parse(sql)):
                    cur.execute(text, params) if params else cur.execute(text)
            except Exception as exc:
                if not target.is_driver_error(exc):
                    raise
                problems.append(f"{where}: does not prepare on {target.dialect}: {error_message(exc)}")
    return problems


def query_values(target: Target, queries: Sequence[tuple[str, str, str]]) -> tuple[dict[str, list[Any]], list[str]]:
    """The first column of each query's rows, by its key (of (key, where it is, SQL
    without parameters)), and the problems: a query that fails, returns no row, or more
    than :data:`MOST_QUERY_ROWS`."""
    values: dict[str, list[Any]] = {}
    problems: list[str] = []
    if not queries:
        return values, problems
    with target.session("reading the query parameters' values") as conn:
        cur = conn.cursor()
        for key, where, sql in queries:
            try:
                with read_only(target.dialect, cur.execute, conn.rollback):
                    cur.execute(sql)
                    rows = cur.fetchmany(MOST_QUERY_ROWS + 1)
            except Exception as exc:
                if not target.is_driver_error(exc):
                    raise
                problems.append(f"{where}: the query failed on {target.dialect}: {error_message(exc)}")
                continue
            if not rows:
                problems.append(f"{where}: the query returned no rows to draw from")
            elif len(rows) > MOST_QUERY_ROWS:
                problems.append(f"{where}: the query returned more than {MOST_QUERY_ROWS:,} rows: narrow it")
            else:
                values[key] = [row[0] for row in rows]
    return values, problems
