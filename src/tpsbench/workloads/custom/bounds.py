"""A column's generator held to the column's type: values its type cannot hold refused
before the build, in one line naming the column.

Why: a value beyond a column's range fails a PostgreSQL load midway (after minutes of
loading), and MariaDB outside strict mode stores the nearest value it can hold without a
word, so the data would not be what the file says. The range of each column comes from
its ``create`` as the target's dialect reads it (sqlglot); SQLite's integer columns all
hold 64 bits, and its decimal columns any number, so only the generators' own bounds
(generators.py) hold there. "rows:TABLE" bounds are known at the build's scale only, and
a sequence's last value too: those are the load's to meet.
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from tpsbench.workloads.custom.confine import SQLGLOT, quiet
from tpsbench.workloads.custom.generators import Generator
from tpsbench.workloads.custom.spec import Spec, Table

T = exp.DataType.Type
#: whole-number types by their range, signed and unsigned (MySQL's UNSIGNED)
INTEGER_RANGES: dict[T, tuple[int, int]] = {  # type: ignore[valid-type]  # sqlglot aliases DataType.Type, which mypy takes for a variable
    T.TINYINT: (-(2**7), 2**7 - 1), T.UTINYINT: (0, 2**8 - 1),
    T.SMALLINT: (-(2**15), 2**15 - 1), T.USMALLINT: (0, 2**16 - 1),
    T.MEDIUMINT: (-(2**23), 2**23 - 1), T.UMEDIUMINT: (0, 2**24 - 1),
    T.INT: (-(2**31), 2**31 - 1), T.UINT: (0, 2**32 - 1),
    T.BIGINT: (-(2**63), 2**63 - 1), T.UBIGINT: (0, 2**64 - 1),
}
DECIMALS = frozenset({T.DECIMAL, T.UDECIMAL})
#: the dialects whose column types bound their values (SQLite's do not; SQL Server's are not read)
RANGED = ("postgresql", "mysql")


def _span(gen: Generator) -> tuple[float, float] | None:
    """The least and greatest value ``gen`` can give, where the file alone tells."""
    args = gen.args
    if gen.kind in ("uniform", "nurand", "decimal") and all(isinstance(args[k], (int, float)) for k in ("min", "max")):
        return args["min"], args["max"]
    if gen.kind == "choice" and all(isinstance(v, (int, float)) for v in args["values"]):
        return min(args["values"]), max(args["values"])
    if gen.kind == "value" and isinstance(args["value"], (int, float)):
        return args["value"], args["value"]
    if gen.kind == "sequence" and isinstance(args.get("start", 1), int):
        return args.get("start", 1), args.get("start", 1)
    return None


def _range(kind: exp.DataType, dialect: str) -> tuple[float, float, str] | None:
    """The values a column of type ``kind`` holds on ``dialect`` (least, greatest, its SQL)."""
    if dialect not in RANGED:
        return None
    written = kind.sql(SQLGLOT[dialect])
    if kind.this in INTEGER_RANGES:
        return (*INTEGER_RANGES[kind.this], written)
    if kind.this in DECIMALS and kind.expressions:
        numbers = [int(e.name) for e in kind.expressions if e.name.isdigit()]
        precision, scale = (numbers + [0])[:2] if numbers else (0, 0)
        if precision:
            greatest = round(10 ** (precision - scale) - 10.0 ** -scale, scale)
            return (0 if kind.this == T.UDECIMAL else -greatest), greatest, written
    return None


def _columns(table: Table, dialect: str) -> Iterator[tuple[str, exp.DataType]]:
    """Each column of ``table``'s create on ``dialect`` and its type (none where it does not parse:
    confine.py says so)."""
    text = table.create.for_dialect(dialect)
    try:
        with quiet():
            parsed = sqlglot.parse_one(text, read=SQLGLOT[dialect]) if text else None
    except SqlglotError:
        return
    for column in parsed.find_all(exp.ColumnDef) if parsed is not None else ():
        kind = column.args.get("kind")
        if isinstance(kind, exp.DataType):
            yield column.name, kind


def problems(found: Spec, dialect: str) -> list[str]:
    """Each table column whose generator gives values its type cannot hold on ``dialect``."""
    out: list[str] = []
    if dialect not in RANGED:
        return out
    for table in found.tables:
        types = {name.lower(): kind for name, kind in _columns(table, dialect)}
        for column, gen in table.columns.items():
            span, kind = _span(gen), types.get(column.lower())
            held = _range(kind, dialect) if kind is not None else None
            if span is None or held is None:
                continue
            least, greatest, written = held
            if span[0] < least or span[1] > greatest:
                out.append(f"{found.path}: table {table.name!r} column {column}: {span[0]}..{span[1]} is beyond what "
                           f"{written} holds on {dialect} ({least}..{greatest})")
    return out
