"""Errors as a workload file names them, for its expected-rollback and retry rules.

A rule lists errors by a portable name (``unique_violation``: the same mistake has a
SQLSTATE on PostgreSQL, an error number on MySQL and SQL Server, an extended result
code's name on SQLite), by SQLSTATE (``"23505"``), by native error number (``1062``) or
by SQLite's name (``"SQLITE_CONSTRAINT_UNIQUE"``). Errors are read from a driver's
exception by tpsbench.core.errors.error_codes, as the targets read them, never by
their message text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tpsbench.core.errors import error_codes

#: name -> what each dialect reports for it: PostgreSQL's SQLSTATEs, MySQL/MariaDB's and SQL
#: Server's error numbers (theirs overlap: 1205 is a lock timeout on one, a deadlock on the
#: other), SQLite's extended result code names
KNOWN: dict[str, dict[str, frozenset[Any]]] = {
    "unique_violation": {"postgresql": frozenset({"23505"}), "mysql": frozenset({1062, 1586}),
                         "mssql": frozenset({2601, 2627}),
                         "sqlite": frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})},
    "foreign_key_violation": {"postgresql": frozenset({"23503"}), "mysql": frozenset({1216, 1217, 1451, 1452}),
                              "mssql": frozenset({547}), "sqlite": frozenset({"SQLITE_CONSTRAINT_FOREIGNKEY"})},
    "not_null_violation": {"postgresql": frozenset({"23502"}), "mysql": frozenset({1048, 1364}),
                           "mssql": frozenset({515}), "sqlite": frozenset({"SQLITE_CONSTRAINT_NOTNULL"})},
    "check_violation": {"postgresql": frozenset({"23514"}), "mysql": frozenset({3819, 4025}),
                        "mssql": frozenset({547}), "sqlite": frozenset({"SQLITE_CONSTRAINT_CHECK"})},
    "division_by_zero": {"postgresql": frozenset({"22012"}), "mysql": frozenset({1365}), "mssql": frozenset({8134})},
    "deadlock": {"postgresql": frozenset({"40P01"}), "mysql": frozenset({1213}), "mssql": frozenset({1205})},
    "serialization_failure": {"postgresql": frozenset({"40001"}), "mssql": frozenset({3960})},
    "lock_timeout": {"postgresql": frozenset({"55P03"}), "mysql": frozenset({1205}), "mssql": frozenset({1222}),
                     "sqlite": frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})},
}
SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")
SQLITE_NAME = re.compile(r"^SQLITE_[A-Z_]+$")


@dataclass(frozen=True)
class Errors:
    """The errors a rule names, as one dialect reports them; ``matches`` tells whether a
    driver's exception is one of them."""

    sqlstates: frozenset[str] = frozenset()
    codes: frozenset[int] = frozenset()
    sqlite: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.sqlstates or self.codes or self.sqlite)

    def matches(self, exc: BaseException) -> bool:
        state, code = error_codes(exc)
        name = getattr(getattr(exc, "orig", None) or exc, "sqlite_errorname", None)
        return state in self.sqlstates or code in self.codes or name in self.sqlite


@dataclass(frozen=True)
class ErrorNames:
    """A rule's list as the file gives it: portable names and raw codes."""

    names: frozenset[str] = frozenset()
    raw: Errors = Errors()

    def __bool__(self) -> bool:
        return bool(self.names or self.raw)

    def for_dialect(self, dialect: str) -> Errors:
        """What ``dialect`` reports for these errors: the names' codes there, and the raw ones."""
        found = [KNOWN[name].get(dialect, frozenset()) for name in self.names]
        codes = frozenset().union(*found)
        return Errors(self.raw.sqlstates | {c for c in codes if isinstance(c, str) and SQLSTATE.match(c)},
                      self.raw.codes | {c for c in codes if isinstance(c, int)},
                      self.raw.sqlite | {c for c in codes if isinstance(c, str) and SQLITE_NAME.match(c)})


def parse(value: Any, where: str, problems: list[str]) -> ErrorNames:
    """The errors a rule's list names; each one it cannot read is a problem of ``where``."""
    if not isinstance(value, list):
        problems.append(f"{where}: a list of errors, like [\"unique_violation\", \"23505\", 1062]")
        return ErrorNames()
    names: set[str] = set()
    states: set[str] = set()
    codes: set[int] = set()
    sqlite: set[str] = set()
    for item in value:
        if isinstance(item, str) and item in KNOWN:
            names.add(item)
        elif isinstance(item, str) and SQLSTATE.match(item):
            states.add(item)
        elif isinstance(item, str) and SQLITE_NAME.match(item):
            sqlite.add(item)
        elif isinstance(item, int) and not isinstance(item, bool) and item > 0:
            codes.add(item)
        else:
            problems.append(f"{where}: unknown error {item!r}: name one of {', '.join(KNOWN)}, a SQLSTATE "
                            f"like \"23505\", a native error number like 1062 or a SQLite name like "
                            f"\"SQLITE_CONSTRAINT_UNIQUE\"")
    return ErrorNames(frozenset(names), Errors(frozenset(states), frozenset(codes), frozenset(sqlite)))
