"""Where the shipped data files live.

``schemas/`` and ``scale_factors/`` sit at the top of the source tree and are copied
into the wheel as ``tpsbench/schemas`` and ``tpsbench/scale_factors``. An editable or
source checkout finds them at the top of the tree instead.
"""

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
    with ``;`` at the end of a line; ``--`` comment lines are dropped.
    """
    tables_part, _, index_part = text.partition("\n-- indexes")
    return _statements(tables_part), _statements(index_part)


def _statements(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    body = "\n".join(lines)
    statements = (s.strip().rstrip(";").strip() for s in body.split(";\n"))
    return [s for s in statements if s]
