"""The bulk paths on MySQL and MariaDB: LOAD DATA LOCAL of a batch's TSV, and multi-row
INSERTs rendered from a batch as the fallback.

Apart from tpsbench.targets.mysql.target because loading is a job of its own: the servers
that refuse LOAD DATA LOCAL (MySQL 8 ships with ``local_infile=OFF``) are loaded through the
INSERTs.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.tsv import NULL_TEXT

#: where LOAD DATA's temporary file goes: memory, so the file costs no disk I/O
SHM = "/dev/shm"

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


def load_data_local(conn: Any, batch: Batch) -> None:
    """LOAD DATA LOCAL INFILE of the batch's TSV through a temporary file.

    With LOCAL the server cannot stop the client mid-stream, so it turns duplicate keys
    and bad values into warnings and skips or mangles rows (as IGNORE would): the row
    count and the warnings are checked so that nothing is lost silently.
    """
    folder = SHM if os.access(SHM, os.W_OK) else None
    with tempfile.NamedTemporaryFile(dir=folder, prefix="tpsbench-", suffix=".tsv") as tmp:
        tmp.write(batch.to_tsv())
        tmp.flush()
        path = tmp.name.replace("\\", "\\\\").replace("'", "\\'")
        cur = conn.cursor()
        try:
            cur.execute(
                f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {batch.table} CHARACTER SET utf8mb4"
                " FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n'"
                f" ({','.join(batch.names)})"
            )
            loaded = cur.rowcount
            cur.execute("SELECT @@warning_count")
            warnings = int(cur.fetchone()[0])
            if warnings:
                cur.execute("SHOW WARNINGS LIMIT 1")
                first = cur.fetchone()
                raise TpsbenchError(f"LOAD DATA into {batch.table}: {warnings} warnings, the first: {first[2]}")
        finally:
            cur.close()
    if loaded != len(batch):
        raise TpsbenchError(f"LOAD DATA into {batch.table} stored {loaded} of {len(batch)} rows")
