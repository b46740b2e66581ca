"""Read-only statements run in a read-only transaction where the server has one.

Why: a workload file's checks, counters and query generators are parsed as SELECTs
(confine.py), but a SELECT may call a function that writes (``setval``, a user's own).
PostgreSQL and MariaDB refuse any write in a transaction declared read-only; SQLite has
no such transaction, so its connection is made read-only (``PRAGMA query_only``) for as
long as they run. SQL Server is left as it is: its statements are held by parsing alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: per dialect: the statements that make what follows read-only, and those that undo that
#: after the rollback (a transaction's own setting ends with it)
READ_ONLY: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "postgresql": (("SET TRANSACTION READ ONLY",), ()),
    "mysql": (("START TRANSACTION READ ONLY",), ()),
    "sqlite": (("PRAGMA query_only = ON",), ("PRAGMA query_only = OFF",)),
}


@contextmanager
def read_only(dialect: str, execute: Callable[[str], object], rollback: Callable[[], object]) -> Iterator[None]:
    """What runs inside is one read-only transaction on ``dialect``'s connection (whose
    ``execute`` and ``rollback`` these are), rolled back at the end, error or not. The
    connection must be in a transaction of the driver's (not autocommit) or none yet."""
    begin, end = READ_ONLY.get(dialect, ((), ()))
    for statement in begin:
        execute(statement)
    try:
        yield
    finally:
        rollback()
        for statement in end:
            execute(statement)
