"""The run option ``procedures`` (auto, on, off), which TPC-C and TPC-E share.

Why one place: both workloads can send a transaction as one call of a stored routine
(their DDL files' ``-- procedures`` part, core/schema.py) instead of its statements, and
a user should meet the same option, the same refusals and the same installation either
way. What differs (which transactions, where the routines exist) stays in the workload;
this reads the option, refuses what cannot be, installs the routines before a run, and
names the call statement of a routine in the dialect's form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tpsbench.core.errors import TpsbenchError, error_codes
from tpsbench.core.schema import install_routines
from tpsbench.core.sql import SqlDialect

if TYPE_CHECKING:
    from tpsbench.core.target import Target
    from tpsbench.core.workload import Workload

#: values of the run option
PROCEDURE_MODES = ("auto", "on", "off")


def wants_procedures(label: str, options: Mapping[str, str], available: bool, where: str) -> bool:
    """Whether a run with ``options`` calls the routines, given whether they are
    ``available`` on the database (``where`` names it); a bad value, or ``on`` where
    there are none, is a one-line error naming the way out."""
    mode = options.get("procedures", "auto")
    if mode not in PROCEDURE_MODES:
        raise TpsbenchError(f"{label} option procedures={mode!r}: use one of {', '.join(PROCEDURE_MODES)}")
    if mode == "on" and not available:
        raise TpsbenchError(f"{label} has no stored procedures for {where}; use --procedures off")
    return mode == "on" or (mode == "auto" and available)


def install_for_run(workload: Workload, target: Target, users: int) -> tuple[list[str], str | None]:
    """Install the workload's routines before a run's first step: their names, and what
    the server holds for ``users`` connections calling them where a setting should
    change (Target.routine_cache_note); a database that refuses them (no CREATE ROUTINE
    privilege) says how to run without."""
    try:
        names = install_routines(workload, target)
    except TpsbenchError as exc:
        raise TpsbenchError(f"{exc} (run with --procedures off to send statements instead)") from exc
    return names, target.routine_cache_note(users)


def call_statement(d: SqlDialect, routine: str, types: Sequence[str]) -> str:
    """The call of ``routine`` in the dialect's form (a SELECT of a PostgreSQL function,
    a MySQL CALL), one ``?`` per parameter, cast to its type where the dialect picks a
    function by its argument types (drivers would send text or int8 and find none)."""
    return d.call.format(name=routine, args=", ".join(d.call_arg.format(type=t) for t in types))


def requested_rollback(error: Exception, sqlstate: str) -> bool:
    """Whether a call's ``error`` is the rollback its routine raises on purpose, with
    the SQLSTATE ``sqlstate`` (TPC-C's unused item, TPC-E's 1% Trade-Order)."""
    return error_codes(error)[0] == sqlstate
