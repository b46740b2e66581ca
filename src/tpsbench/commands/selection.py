"""Which runs a report, a comparison or a plan is about: ids, storage labels or a campaign.

One way to choose for every reading command, so that ``report``, ``compare`` and ``plan``
take the same words and refuse the same mistakes in the same one line: an unknown run,
a label with no completed run, a campaign with no runs, an empty store.
"""

from __future__ import annotations

from collections.abc import Sequence

from tpsbench.core.errors import TpsbenchError
from tpsbench.results.records import RunData
from tpsbench.results.store import ResultsStore


def select_runs(store: ResultsStore, run_ids: Sequence[int] = (), *, campaign: int | None = None,
                labels: Sequence[str] = (), workload: str | None = None, default: str = "latest") -> list[RunData]:
    """The runs named by id, then those of ``campaign`` in its targets' order, then the
    latest completed run of each storage label; with none of these, ``default``: the
    latest run ("latest") or the latest completed run of every label ("labels")."""
    runs = store.list_runs()
    if not runs:
        raise TpsbenchError(f"the results store {store.url} has no runs yet: run one with `tpsbench run tpcc`")
    ids = list(run_ids)
    if campaign is not None:
        ids += [r.id for r in store.campaign_runs(campaign)]
    latest: dict[str, int] = {}
    for r in runs:
        if r.status == "completed" and (workload is None or r.workload == workload):
            latest[r.storage] = r.id
    wanted = list(labels) or (sorted(latest) if default == "labels" and not ids else [])
    missing = [label for label in wanted if label not in latest]
    if missing:
        known = ", ".join(repr(label) for label in sorted(latest)) or "none"
        raise TpsbenchError(f"no completed run for storage label(s) {', '.join(map(repr, missing))}; "
                            f"labels with one: {known}")
    ids += [latest[label] for label in wanted]
    if not ids:
        if default == "labels":
            raise TpsbenchError(f"the results store {store.url} has no completed run")
        ids = [runs[-1].id]
    return [store.load_run(i) for i in dict.fromkeys(ids)]
