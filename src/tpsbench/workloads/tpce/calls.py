"""What every TPC-E stored-procedure call shares: its statement, its lists, its answer's parts.

Each transaction that has a routine writes its own request and answer in its module
(its ``call`` and ``answer``); this is how they name the routine, pass a list, stamp the
time and read an answer of several parts, the same on PostgreSQL and MySQL/MariaDB
(procedures.py says why the calls exist and how the two databases differ).

An answer's parts: a PostgreSQL function answers one row, a part of many rows as one
array per column (the driver zips them into rows); a MySQL procedure answers one result
set per part. Lists go in as PostgreSQL arrays or as JSON arrays (MySQL has no array
parameters: its procedures read them with JSON_EXTRACT and JSON_TABLE).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from tpsbench.core.errors import error_codes, error_message
from tpsbench.core.procedures import call_statement
from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce.sql import Link, stamp

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

I = TypeVar("I")  # noqa: E741 - a transaction's inputs

#: how a routine refuses where the frames raise LookupError: PostgreSQL's RAISE EXCEPTION
#: (SQLSTATE P0001), MySQL's SIGNAL SQLSTATE '45000' (error 1644)
REFUSED_SQLSTATE, REFUSED_CODE = "P0001", 1644

#: one part of an answer: the columns of the PostgreSQL function's row that hold it, and
#: whether it has many rows (an array per column) or one (a value per column)
Part = tuple[Sequence[int], bool]


def routine(d: SqlDialect, name: str, types: Sequence[str]) -> str:
    """The call of ``tpce_<name>`` with parameters of ``types`` (PostgreSQL's: a function
    is found by them, so the call casts each; MySQL's procedures take as many, lists as
    JSON text); "" where the dialect calls no routines."""
    return call_statement(d, f"tpce_{name}", types) if d.call else ""


def as_list(link: Link, values: Sequence[Any]) -> str:
    """A list as one text argument: a JSON array (numbers other than ints as text, read
    exactly into DECIMAL), or a PostgreSQL array literal."""
    if link.result_sets:
        return json.dumps([v if type(v) is int else str(v) for v in values])
    return "{" + ",".join(json.dumps(v) if type(v) is str else str(v) for v in values) + "}"


def now() -> str:
    """The time a transaction stamps on its rows, as the client path's frames take it."""
    return stamp(datetime.now(UTC))


def parts(link: Link, wanted: Sequence[Part], drain: bool) -> list[list[tuple]]:
    """The answer's parts as lists of rows (module docstring). ``drain``: the procedure
    answers before its COMMIT, so MySQL's status, which carries a failed COMMIT, is read
    now; answers sent after the COMMIT leave it to the next command (mysqlclient.py)."""
    cur = link.cur
    if not link.result_sets:
        (row,) = cur.fetchall()
        return [list(zip(*(row[i] or () for i in columns))) if many else [tuple(row[i] for i in columns)]
                for columns, many in wanted]
    step = getattr(cur, "next_result_set", None) or cur.nextset
    found = [[tuple(r) for r in cur.fetchall()]]
    for _ in wanted[1:]:
        if not step():
            raise LookupError(f"the procedure answered {len(found)} of {len(wanted)} result sets")
        found.append([tuple(r) for r in cur.fetchall()])
    while drain and step():
        pass
    return found


def answered(user: FramesSession, inp: I, error: Exception | None,
             decode: Callable[[FramesSession, I], object]) -> bool:
    """After a call: its output decoded from the answer and kept as the session's last
    (True), or False where ``decode`` finds the requested rollback (MySQL's Trade-Order
    procedure rolls back itself and answers NULLs). A routine's own refusal (a row
    missing, an executor not permitted) is raised as the LookupError the frames raise;
    other failures as the driver raised them. Either way the server or the procedure has
    rolled back already."""
    if error is not None:
        state, code = error_codes(error)
        if state == REFUSED_SQLSTATE or code == REFUSED_CODE:
            raise LookupError(error_message(error)) from error
        raise error
    output = decode(user, inp)
    if output is None:
        return False
    user.last_output = output
    return True
