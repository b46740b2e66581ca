"""The rows of a prepared statement's result: binary-protocol values read from C buffers
into the Python values mysqlclient's text path gives for the same columns.

Why apart from the statements (targets/mysql/libmariadb.py): reading is per result shape, made
once per SELECT (its columns are fixed at prepare) and anew for every result of a CALL.
Integers and doubles are read as C numbers; every other type is asked for as text, which
libmariadb renders from the binary value, and converted as mysqlclient converts a text
result (its connection's ``converter``): DECIMAL to Decimal, DATETIME to datetime, and
so on, so that a session cannot tell the paths apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.targets.mysql.libmariadb import T_DOUBLE, T_LONGLONG, T_STRING, Prepared

MYSQL_NO_DATA, MYSQL_DATA_TRUNCATED = 100, 101
UNSIGNED_FLAG = 32
#: field types read as C integers, and as C doubles; anything else is read as text
INTEGER_TYPES = frozenset({1, 2, 3, 8, 9, 13})  # TINY, SHORT, LONG, LONGLONG, INT24, YEAR
FLOAT_TYPES = frozenset({4, 5})
#: the character set number of binary strings (BLOB, BINARY): bytes, not text
BINARY_CHARSET = 63
#: a text column's first buffer; a longer value is read again at its length
TEXT_BUFFER = 256


def result_rows(prepared: Prepared, converter: dict[int, Any]) -> list[tuple]:
    """The stored result's rows as Python values, the types mysqlclient's text path
    gives (its connection's ``converter`` for the rest)."""
    columns = prepared.columns
    if columns is None or prepared.varies:
        columns = prepared.columns = _columns(prepared, converter)
    return columns.fetch()


def _columns(prepared: Prepared, converter: dict[int, Any]) -> Columns:
    """The columns of the result at hand, from its metadata: those of an earlier result
    of the same shape where there was one (a CALL's answers: making them costs the
    client several times what reading the shape does)."""
    ffi, lib, stmt = prepared.handle.ffi, prepared.lib, prepared.stmt
    meta = lib.mysql_stmt_result_metadata(stmt)
    if meta == ffi.NULL:
        raise prepared.handle.error(stmt)
    try:
        fields = lib.mysql_fetch_fields(meta)
        shape = tuple([(f.type, f.flags & UNSIGNED_FLAG, f.charsetnr == BINARY_CHARSET, f.length)
                       for f in (fields[i] for i in range(lib.mysql_num_fields(meta)))])
    finally:
        lib.mysql_free_result(meta)
    found = prepared.shapes.get(shape)
    if found is None:
        found = prepared.shapes[shape] = Columns(prepared, shape, converter)
    return found


class Columns:
    """The result columns of one statement's result shape: C buffers bound once, and for
    each column how its value becomes Python's (integers and doubles read as C numbers,
    the rest as text converted as mysqlclient converts text results). ``shape``: each
    column's (type, unsigned flag, binary, length)."""

    __slots__ = ("prepared", "binds", "readers")

    def __init__(self, prepared: Prepared, shape: tuple[tuple[int, int, bool, int], ...],
                 converter: dict[int, Any]) -> None:
        ffi = prepared.handle.ffi
        self.prepared = prepared
        self.binds = ffi.new("MYSQL_BIND[]", max(len(shape), 1))
        self.readers = [_reader(ffi, prepared.lib, prepared.stmt, bind, i, column, converter)
                        for i, (bind, column) in enumerate(zip(self.binds, shape))]

    def fetch(self) -> list[tuple]:
        prepared = self.prepared
        lib, stmt = prepared.lib, prepared.stmt
        if lib.mysql_stmt_bind_result(stmt, self.binds):
            raise prepared.handle.error(stmt)
        rows: list[tuple] = []
        readers, fetch = self.readers, lib.mysql_stmt_fetch
        while True:
            status = fetch(stmt)
            if status == MYSQL_NO_DATA:
                return rows
            if status and status != MYSQL_DATA_TRUNCATED:
                raise prepared.handle.error(stmt)
            rows.append(tuple([read() for read in readers]))


def _reader(ffi: Any, lib: Any, stmt: Any, bind: Any, index: int, column: tuple[int, int, bool, int],
            converter: dict[int, Any]) -> Callable[[], Any]:
    """Bind result column ``index`` to a buffer of its own and return its reader."""
    kind, unsigned, binary, width = column
    null = ffi.new("my_bool[1]")
    bind.is_null = null
    if kind in INTEGER_TYPES or kind in FLOAT_TYPES:
        cell = ffi.new("unsigned long long[1]" if unsigned else "long long[1]") \
            if kind in INTEGER_TYPES else ffi.new("double[1]")
        bind.buffer, bind.buffer_type = cell, T_LONGLONG if kind in INTEGER_TYPES else T_DOUBLE
        bind.is_unsigned = 1 if unsigned else 0
        return lambda: None if null[0] else cell[0]
    size = max(min(width, TEXT_BUFFER), 1)
    buf, length = ffi.new("char[]", size), ffi.new("unsigned long[1]")
    bind.buffer, bind.buffer_length, bind.length, bind.buffer_type = buf, size, length, T_STRING
    convert = converter.get(kind)
    if not callable(convert):  # text kinds: mysqlclient's (flag, type) pairs, bytes or str
        convert = None
    longer = ffi.new("MYSQL_BIND *")
    #: its own length and NULL flag, set at every read: left NULL, libmariadb points them
    #: into the statement's own binds, which the next result (a CALL's) frees
    cells = (ffi.new("unsigned long[1]"), ffi.new("my_bool[1]"))
    unpack = ffi.unpack

    def read() -> Any:
        if null[0]:
            return None
        n = length[0]
        if n > size:  # cut to the buffer: read the whole value into one of its length
            whole = ffi.new("char[]", n)
            longer.buffer, longer.buffer_length, longer.buffer_type = whole, n, T_STRING
            longer.length, longer.is_null = cells
            if lib.mysql_stmt_fetch_column(stmt, longer, index, 0):
                raise TpsbenchError(f"reading column {index + 1} of a result failed")
            data = unpack(whole, n)
        else:
            data = unpack(buf, n)
        if binary and convert is None:
            return data
        text = data.decode()
        return convert(text) if convert is not None else text

    return read
