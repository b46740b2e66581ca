"""Column arrays to tab-separated text, entirely in numpy.

Bulk paths (PostgreSQL COPY, MySQL LOAD DATA) want text, and building it value by
value in Python costs more CPU than the database spends ingesting it. Here every column
becomes a fixed-width byte matrix, NUL-padded on the right: numbers by digit arithmetic
(numpy's own int-to-bytes cast costs ~300 ns a value), strings by a view of their
bytes, timestamps by formatting each distinct value once. The columns and separators
are laid side by side in one (rows x width) matrix, and dropping the NUL padding
leaves the finished text. Generated values never contain NUL, tab, newline or
backslash, so nothing needs escaping.
"""

from __future__ import annotations

import numpy as np

NUL, TAB, NEWLINE, MINUS, DOT, ZERO = 0, 9, 10, 45, 46, 48
NULL_TEXT = np.frombuffer(b"\\N", dtype=np.uint8)
MAX_DECIMALS = 6


def encode_rows(columns: list[np.ndarray], nulls: list[np.ndarray | None]) -> bytes:
    """TSV text of the rows, ``\\N`` for NULL, one line per row."""
    n = len(columns[0])
    parts = [_with_nulls(_column_bytes(col), mask) for col, mask in zip(columns, nulls)]
    width = sum(p.shape[1] for p in parts) + len(parts)
    out = np.empty((n, width), dtype=np.uint8)
    at = 0
    for i, part in enumerate(parts):
        out[:, at : at + part.shape[1]] = part
        at += part.shape[1]
        out[:, at] = NEWLINE if i == len(parts) - 1 else TAB
        at += 1
    flat = out.ravel()
    return flat[flat != NUL].tobytes()


def _with_nulls(matrix: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    if mask is None or not mask.any():
        return matrix
    if matrix.shape[1] < 2:
        matrix = np.pad(matrix, ((0, 0), (0, 2 - matrix.shape[1])))
    matrix = matrix.copy() if not matrix.flags.writeable else matrix
    matrix[mask] = NUL
    matrix[mask, :2] = NULL_TEXT
    return matrix


def _column_bytes(values: np.ndarray) -> np.ndarray:
    kind = values.dtype.kind
    if kind == "S":
        width = max(values.dtype.itemsize, 1)
        return np.ascontiguousarray(values).view(np.uint8).reshape(len(values), width)
    if kind in "iu":
        return integer_bytes(values.astype(np.int64), decimals=0)
    if kind == "f":
        decimals = _decimals(values)
        return integer_bytes(np.round(values * 10.0**decimals).astype(np.int64), decimals)
    if kind == "M":
        distinct, index = np.unique(values.astype("datetime64[s]"), return_inverse=True)
        text = np.char.replace(distinct.astype("S19"), b"T", b" ")
        return text.view(np.uint8).reshape(len(distinct), 19)[index.ravel()]
    raise TypeError(f"unsupported column dtype {values.dtype}")


def integer_bytes(scaled: np.ndarray, decimals: int) -> np.ndarray:
    """Decimal text of ``scaled / 10**decimals``, right-padded with NUL to one width.

    Digits are cut from the absolute value by integer division; leading zeros become
    NUL, except the one before the decimal point ("0.05").
    """
    n = len(scaled)
    negative = scaled < 0
    magnitude = np.abs(scaled)
    top = int(magnitude.max()) if n else 0
    digits = max(len(str(top)), decimals + 1)
    powers = 10 ** np.arange(digits - 1, -1, -1, dtype=np.int64)
    matrix = ((magnitude[:, None] // powers) % 10 + ZERO).astype(np.uint8)
    keep = np.cumsum(matrix != ZERO, axis=1) > 0
    keep[:, digits - decimals - 1 :] = True
    matrix[~keep] = NUL
    if decimals:
        matrix = np.insert(matrix, digits - decimals, DOT, axis=1)
    sign = np.where(negative, MINUS, NUL).astype(np.uint8)[:, None]
    return np.hstack([sign, matrix])


def _decimals(values: np.ndarray) -> int:
    """The fewest decimals that represent every value exactly (money: 2, rates: 4)."""
    for decimals in range(MAX_DECIMALS + 1):
        scaled = values * 10.0**decimals
        if np.all(np.abs(scaled - np.round(scaled)) < 1e-6):
            return decimals
    raise ValueError(f"float column needs more than {MAX_DECIMALS} decimals: not an exact decimal")
