"""How a ``--results`` value becomes a connection: a plain file name, a result bundle,
a connection that cannot write.

Why here and not in every command: ``--results FILE`` names a SQLite store or a result
bundle (tpsbench.results.bundle) by its path for every reader (report, compare, plan,
serve) alike. A bundle is evidence with digests over its content: it is opened
read-only, and a writer (run, campaign, import) is refused it in one line, so that no
command can change what a bundle proves.
"""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError
from tpsbench.results.schema import BUNDLE_TABLE

#: how long a SQLite writer waits for another's lock. SQLite keeps its default rollback
#: journal, not WAL: WAL would let readers and a writer overlap, but a WAL database
#: cannot be read where its -shm file cannot be created (a read-only or full disk: the
#: very case in which `tpsbench runs` must still show what was kept) nor on a network
#: file system. With the rollback journal a writer waits for the other writer's short
#: transaction and for readers' brief reads; 30 s is far more than those take even on a
#: disk busy with a benchmark, and a lock held longer is a fault that stops the run.
SQLITE_BUSY_TIMEOUT_S = 30.0


def store_url(text: str) -> str:
    """``text`` as a SQLAlchemy URL: the path of an existing file (no ``scheme://``) names a
    SQLite store or a bundle (``--results results.db``); anything else is left as it is
    (a new SQLite store is named by URL, sqlite:///results.db, so that a mistyped value
    creates no file)."""
    if "://" not in text and os.path.isfile(text):
        return f"sqlite:///{os.path.abspath(text)}"
    return text


def read_only(engine: sa.Engine) -> sa.Engine:
    """An engine on ``engine``'s database that cannot write where the backend allows it:
    SQLite with ``mode=ro``, PostgreSQL sessions in read-only transactions; other backends
    rely on the reader issuing no writes."""
    parsed = engine.url
    if parsed.query.get("mode") == "ro":
        return engine  # opened read-only already
    if parsed.get_backend_name() == "sqlite":
        path = os.path.abspath(parsed.database or "")
        parsed = parsed.set(database=f"file:{path}", query={"mode": "ro", "uri": "true"})
        connect: dict[str, Any] = {"timeout": SQLITE_BUSY_TIMEOUT_S}
    elif parsed.get_backend_name() == "postgresql":
        connect = {"options": "-c default_transaction_read_only=on"}
    else:
        connect = {}
    engine.dispose()
    return sa.create_engine(parsed, poolclass=sa.NullPool, connect_args=connect)


def is_bundle(engine: sa.Engine) -> bool:
    """Whether the SQLite database of ``engine`` is a result bundle (it has a manifest)."""
    return engine.url.get_backend_name() == "sqlite" and sa.inspect(engine).has_table(BUNDLE_TABLE)


def opened(engine: sa.Engine, url: str, *, writing: bool) -> sa.Engine:
    """``engine`` as a store opens it: a bundle read-only for a reader, refused to a writer."""
    if not is_bundle(engine):
        return engine
    if writing:
        engine.dispose()
        raise TpsbenchError(f"{url} is a result bundle, which is never written: read it with --results, or "
                            "add its runs to a store with `tpsbench import`")
    return read_only(engine)
