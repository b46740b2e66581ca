"""A server brought to the same quiet state before every measured run, whichever tool runs next.

Why: a run that writes leaves work behind (PostgreSQL's dirty buffers and, with
autovacuum off as on these machines, dead rows; InnoDB's dirty pages and undo history
to purge), and the next run pays for it in its window: a checkpoint's fsyncs and
full-page images, longer HOT chains, purge threads on the server's cores. In a side-by-side
comparison the tool that happens to run second pays for the first, and single pairs
swing by 15 % either way (bench/results/vs_sysbench_split.txt). Settling first makes
both start alike.

- PostgreSQL: ``VACUUM`` of the given tables (the dead rows the last run left; the
  statistics kept as they are), then ``CHECKPOINT``.
- MariaDB/MySQL: every dirty page flushed (``innodb_max_dirty_pages_pct`` 0 until none is
  left, then put back) and the purge caught up (history list length near zero), each
  waited for up to a minute.
"""

from __future__ import annotations

import time
from typing import Any

#: InnoDB's history list length taken as caught up: a few transactions' undo
PURGED = 100


def settle(server: str, conn: Any, tables: tuple[str, ...] = (), wait_s: float = 60.0) -> None:
    """Bring the server behind ``conn`` (autocommit, on the benchmark's database) to rest."""
    if server == "postgresql":
        for table in tables:
            conn.execute(f'VACUUM "{table}"')
        conn.execute("CHECKPOINT")
        return
    cur = conn.cursor()
    cur.execute("SELECT @@innodb_max_dirty_pages_pct")
    (saved,) = cur.fetchone()
    deadline = time.monotonic() + wait_s
    cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    try:
        while time.monotonic() < deadline and _status(cur, "Innodb_buffer_pool_pages_dirty") > 0:
            time.sleep(0.2)
    finally:
        cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(saved)}")
    while time.monotonic() < deadline and _status(cur, "Innodb_history_list_length") > PURGED:
        time.sleep(0.2)


def _status(cur: Any, name: str) -> int:
    """A global status counter, 0 where the server has none of that name."""
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    row = cur.fetchone()
    return int(row[1]) if row else 0
