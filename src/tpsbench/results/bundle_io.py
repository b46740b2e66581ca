"""Writing a result bundle from a store, and adding a bundle's runs to a store (the
format: tpsbench.results.bundle).

Why the bundle keeps the original ids and an import makes new ones: in the bundle the
runs are as their store numbered them, so that ``report --results FILE 3 4`` names the
runs as the one who ran them did; a store that receives them numbers them after its own
and keeps where each came from in the run's ``config.imported_from`` (the bundle's
digest, the original run and campaign ids, the host that exported it), so no column of
the store's layout changes.

Why everything is scrubbed again on the way out: a store may have been written by an
older tpsbench or by hand; a bundle is made to be published, so no URL user info or
password setting leaves in one, whatever the store held (tpsbench.core.redact).

Why one transaction per import: a refused or failed import leaves the store as it was.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError, first_line
from tpsbench.core.redact import safe_url, scrub, scrub_text
from tpsbench.measure.host_info import git_revision
from tpsbench.results.bundle import CONTENT, FORMAT, FORMAT_VERSION, Bundle, content_digests, open_bundle, whole_digest
from tpsbench.results.opening import read_only
from tpsbench.results.schema import bundle_metadata, bundle_table, campaigns_table, runs_table
from tpsbench.results.store import ResultsStore

#: rows written per statement when copying a table
BATCH = 1000
#: columns kept byte for byte: no password can be in them and scrubbing could change them
VERBATIM = frozenset({"data"})


def _scrubbed(table: sa.Table, row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for column in table.c:
        value = row.get(column.name)
        if value is not None and column.name not in VERBATIM:
            if column.name == "db_url":
                value = safe_url(value)
            elif isinstance(column.type, sa.JSON):
                value = scrub(value)
            elif isinstance(value, str):
                value = scrub_text(value)
        out[column.name] = value
    return out


def _rows(conn: sa.Connection, table: sa.Table, where: Any) -> Iterator[list[dict[str, Any]]]:
    """``table``'s rows matching ``where`` in primary key order, in batches."""
    batch: list[dict[str, Any]] = []
    result = conn.execution_options(yield_per=BATCH).execute(
        sa.select(table).where(where).order_by(*table.primary_key.columns))
    for row in result:
        batch.append(row._asdict())
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _selection(table: sa.Table, run_ids: Sequence[int], campaign_ids: Sequence[int]) -> Any:
    if table is campaigns_table:
        return table.c.id.in_(campaign_ids)
    return (table.c.id if table is runs_table else table.c.run_id).in_(run_ids)


def write_bundle(source: ResultsStore, run_ids: Sequence[int], path: str) -> Bundle:
    """Write the runs ``run_ids`` of ``source`` with their campaigns to a new bundle at
    ``path`` (refused if it exists); the file appears whole or not at all."""
    known = {r.id: r for r in source.list_runs()}
    missing = [i for i in run_ids if i not in known]
    if missing:
        raise TpsbenchError(f"results store {source.url} has no run {', '.join(map(str, missing))}")
    if os.path.lexists(path):
        raise TpsbenchError(f"refusing to write over {path}: it exists; name another -o")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise TpsbenchError(f"cannot write {path}: no folder {folder}")
    campaign_ids = sorted({c for i in run_ids if isinstance(c := known[i].config.get("campaign"), int)})
    fd, partial = tempfile.mkstemp(dir=folder, prefix=".tpsbench-export-", suffix=".partial")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(partial, 0o666 & ~umask)  # as an ordinary new file, not mkstemp's owner-only
    try:
        dest = ResultsStore(f"sqlite:///{partial}")
        present = set(sa.inspect(source.engine).get_table_names())
        try:
            with source.engine.connect() as src, dest.engine.begin() as out:
                for table in CONTENT:
                    if table.name in present:  # an older store has no campaigns or observations
                        for batch in _rows(src, table, _selection(table, run_ids, campaign_ids)):
                            out.execute(table.insert(), [_scrubbed(table, row) for row in batch])
                bundle_metadata.create_all(out)
                manifest = {"format": FORMAT, "format_version": str(FORMAT_VERSION),
                            "tpsbench_version": _version(), "tpsbench_revision": git_revision(),
                            "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
                            "origin_host": socket.gethostname(), "origin_store": source.url,
                            "runs": json.dumps(list(run_ids)), "campaigns": json.dumps(campaign_ids),
                            **content_digests(out)}
                manifest["digest"] = whole_digest(manifest)
                out.execute(bundle_table.insert(), [{"name": k, "value": v} for k, v in manifest.items()])
            with dest.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM")  # no page keeps a deleted byte; the file is as small as it gets
        except sa.exc.SQLAlchemyError as exc:
            raise TpsbenchError(f"exporting to {path} failed: {first_line(getattr(exc, 'orig', None) or exc)}"
                                ) from None
        finally:
            dest.engine.dispose()
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return Bundle(path=path, manifest=manifest)


def _version() -> str:
    from tpsbench import __version__

    return __version__


def _new_id(conn: sa.Connection, insert: Any) -> int:
    key = conn.execute(insert).inserted_primary_key
    assert key is not None  # an INSERT of one row always has one
    return int(key[0])


@dataclass
class Imported:
    """What an import added: original id -> new id, for runs and campaigns."""

    runs: dict[int, int]
    campaigns: dict[int, int]


def import_bundle(path: str, target: str | None) -> Imported:
    """Add the runs and campaigns of the bundle at ``path`` to the store ``target`` under
    new ids; refused in one line, the store unchanged, for a bundle that is not whole or
    not one, or that this store imported already (by its digest)."""
    bundle = open_bundle(path)
    store = ResultsStore(target)
    provenance = {"bundle": bundle.digest, "host": bundle.manifest.get("origin_host", ""),
                  "exported_at": bundle.manifest.get("exported_at", "")}
    already = [r.id for r in store.list_runs() if isinstance(r.config.get("imported_from"), dict)
               and r.config["imported_from"].get("bundle") == bundle.digest]
    if already:
        raise TpsbenchError(f"{path} was imported into {store.url} already, as run(s) "
                            f"{', '.join(map(str, already))}: nothing imported")
    engine = read_only(sa.create_engine(bundle.url, poolclass=sa.NullPool))
    done = Imported(runs={}, campaigns={})
    try:
        with engine.connect() as src, store._transaction(f"importing {path}") as out:
            for row in src.execute(sa.select(campaigns_table).order_by(campaigns_table.c.id)):
                values = row._asdict()
                old = values.pop("id")
                values["config"] = {**(values["config"] or {}), "imported_from": {**provenance, "campaign": old}}
                done.campaigns[old] = _new_id(out, campaigns_table.insert().values(**values))
            for row in src.execute(sa.select(runs_table).order_by(runs_table.c.id)):
                values = row._asdict()
                old = values.pop("id")
                config = dict(values["config"] or {})
                campaign = config.get("campaign")
                if campaign is not None:  # its new id; none if the bundle lacks it (never another's)
                    config["campaign"] = done.campaigns.get(campaign)
                earlier = config.get("imported_from")  # a run imported before it was exported: kept
                config["imported_from"] = {**provenance, "run": old, "campaign": campaign,
                                           **({"earlier": earlier} if earlier else {})}
                values["config"] = config
                done.runs[old] = _new_id(out, runs_table.insert().values(**values))
            for table in CONTENT[2:]:
                for batch in _rows(src, table, sa.true()):
                    for values in batch:
                        values.pop("id", None)  # the store numbers them (steps have none)
                        values["run_id"] = done.runs[values["run_id"]]
                    out.execute(table.insert(), batch)
    finally:
        engine.dispose()
    return done
