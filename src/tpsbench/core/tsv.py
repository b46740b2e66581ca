"""Column arrays to tab-separated text, entirely in numpy.

Bulk paths (PostgreSQL COPY, MySQL LOAD DATA) want text, and building it value by
value in Python costs more CPU than the database spends ingesting it. Here every row
becomes one fixed-width record, NUL-padded inside its fields, and dropping the NUL
bytes of all records at once leaves the finished text:

- the record is first filled from a template row holding the tabs, the newline and
  the text of every *constant* column (a warehouse id, the load time, a fixed balance:
  most TPC-C columns are constant within a chunk), encoded once per batch;
- the other columns are written into their fields as fixed-width byte strings, through
  a structured view of the records (one strided copy per column):
  strings by their own bytes, numbers by a lookup in a cached table of the text of
  0..10**k-1 (one gather instead of digit arithmetic; numbers outside the tables fall
  back to digit arithmetic), timestamps by formatting each distinct value once.

Generated values never contain NUL, tab, newline or backslash, so nothing needs
escaping.
"""

from __future__ import annotations

import numpy as np

NUL, TAB, NEWLINE, MINUS, DOT, ZERO = 0, 9, 10, 45, 46, 48
NULL_TEXT = b"\\N"
MAX_DECIMALS = 6
#: lookup tables cover scaled values with up to this many digits (10**6 entries, 7 MB)
TABLE_DIGITS = 6
#: string columns at most this wide are checked for being constant
CONSTANT_STRING_WIDTH = 8
#: rows are encoded in blocks of about this many bytes: a block stays in the CPU's
#: cache from the template fill to the NUL removal (whole batches, many times larger,
#: fall out of it and take longer), and the GIL is released between blocks
BLOCK_BYTES = 512 << 10


def encode_rows(columns: list[np.ndarray], nulls: list[np.ndarray | None]) -> bytes:
    """TSV text of the rows, ``\\N`` for NULL, one line per row."""
    n = len(columns[0])
    if n == 0:
        return b""
    template = bytearray()
    names: list[str] = []
    formats: list[str] = []
    offsets: list[int] = []
    values: list[np.ndarray] = []
    padded = False
    for i, (col, mask) in enumerate(zip(columns, nulls)):
        field = _field(col, mask)
        if isinstance(field, bytes):
            template += field
        else:
            width = field.dtype.itemsize
            names.append(f"f{i}")
            formats.append(f"S{width}")
            offsets.append(len(template))
            values.append(field)
            template += bytes(width)
            padded = True
        template.append(NEWLINE if i == len(columns) - 1 else TAB)
    width = len(template)
    dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": width})
    rows = max(1, BLOCK_BYTES // width)
    block = np.empty((min(rows, n), width), np.uint8)
    pieces = []
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        records = block[: hi - lo]
        records[:] = np.frombuffer(bytes(template), np.uint8)
        if names:
            view = records.view(dtype).reshape(hi - lo)
            for name, field in zip(names, values):
                view[name] = field[lo:hi]
        flat = records.reshape(-1)
        pieces.append(_drop_nul(flat) if padded else flat.tobytes())
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _drop_nul(flat: np.ndarray) -> bytes:
    """The bytes of ``flat`` without its NUL bytes."""
    return flat.tobytes().translate(None, b"\0")


def _field(values: np.ndarray, mask: np.ndarray | None) -> bytes | np.ndarray:
    """One column as constant text (bytes) or as an ``S{w}`` array of NUL-padded text."""
    if mask is not None:
        if not mask.any():
            mask = None
        elif mask.all():
            return NULL_TEXT
    text = _column_text(values)
    if mask is None:
        return text
    if isinstance(text, bytes):
        text = np.array([text])
        return np.where(mask, np.array(NULL_TEXT, f"S{max(2, len(text[0]))}"), text[0])
    if text.dtype.itemsize < 2:
        text = text.astype("S2")
    elif text is values or not text.flags.writeable or not text.flags.owndata:
        text = text.copy()  # never write into the caller's column
    text[mask] = NULL_TEXT
    return text


def _column_text(values: np.ndarray) -> bytes | np.ndarray:
    kind = values.dtype.kind
    if kind == "S":
        if values.dtype.itemsize <= CONSTANT_STRING_WIDTH and _constant(values):
            return bytes(values[0])
        return values
    if kind in "iu":
        return _number_text(values, 0)
    if kind == "f":
        decimals = _decimals(values)
        return _number_text(np.round(values * 10.0**decimals).astype(np.int64), decimals)
    if kind == "M":
        stamps = values.astype("datetime64[s]")
        if _constant(stamps):
            return _stamp_text(stamps[:1])[0]  # type: ignore[no-any-return]  # an element of a numpy array is typed Any
        distinct, index = np.unique(stamps, return_inverse=True)
        return _stamp_text(distinct)[index.ravel()]
    raise TypeError(f"unsupported column dtype {values.dtype}")


def _constant(values: np.ndarray) -> bool:
    return bool((values == values[0]).all())


def _stamp_text(stamps: np.ndarray) -> np.ndarray:
    return np.char.replace(stamps.astype("S19"), b"T", b" ")


def _number_text(scaled: np.ndarray, decimals: int) -> bytes | np.ndarray:
    """Text of ``scaled / 10**decimals``: constant bytes, or an ``S{w}`` array."""
    low, high = int(scaled.min()), int(scaled.max())
    if low == high:
        return integer_bytes(np.array([low], np.int64), decimals).tobytes().replace(b"\0", b"")
    digits = max(len(str(high)), decimals + 1)
    if low >= 0 and digits <= TABLE_DIGITS:
        return _table(digits, decimals)[scaled]  # type: ignore[no-any-return]  # numpy types fancy indexing's result as Any
    matrix = integer_bytes(scaled.astype(np.int64), decimals)
    return matrix.view(f"S{matrix.shape[1]}").reshape(len(scaled))


_TABLES: dict[tuple[int, int], np.ndarray] = {}


def _table(digits: int, decimals: int) -> np.ndarray:
    """Text of 0..10**digits-1 scaled by 10**-decimals, as NUL-padded ``S`` values.

    Built column by column without arithmetic: in counting order the k-th digit is a
    run of 10**(digits-1-k) equal characters repeated, and its leading zeros (NUL) are
    exactly the first 10**(digits-1-k) rows.
    """
    key = (digits, decimals)
    table = _TABLES.get(key)
    if table is None:
        point = 1 if decimals else 0
        count = 10**digits
        matrix = np.empty((count, digits + point), np.uint8)
        characters = np.arange(ZERO, ZERO + 10, dtype=np.uint8)
        whole = digits - decimals  # digits before the point, at least 1
        for k in range(digits):
            run = 10 ** (digits - 1 - k)
            column = k if k < whole else k + point
            matrix[:, column] = np.tile(np.repeat(characters, run), count // (10 * run))
            if k < whole - 1:
                matrix[:run, column] = NUL
        if point:
            matrix[:, whole] = DOT
        table = _TABLES[key] = matrix.view(f"S{digits + point}").reshape(count)
    return table


def integer_bytes(scaled: np.ndarray, decimals: int) -> np.ndarray:
    """Decimal text of ``scaled / 10**decimals``, right-padded with NUL to one width.

    Digits are cut from the absolute value by integer division; leading zeros become
    NUL, except the one before the decimal point ("0.05"). The sign column is NUL for
    numbers that are not negative.
    """
    n = len(scaled)
    magnitude = np.abs(scaled)
    top = int(magnitude.max()) if n else 0
    digits = max(len(str(top)), decimals + 1)
    point = 1 if decimals else 0
    matrix = np.zeros((n, 1 + digits + point), np.uint8)
    matrix[:, 0] = np.where(scaled < 0, MINUS, NUL)
    rest = magnitude.copy()
    for k in range(digits):
        column = digits + point - k - (1 if point and k >= decimals else 0)
        rest, digit = np.divmod(rest, 10)
        matrix[:, column] = digit + ZERO
    if point:
        matrix[:, digits - decimals + 1] = DOT
    # leading zeros (before the one ahead of the point) become NUL
    leading = np.cumsum(matrix[:, 1 : digits - decimals] != ZERO, axis=1) == 0
    matrix[:, 1 : digits - decimals][leading] = NUL
    return matrix


def _decimals(values: np.ndarray) -> int:
    """The fewest decimals that represent every value exactly (money: 2, rates: 4)."""
    sample = values[:64]  # most candidates fail on a few values: no need to scan them all
    for decimals in range(MAX_DECIMALS + 1):
        if _exact(sample, decimals) and _exact(values, decimals):
            return decimals
    raise ValueError(f"float column needs more than {MAX_DECIMALS} decimals: not an exact decimal")


def _exact(values: np.ndarray, decimals: int) -> bool:
    scaled = values * 10.0**decimals
    return bool(np.all(np.abs(scaled - np.round(scaled)) < 1e-6))
