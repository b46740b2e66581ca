"""``tpsbench reference``: read a published table from a CSV or TOML file and keep it.

Why a file: published figures are typed in by hand from a review; a small file keeps them
with their citation, can be checked by a reader, and is read whole and validated before
anything is stored, so that a typo is one line and never a half-stored table.

CSV: a header naming ``label``, ``users``, ``tps``, ``response_s`` and ``source``
(``iops`` and ``workload`` optional), one row per configuration and user load; an empty
figure is one the table did not publish; an empty source repeats the row above's.
TOML: ``source`` (and optionally ``workload``, and a ``note`` kept after the source) at
the top, then ``[[row]]`` tables with the same keys (a row's own ``source`` overrides the
top one).
"""

from __future__ import annotations

import csv
import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tpsbench.commands.selection import select_runs
from tpsbench.core.errors import TpsbenchError
from tpsbench.results.records import RunData
from tpsbench.results.references import ReferenceRow, add_reference, check_name, load_reference, reference_runs
from tpsbench.results.store import ResultsStore

REQUIRED = ("label", "users", "tps", "response_s", "source")
OPTIONAL = ("iops", "workload")
FIGURES = ("tps", "response_s", "iops")
#: the keys a TOML file may hold beside its rows
TOML_TOP = ("source", "workload", "note", "row")
#: the most users a published row may name (as many as a run can hold)
USERS_MOST = 1_000_000


def _number(where: str, key: str, value: Any) -> float | None:
    """A published figure: finite and not negative; None where the cell is empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(str(value).replace(",", "")) if not isinstance(value, bool) else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise TpsbenchError(f"{where}: {key} must be a number of 0 or more, not {value!r}")
    return number


def _row(where: str, cells: Mapping[str, Any], source: str, workload: str) -> ReferenceRow:
    """One row checked: a label, a whole number of users, numeric figures, at least one given."""
    unknown = sorted(set(cells) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise TpsbenchError(f"{where}: unknown column(s) {', '.join(unknown)}; known: {', '.join(REQUIRED + OPTIONAL)}")
    label = str(cells.get("label") or "").strip()
    if not label:
        raise TpsbenchError(f"{where}: the label is empty")
    users_text = str(cells.get("users") or "").strip()
    if not users_text.isdigit() or not 1 <= int(users_text) <= USERS_MOST:
        raise TpsbenchError(f"{where}: users must be a whole number from 1 to {USERS_MOST:,}, not {users_text!r}")
    figures = {key: _number(where, key, cells.get(key)) for key in FIGURES}
    if figures["tps"] is None and figures["response_s"] is None:
        raise TpsbenchError(f"{where}: neither tps nor response_s is given")
    source = str(cells.get("source") or "").strip() or source
    if not source:
        raise TpsbenchError(f"{where}: no source: say where the figures were published")
    return ReferenceRow(label=label, users=int(users_text), source=source,
                        workload=str(cells.get("workload") or "").strip() or workload, **figures)


def _from_csv(path: Path) -> list[ReferenceRow]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise TpsbenchError(f"{path}: missing column(s) {', '.join(missing)}; a reference CSV has "
                                f"{', '.join(REQUIRED)} (and optionally {', '.join(OPTIONAL)})")
        rows: list[ReferenceRow] = []
        for line, raw in enumerate(reader, start=2):
            if None in raw or any(v is None for v in raw.values()):
                raise TpsbenchError(f"{path} line {line}: {len(header)} cells expected")
            cells = {k.strip(): v for k, v in raw.items()}
            rows.append(_row(f"{path} line {line}", cells, rows[-1].source if rows else "", ""))
    return rows


def _from_toml(path: Path) -> list[ReferenceRow]:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TpsbenchError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(doc) - set(TOML_TOP))
    if unknown:
        raise TpsbenchError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(TOML_TOP)}")
    table = doc.get("row")
    if not isinstance(table, list) or not all(isinstance(r, dict) for r in table):
        raise TpsbenchError(f"{path}: no [[row]] tables: each published figure is a [[row]]")
    source, workload = str(doc.get("source") or "").strip(), str(doc.get("workload") or "").strip()
    if source and str(doc.get("note") or "").strip():  # kept with the source, which every report shows
        source = f"{source}; note: {str(doc['note']).strip()}"
    return [_row(f"{path} row {i}", r, source, workload) for i, r in enumerate(table, start=1)]


def read_reference(file: str) -> list[ReferenceRow]:
    """The rows of a reference file (.csv or .toml), every cell checked; one line for the first fault."""
    path = Path(file)
    if path.suffix.lower() not in (".csv", ".toml"):
        raise TpsbenchError(f"{file}: a reference table is a .csv or .toml file")
    if not path.is_file():
        raise TpsbenchError(f"{file}: no such file")
    try:
        rows = _from_csv(path) if path.suffix.lower() == ".csv" else _from_toml(path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise TpsbenchError(f"{file}: cannot be read: {exc}") from None
    if not rows:
        raise TpsbenchError(f"{file}: no rows")
    seen: set[tuple[str, int]] = set()
    for r in rows:
        if (r.label, r.users) in seen:
            raise TpsbenchError(f"{file}: {r.label!r} at {r.users} users is given twice")
        seen.add((r.label, r.users))
    return rows


def add(file: str, name: str, results_url: str | None = None) -> list[ReferenceRow]:
    """Read ``file`` and store it as reference ``name``; nothing is stored if any of it is wrong."""
    check_name(name)
    rows = read_reference(file)
    add_reference(ResultsStore(results_url), name, rows)
    return rows


def published_runs(store: ResultsStore, names: Sequence[str], measured: Sequence[RunData]) -> list[RunData]:
    """The configurations of references ``names`` as published runs, to set after ``measured``
    (their ids count down from -1, never a stored run's); one line for an unknown name."""
    out: list[RunData] = []
    for name in dict.fromkeys(names):
        out += reference_runs(name, load_reference(store, name), first_id=-1 - len(out))
    return [*measured, *out]


def selected_with_references(store: ResultsStore, run_ids: Sequence[int], campaign: int | None,
                             labels: Sequence[str], references: Sequence[str], **how: Any) -> list[RunData]:
    """The runs a reading command names (tpsbench.commands.selection), then the references'
    configurations; with references and no run named, the references alone."""
    named = bool(run_ids) or campaign is not None or bool(labels)
    runs = select_runs(store, run_ids, campaign=campaign, labels=labels, **how) if named or not references else []
    return published_runs(store, references, runs)
