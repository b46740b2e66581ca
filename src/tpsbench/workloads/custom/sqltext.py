"""SQL with named parameters (``:customer_id``), as a workload file writes it, for one target.

Why named: a user writes each statement once, the way they would read it, and the same
text must run on drivers whose markers differ (``%s`` for libpq and mysqlclient, ``?``
for sqlite3 and pyodbc) and be prepared in SQL for the check before a run (``$1`` in
PostgreSQL's PREPARE, ``?`` in MySQL's). So a statement is parsed once into its pieces
(:class:`Named`) and rendered per marker; its values are always bound by the driver, in
the order of the markers, never formatted into the text.

What is not a parameter: anything inside quotes ('text', "name", `name`) or comments,
PostgreSQL's ``::`` casts and MySQL's ``:=``. A parameter used twice is bound twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: the dialects a statement may have a variant for (the targets' ``dialect``)
DIALECTS = ("sqlite", "postgresql", "mysql", "mssql")

#: quoted text and comments (kept as they are), casts, parameters and percent signs
_TOKENS = re.compile(r"""'(?:[^']|'')*'|"[^"]*"|`[^`]*`|--[^\n]*|/\*.*?\*/|::|:=|:([A-Za-z_]\w*)|%""", re.DOTALL)


@dataclass(frozen=True)
class Named:
    """One statement split at its parameters: ``text[0] :names[0] text[1] ...``."""

    parts: tuple[str, ...]
    names: tuple[str, ...]

    def render(self, marker: Callable[[int], str], percent: str = "%") -> str:
        """The statement with the ``i``-th parameter (from 1) written ``marker(i)`` and every
        literal percent sign written ``percent`` (``%%`` where the driver formats ``%s``)."""
        out = [self.parts[0].replace("%", percent)]
        for i, part in enumerate(self.parts[1:], start=1):
            out.append(marker(i))
            out.append(part.replace("%", percent))
        return "".join(out)


def parse(sql: str) -> Named:
    """``sql`` split at its named parameters (see the module docstring)."""
    parts: list[str] = []
    names: list[str] = []
    last = 0
    for match in _TOKENS.finditer(sql):
        if match.group(1) is not None:
            parts.append(sql[last:match.start()])
            names.append(match.group(1))
            last = match.end()
    parts.append(sql[last:])
    return Named(tuple(parts), tuple(names))


def for_driver(named: Named, placeholder: str) -> str:
    """The text a target's driver takes: its ``placeholder`` ("%s" or "?") per parameter,
    and percent signs doubled where it formats ``%s`` and the statement has parameters
    (libpq's prepare and mysqlclient read ``%%`` as one; a statement without parameters
    goes as it is)."""
    percent = "%%" if placeholder == "%s" and named.names else "%"
    return named.render(lambda i: placeholder, percent)


@dataclass(frozen=True)
class SqlText:
    """A statement as the file gives it: one text for every database (``sql``), and
    optionally a variant per dialect that replaces it there."""

    default: str | None
    variants: Mapping[str, str]

    def for_dialect(self, dialect: str) -> str | None:
        """The text for ``dialect``: its variant, else the default (None: neither)."""
        return self.variants.get(dialect, self.default)

    def texts(self) -> list[str]:
        """Every text given (the default and each variant), for checks that hold for all."""
        return ([self.default] if self.default is not None else []) + list(self.variants.values())

    def names(self) -> set[str]:
        """Every parameter any of the texts uses."""
        return {name for text in self.texts() for name in parse(text).names}
