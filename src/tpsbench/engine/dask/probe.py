"""What each Dask worker is asked before a run on it (tpsbench.engine.dask.cluster).

Run on the workers by value (tpsbench.engine.dask.cluster registers this module with
cloudpickle), not imported there: a worker whose tpsbench is missing, or of another
version, must still answer, so that the run can say so in one line before anything
starts. So only the standard library at module level; tpsbench is imported inside, and
used only once its version is known to be the coordinator's.
"""

from __future__ import annotations

import os
import platform
import socket
import threading
from typing import Any

#: how long a worker tries to reach the database, or the coordinator, before it says it cannot
REACH_TIMEOUT_S = 10.0


def probe(version: str, url: str, callback: tuple[str, int]) -> dict[str, Any]:
    """This worker's host, process and versions; when its tpsbench is ``version``, also
    whether it reaches the coordinator at ``callback`` and the database at ``url``
    ("" when it does, else the first line of why not)."""
    facts: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid(), "python": platform.python_version()}
    try:
        import tpsbench
    except ImportError as exc:
        return facts | {"tpsbench": None, "import_error": f"{type(exc).__name__}: {exc}"}
    facts["tpsbench"] = tpsbench.__version__
    if tpsbench.__version__ != version:
        return facts
    try:
        socket.create_connection(callback, timeout=REACH_TIMEOUT_S).close()
        facts["callback"] = ""
    except OSError as exc:
        facts["callback"] = f"{type(exc).__name__}: {exc}"
    facts["database"] = _reach_database(url)
    return facts


def _reach_database(url: str) -> str:
    """"" when a connection to ``url`` opens from here within REACH_TIMEOUT_S, else why not."""
    from tpsbench.core.errors import first_line
    from tpsbench.core.target import close_quietly
    from tpsbench.targets import open_target

    outcome: list[str] = []

    def attempt() -> None:
        try:
            close_quietly(open_target(url).connect())
            outcome.append("")
        except Exception as exc:  # noqa: BLE001 - any failure is what this check reports
            outcome.append(first_line(exc))

    thread = threading.Thread(target=attempt, name="tpsbench-reach", daemon=True)
    thread.start()
    thread.join(REACH_TIMEOUT_S)
    return outcome[0] if outcome else f"no answer within {REACH_TIMEOUT_S:.0f} s"
