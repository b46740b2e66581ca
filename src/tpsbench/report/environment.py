"""What differs between the environments of runs compared: versions, server, host, storage.

Why: a ratio between two runs is the storage's only when nothing else changed. The store
keeps what each run found around it (tpsbench's version and revision, Python's and the
drivers' versions, the load host, the server's version and settings, the memory sizes,
the storage as described and as detected); set side by side, the facts that differ say
what else might explain a difference, as HammerDB's ``jobs diff`` does. Facts that
differ by nature between any two runs (ids, times, the free memory of the moment) are
left out; a published run (tpsbench.results.references) has no environment to compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tpsbench.core.redact import safe_url
from tpsbench.report.table import run_labels
from tpsbench.results.records import RunData
from tpsbench.results.references import measured_only

#: facts that differ between any two runs, whatever was changed
BY_NATURE = frozenset({"memory.mem_available_bytes"})
#: the rows the text shows; the rest are counted (report --format json has them all)
SHOWN_MOST = 30
#: the section's title in every format
TITLE = "Environment differences"


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    """Nested settings as "a.b[0].c" -> text; None and empty values are facts not known."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        for i, inner in enumerate(value):
            _flat(f"{prefix}[{i}]", inner, out)
    elif value is not None and value != [] and value != "":
        out[prefix] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _database(url: str | None) -> dict[str, str]:
    """The database's kind (SQLAlchemy's dialect and driver) and host, from its stored URL."""
    if not url:
        return {}
    kind, _, rest = safe_url(url).partition("://")
    host = rest.partition("/")[0].rpartition("@")[2]
    return {"database": kind, **({"database host": host} if host else {})}


def facts(data: RunData) -> dict[str, str]:
    """A run's environment as flat facts, name -> text, in a stable order."""
    run, config = data.run, data.run.config
    host = dict(config.get("driver_host") or {})
    out: dict[str, str] = {}
    revision = host.pop("git_revision", None)
    _flat("", {"tpsbench": run.tool_version or host.pop("tpsbench", None), "tpsbench revision": revision}, out)
    host.pop("tpsbench", None)
    out |= _database(run.db_url)
    _flat("server", run.server, out)
    _flat("host", host, out)
    _flat("memory", config.get("memory"), out)
    storage = config.get("storage") or {}
    _flat("storage", {"described": storage.get("described"), "detected": storage.get("detected")}, out)
    return {key: value for key, value in out.items() if key not in BY_NATURE}


#: the sections of the facts, in the order they are listed
SECTIONS = ("tpsbench", "database", "server", "host", "memory", "storage")


def _section(name: str) -> int:
    """A fact's section (sorted() keeps the order of facts within one)."""
    return next((i for i, prefix in enumerate(SECTIONS) if name.startswith(prefix)), len(SECTIONS))


def differences(runs: Sequence[RunData]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(labels, rows): the measured runs' labels and each fact that is not the same in all of
    them, with its value per run ("" where a run does not have it); no rows for one run."""
    measured = measured_only(runs)
    if len(measured) < 2:
        return [], []
    per_run = [facts(data) for data in measured]
    names = sorted(dict.fromkeys(name for found in per_run for name in found), key=_section)
    rows = [(name, [found.get(name, "") for found in per_run]) for name in names]
    labels = [label for label, data in zip(run_labels(runs), runs) if data in measured]
    return labels, [(name, values) for name, values in rows if len(set(values)) > 1]


def to_dict(runs: Sequence[RunData]) -> dict[str, dict[str, str | None]]:
    """The differences for JSON: fact -> run id (as text) -> value (None: not recorded)."""
    _, rows = differences(runs)
    ids = [str(data.run.id) for data in measured_only(runs)]
    return {name: {i: value or None for i, value in zip(ids, values)} for name, values in rows}


def to_text(runs: Sequence[RunData], most: int = SHOWN_MOST) -> str:
    """The section as a Markdown table padded for a terminal, "" when nothing differs."""
    labels, rows = differences(runs)
    if not rows:
        return ""
    shown = [["fact", *labels], *([name, *(v or "-" for v in values)] for name, values in rows[:most])]
    shown = [[cell.replace("|", "\\|") for cell in row] for row in shown]
    widths = [max(len(row[c]) for row in shown) for c in range(len(shown[0]))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in shown]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    more = [f"and {len(rows) - most} more (report --format json lists them all)"] if len(rows) > most else []
    return "\n".join([f"{TITLE} (what else differs between the runs: versions, server, host, storage):", "",
                      *lines, *more]) + "\n"
