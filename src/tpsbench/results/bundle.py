"""Result bundles: runs that travel as one file, with digests that prove what it holds.

Why a results store with a manifest: a bundle is a small SQLite results store (the
layout of tpsbench.results.schema) holding only the exported runs and their campaigns,
so every reader (``report``, ``compare``, ``plan``, ``serve``) reads it unchanged with
``--results FILE``, ``sqlite3`` opens it on any machine, and it holds exactly what a
store keeps of a run. Its manifest (table ``tpsbench_bundle``, name -> value) names the
format and its version, the tpsbench that wrote it, when and on which host, the original
run and campaign ids, and a SHA-256 digest of each table's canonical content and of the
whole; ``import`` recomputes them all and refuses a bundle that does not match.

Why digests of content and not of the file's bytes: the file cannot hold a digest of
itself, and SQLite pages keep unused space that no reader sees. What readers see (every
row of every table) is digested; the file's structure is checked by SQLite's integrity
check and its length against the page count in its header (a truncated copy).

Canonical content of a table: its rows in primary key order, each one line of JSON (a
list of the column values in the layout's column order; times ISO 8601, JSON columns
parsed, object keys sorted), UTF-8. The whole: the SHA-256 of the manifest's other
entries as ``name=value`` lines sorted by name.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError, first_line
from tpsbench.results.opening import read_only
from tpsbench.results.records import Run
from tpsbench.results.schema import (
    BUNDLE_TABLE,
    bundle_table,
    campaigns_table,
    errors_table,
    histograms_table,
    intervals_table,
    observations_table,
    runs_table,
    steps_table,
)
from tpsbench.results.store import ResultsStore

FORMAT = "tpsbench-bundle"
#: the format's version: a bundle of a later one is refused (tpsbench knows no more of it)
FORMAT_VERSION = 1
#: the tables a bundle carries, in the order they are written, digested and imported
CONTENT = (campaigns_table, runs_table, steps_table, intervals_table, histograms_table, errors_table,
           observations_table)
SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass
class Bundle:
    """A bundle whose digests were checked: its path and its manifest."""

    path: str
    manifest: dict[str, str]

    @property
    def digest(self) -> str:
        return self.manifest["digest"]

    @property
    def runs(self) -> list[int]:
        """The original ids of its runs, as their store numbered them (kept in the bundle)."""
        return [int(i) for i in json.loads(self.manifest["runs"])]

    @property
    def url(self) -> str:
        return f"sqlite:///{os.path.abspath(self.path)}"


def _canonical(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def table_digest(conn: sa.Connection, table: sa.Table) -> str:
    """The SHA-256 of ``table``'s canonical content (see the module docstring)."""
    digest = hashlib.sha256()
    for row in conn.execute(sa.select(table).order_by(*table.primary_key.columns)):
        line = json.dumps([_canonical(v) for v in row], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def whole_digest(manifest: dict[str, str]) -> str:
    """The SHA-256 of every manifest entry but ``digest`` itself."""
    lines = "".join(f"{name}={value}\n" for name, value in sorted(manifest.items()) if name != "digest")
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def content_digests(conn: sa.Connection) -> dict[str, str]:
    """``digest.<table>`` -> digest, for every table a bundle carries."""
    return {f"digest.{table.name}": table_digest(conn, table) for table in CONTENT}


def _check_file(path: str) -> None:
    """Refuse what cannot be a whole bundle before SQLite opens it: no file, not SQLite,
    shorter than its header says (a copy cut short)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as exc:
        raise TpsbenchError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not head.startswith(SQLITE_HEADER):
        raise TpsbenchError(f"{path} is not a tpsbench bundle (not a SQLite file)")
    page_size = int.from_bytes(head[16:18], "big")
    pages = int.from_bytes(head[28:32], "big")
    expected = (65536 if page_size == 1 else page_size) * pages
    if len(head) < 100 or size < expected:
        raise TpsbenchError(f"{path} is truncated ({size:,} of {max(expected, 100):,} bytes): copy it again")


def open_bundle(path: str) -> Bundle:
    """The bundle at ``path`` once its format, structure and digests are checked; one
    line naming the problem otherwise (not a bundle, truncated, newer, changed)."""
    _check_file(path)
    engine = read_only(sa.create_engine(f"sqlite:///{os.path.abspath(path)}", poolclass=sa.NullPool))
    try:
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            if BUNDLE_TABLE not in tables:
                store = " (a results store: read it with --results, or export runs from it)" \
                    if runs_table.name in tables else ""
                raise TpsbenchError(f"{path} is not a tpsbench bundle: it has no {BUNDLE_TABLE} manifest{store}")
            manifest = {r.name: r.value for r in conn.execute(sa.select(bundle_table))}
            _check_manifest(path, manifest)
            integrity = conn.exec_driver_sql("PRAGMA integrity_check").scalar()
            if integrity != "ok":
                raise TpsbenchError(f"{path} is damaged (SQLite's integrity check: {first_line(integrity)})")
            for name, digest in content_digests(conn).items():
                if manifest.get(name) != digest:
                    raise TpsbenchError(f"{path} does not match its manifest: the {name.split('.', 1)[1]} table's "
                                        "digest differs, so the bundle was changed or damaged after export")
    except sa.exc.SQLAlchemyError as exc:
        raise TpsbenchError(f"{path} cannot be read as a bundle: {first_line(getattr(exc, 'orig', None) or exc)}"
                            ) from None
    finally:
        engine.dispose()
    if whole_digest(manifest) != manifest.get("digest"):
        raise TpsbenchError(f"{path} does not match its manifest: its digest differs, so the manifest was changed")
    return Bundle(path=path, manifest=manifest)


def _check_manifest(path: str, manifest: dict[str, str]) -> None:
    if manifest.get("format") != FORMAT:
        raise TpsbenchError(f"{path} is not a tpsbench bundle: its manifest names format "
                            f"{manifest.get('format')!r}, not {FORMAT!r}")
    try:
        version = int(manifest.get("format_version", ""))
        json.loads(manifest.get("runs", ""))
    except ValueError:
        raise TpsbenchError(f"{path} is not a tpsbench bundle: its manifest's format_version or runs is "
                            "malformed") from None
    if version > FORMAT_VERSION:
        raise TpsbenchError(f"{path} is a bundle of a newer format (version {version}; this tpsbench reads up to "
                            f"{FORMAT_VERSION}): upgrade tpsbench to read it")


def bundle_runs(path: str) -> list[Run]:
    """The runs of the bundle at ``path`` (checked first), with their stored configuration,
    seed, workload, storage and server settings: what re-running one needs."""
    bundle = open_bundle(path)
    return ResultsStore(bundle.url, create=False).list_runs()
