"""Where the shipped data files live.

``schemas/`` and ``scale_factors/`` sit at the top of the source tree and are copied
into the wheel as ``tpsbench/schemas`` and ``tpsbench/scale_factors``. An editable or
source checkout finds them at the top of the tree instead.
"""

import re
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """The folder ``name`` ("schemas" or "scale_factors"), installed or in the checkout."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"tpsbench data folder {name!r} is missing from the installation")


def schema_file(workload: str, dialect: str) -> Path:
    """The DDL file of ``workload`` for a target's dialect, e.g. schemas/tpcc/postgresql.sql."""
    return data_dir("schemas") / workload / f"{dialect}.sql"


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
