"""A chunk of generated rows, column-wise, and its two wire forms.

Loaders generate whole columns with numpy; targets need either text for a bulk path
(PostgreSQL COPY, MySQL LOAD DATA) or row tuples for ``executemany``. Keeping the
columns as arrays until the last moment lets both conversions run in C: numbers are
cast to bytes by numpy, rows are joined by ``bytes.join``.

Column conventions:
- integers: any numpy integer array;
- exact decimals: float64 arrays holding values rounded to the column's scale; the
  shortest repr of such a double is the decimal itself, so text is exact;
- strings: numpy ``S`` (bytes) arrays; trailing NUL bytes are not part of the value;
- timestamps: ``datetime64[s]`` arrays;
- NULL: a boolean mask in ``nulls`` for the column.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tpsbench.core.tsv import NULL_TEXT, encode_rows


@dataclass
class Batch:
    """Rows of one table, stored as equally long column arrays in table column order."""

    table: str
    columns: dict[str, np.ndarray]
    nulls: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def text_columns(self) -> list[list[bytes]]:
        """Every column as a list of bytes values in PostgreSQL/MySQL text format."""
        out = []
        for name, values in self.columns.items():
            text = _to_bytes(values)
            mask = self.nulls.get(name)
            if mask is not None and mask.any():
                text = np.where(mask, NULL_TEXT, text)
            out.append(text.tolist())
        return out

    def to_tsv(self) -> bytes:
        """Tab-separated lines, ``\\N`` for NULL: both COPY's and LOAD DATA's default format.

        Built in numpy (see :mod:`tpsbench.core.tsv`); generated strings never contain
        tabs, newlines or backslashes, so no escaping is needed, and :func:`check_plain`
        guards that assumption in tests.
        """
        if not len(self):
            return b""
        return encode_rows(list(self.columns.values()), [self.nulls.get(name) for name in self.columns])

    def to_rows(self, timestamps: Literal["text", "datetime"] = "text") -> list[tuple[Any, ...]]:
        """Row tuples of Python values, for ``executemany``.

        ``timestamps="text"`` gives ISO strings (SQLite keeps timestamps as text);
        ``"datetime"`` gives :class:`datetime.datetime` (ODBC drivers want those).
        """
        cols = []
        for name, values in self.columns.items():
            col = _to_python(values, timestamps)
            mask = self.nulls.get(name)
            if mask is not None and mask.any():
                col = [None if m else v for v, m in zip(col, mask.tolist())]
            cols.append(col)
        return list(zip(*cols))

    def nbytes_text(self) -> int:
        """Approximate size of the rows as text, for MB/s in the progress display."""
        return sum(_width(v) * len(v) for v in self.columns.values()) + len(self) * len(self.columns)


def _to_bytes(values: np.ndarray) -> np.ndarray:
    kind = values.dtype.kind
    if kind == "S":
        return values
    if kind == "M":
        return np.char.replace(values.astype("datetime64[s]").astype("S19"), b"T", b" ")
    if kind in "iuf":
        return values.astype("S")
    raise TypeError(f"unsupported column dtype {values.dtype}")


def _to_python(values: np.ndarray, timestamps: str) -> list[Any]:
    kind = values.dtype.kind
    if kind == "S":
        return [v.decode() for v in values.tolist()]
    if kind == "M":
        stamps = values.astype("datetime64[s]")
        if timestamps == "text":
            return [s.replace("T", " ") for s in np.datetime_as_string(stamps).tolist()]
        return stamps.astype(dt.datetime).tolist()  # type: ignore[no-any-return]  # numpy types tolist() as Any
    return values.tolist()  # type: ignore[no-any-return]  # numpy types tolist() as Any


def _width(values: np.ndarray) -> int:
    if values.dtype.kind == "S":
        return values.dtype.itemsize // 2 or 1
    if values.dtype.kind == "M":
        return 19
    return 6


def check_plain(batch: Batch) -> None:
    """Raise if any string value holds a character that text formats would need escaped."""
    for name, values in batch.columns.items():
        if values.dtype.kind == "S":
            joined = b"".join(values.tolist())
            for bad in (b"\t", b"\n", b"\\", b"\r"):
                if bad in joined:
                    raise ValueError(f"{batch.table}.{name} holds {bad!r}")
