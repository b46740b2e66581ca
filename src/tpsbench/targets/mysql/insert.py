"""The bulk path's fallback on MySQL and MariaDB: multi-row INSERTs rendered from a batch.

Apart from tpsbench.targets.mysql.target because it is a path of its own: the servers that refuse
LOAD DATA LOCAL (MySQL 8 ships with ``local_infile=OFF``) are loaded through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tpsbench.core.batch import Batch
from tpsbench.core.tsv import NULL_TEXT

#: size of one multi-row INSERT: it loaded faster than larger ones
#: (bench/experiments/results/mysql_bulk_paths.txt) and stays under every server's max_allowed_packet
INSERT_STATEMENT_BYTES = 1 << 20


def insert_rows(conn: Any, batch: Batch, statement_bytes: int = INSERT_STATEMENT_BYTES) -> None:
    """The batch as multi-row INSERTs of about ``statement_bytes`` each."""
    cur = conn.cursor()
    try:
        for statement in insert_statements(batch, statement_bytes):
            cur.execute(statement)
    finally:
        cur.close()


def insert_statements(batch: Batch, statement_bytes: int = INSERT_STATEMENT_BYTES) -> Iterator[bytes]:
    """``INSERT ... VALUES (...),(...)`` statements holding every row of ``batch`` once.

    Values are rendered as SQL literals from the batch's text form: numbers as they are,
    strings and timestamps quoted (quotes doubled, backslashes escaped, which is right
    unless the server runs with NO_BACKSLASH_ESCAPES), NULL as NULL.
    """
    head = f"INSERT INTO {batch.table} ({','.join(batch.names)}) VALUES ".encode()
    columns = []
    for values, text in zip(batch.columns.values(), batch.text_columns()):
        if values.dtype.kind in "SM":
            columns.append([_quoted(v) for v in text])
        else:
            columns.append([b"NULL" if v == NULL_TEXT else v for v in text])
    rows = [b"(" + b",".join(row) + b")" for row in zip(*columns)]
    start, size = 0, 0
    for i, row in enumerate(rows):
        if size and size + len(row) > statement_bytes:
            yield head + b",".join(rows[start:i])
            start, size = i, 0
        size += len(row) + 1
    if start < len(rows):
        yield head + b",".join(rows[start:])


def _quoted(value: bytes) -> bytes:
    if value == NULL_TEXT:
        return b"NULL"
    return b"'" + value.replace(b"\\", b"\\\\").replace(b"'", b"''") + b"'"
