"""The fetch side of the targets' fast cursors: rows read whole, converted when first used.

Shared by the libpq and mysqlclient cursors (targets/libpq.py, targets/mysql/mysqlclient.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any


class LazyRows(Sequence[tuple]):
    """A result's rows, read whole from the server, turned into Python values on first use.

    Why: converting values costs the client more than reading them, and on the hot path
    many results are never looked at: a TPC-C call whose answer the run needs only to
    count (the counting cursors, which sysbench uses, drop their rows unread altogether).
    Their bytes are in the client's memory either way (libpq's result, mysqlclient's
    stored result); the row count is known without converting anything. A target's subclass says how to convert
    (``_convert``), and must not depend on what the connection reads later.
    """

    __slots__ = ("length", "_rows")
    #: the number of rows, and the rows once converted: a subclass's constructor sets
    #: them (``_rows`` to None) itself, one call fewer per result than a super() call
    length: int
    _rows: Sequence[tuple] | None

    def _convert(self) -> Sequence[tuple]:
        raise NotImplementedError

    def converted(self) -> Sequence[tuple]:
        """All rows as Python values (converted on the first call only)."""
        rows = self._rows
        if rows is None:
            rows = self._rows = self._convert()
        return rows

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: Any) -> Any:
        return self.converted()[index]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.converted())

    def __eq__(self, other: object) -> bool:
        return self.converted() == (other.converted() if isinstance(other, LazyRows) else other)

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a class that defines __eq__ is

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.converted()!r})"


class BufferedRows:
    """The fetch side of the targets' fast cursors: rows already read, handed out in order.

    The fast cursors read a whole result in one driver call (libpq, mysqlclient's
    store_result) and keep it in ``rows``, a :class:`LazyRows` where values are converted
    on first use; fetchone/fetchall then only walk it. ``fetchall`` before any
    ``fetchone`` hands out the LazyRows itself: a caller that only counts the rows, or
    keeps them for later, converts nothing (TPC-C's stored-procedure calls).
    """

    rows: Sequence[tuple] = ()
    pos: int = 0

    def fetchone(self) -> tuple | None:
        pos = self.pos
        if pos < len(self.rows):
            self.pos = pos + 1
            return self.rows[pos]
        return None

    def fetchall(self) -> Sequence[tuple]:
        rows = self.rows[self.pos:] if self.pos else self.rows
        self.pos = len(self.rows)
        return rows

    #: no further result to step to: the fast cursors read every result themselves (a
    #: CALL's status is drained before the next command). DB-API lets a cursor go
    #: without nextset; a method that only returned None cost a call per result.
    nextset = None
