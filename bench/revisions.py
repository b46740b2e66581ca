"""Another revision's package, for the benchmarks that measure revisions side by side.

bench/engine_tpcc_revs.py and bench/client_callgrind.py run this checkout's measuring
code against the package of each revision they are given, put first on PYTHONPATH.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: what a revision's package reads from its checkout: ``src``, and before the layered
#: layout (db3e1fb) the data folders at the top of the tree, which that revision's
#: tpsbench/resources.py found beside ``src`` (since then the DDL and scale factors
#: live inside the package, src/tpsbench/workloads/<name>/)
EXPORTED = ("src", "schemas", "scale_factors")


def source_tree(rev: str, tmp: Path) -> Path:
    """The ``src`` folder of revision ``rev`` (the working tree for ``work``), exported
    with ``git archive`` into ``tmp/<rev>`` with whichever of :data:`EXPORTED` it has."""
    if rev == "work":
        return ROOT / "src"
    out = tmp / rev
    if not out.exists():
        top = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", rev], check=True,
                             capture_output=True, text=True).stdout.split()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *(p for p in EXPORTED if p in top)],
                                 check=True, capture_output=True)
        out.mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "src"
