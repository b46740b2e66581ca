"""A workload's DDL file: its tables, its indexes, its stored routines.

Each workload folder has one file per database dialect, ``schemas/<dialect>.sql``: the
tables with their primary keys, then after the line ``-- indexes`` the secondary indexes
(built after the data, which is faster than maintaining them row by row), then after
``-- procedures`` any stored routines. This module splits such a file and runs its
parts; builds, drops and runs all go through it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpsbench.core.target import Target
    from tpsbench.core.workload import Workload


def split_ddl(text: str) -> tuple[list[str], list[str]]:
    """Split a DDL file into (table statements, index statements).

    Index statements follow the line ``-- indexes`` so that the loader can build them
    after the data, which is faster than maintaining them row by row. Statements end
    with ``;`` at the end of a line; ``--`` comment lines are dropped. Stored routines
    (after ``-- procedures``) are not part of either: see :func:`split_routines`.
    """
    text = ROUTINES_MARKER.split(text, maxsplit=1)[0]
    tables_part, _, index_part = text.partition("\n-- indexes")
    return _statements(tables_part), _statements(index_part)


#: the line after which a DDL file holds stored routines: "-- procedures", maybe a comment after
ROUTINES_MARKER = re.compile(r"^-- procedures(?:[ \t].*)?$", re.MULTILINE)
_ROUTINE_END = re.compile(r"^//[ \t]*$", re.MULTILINE)
_ROUTINE_NAME = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)\s+(\w+)", re.IGNORECASE)


def split_routines(text: str) -> list[tuple[str, str, str]]:
    """The stored routines of a DDL file as (kind, name, CREATE statement).

    They follow the line ``-- procedures``, each ended by a line ``//`` (routine bodies
    hold semicolons, so ``;`` cannot end them; the mysql client's DELIMITER does the
    same). kind is FUNCTION or PROCEDURE, as DROP needs it.
    """
    parts = ROUTINES_MARKER.split(text, maxsplit=1)
    if len(parts) == 1:
        return []
    routines = []
    for chunk in _ROUTINE_END.split(parts[1]):
        body = chunk.strip()
        if not body or all(line.lstrip().startswith("--") for line in body.splitlines()):
            continue
        match = _ROUTINE_NAME.search(body)
        if match is None:
            raise ValueError(f"not a CREATE FUNCTION/PROCEDURE: {body[:60]!r}")
        routines.append((match.group(1).upper(), match.group(2), body))
    return routines


def _statements(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    body = "\n".join(lines)
    statements = (s.strip().rstrip(";").strip() for s in body.split(";\n"))
    return [s for s in statements if s]


def routines(workload: Workload, target: Target) -> list[tuple[str, str, str]]:
    """The stored routines of the workload's DDL file for ``target`` (none if it has no file)."""
    path = workload.schema_file(target.dialect)
    return split_routines(path.read_text()) if path.exists() else []


def install_routines(workload: Workload, target: Target) -> list[str]:
    """Create the stored routines of the workload's DDL file, replacing older ones.

    Runs call this before their first step, so the routines a run calls are always the
    ones of the tpsbench that runs it, also on a database built by an older version.
    Returns their names.
    """
    found = routines(workload, target)
    if not found:
        return []
    # through the DB-API cursor without parameters: SQLAlchemy would have the driver
    # read the %, : and ? of the routine bodies as parameter markers
    with target.session("installing stored procedures") as conn:
        cur = conn.cursor()
        for kind, name, body in found:
            cur.execute(f"DROP {kind} IF EXISTS {name}")
            cur.execute(body)
        conn.commit()
    return [name for _, name, _ in found]


def execute_ddl(target: Target, statements: list[str], doing: str) -> None:
    """Run DDL statements in one transaction (where the database has transactional DDL);
    none, no connection (a drop with nothing to drop must not create a SQLite file)."""
    if not statements:
        return
    with target.translate_errors(doing), target.engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
