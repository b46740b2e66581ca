"""``tpsbench export`` and ``import``: runs that travel as one result bundle
(tpsbench.results.bundle says the format, tpsbench.results.bundle_io the copying)."""

from __future__ import annotations

from collections.abc import Sequence

from tpsbench.core.errors import TpsbenchError
from tpsbench.results.bundle import Bundle
from tpsbench.results.bundle_io import Imported, import_bundle, write_bundle
from tpsbench.results.store import ResultsStore


def export_runs(run_ids: Sequence[int], campaign: int | None, output: str, results_url: str | None) -> Bundle:
    """Write the runs named by id and those of ``campaign`` (with the campaign) to the new
    bundle ``output``; one line, nothing written, for no run named or an unknown one."""
    if not run_ids and campaign is None:
        raise TpsbenchError("name the runs to export: run ids (tpsbench runs lists them) or --campaign ID")
    if not output.strip():
        raise TpsbenchError("-o/--output needs a file name, e.g. -o pools.tpsbench")
    store = ResultsStore(results_url, create=False)
    ids = list(run_ids) + ([r.id for r in store.campaign_runs(campaign)] if campaign is not None else [])
    return write_bundle(store, list(dict.fromkeys(ids)), output)


def import_runs(path: str, results_url: str | None) -> Imported:
    """Add the bundle's runs and campaigns to the store under new ids (see import_bundle)."""
    return import_bundle(path, results_url)
