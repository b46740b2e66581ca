"""``--cache cold|warm|cached``: what a run does about the caches between it and the storage.

Why: a storage review measures the storage only where reads reach it. ``warm`` (the
default) runs on whatever is cached and says so before the run when the whole database
fits in memory (tpsbench.measure.memory); ``cached`` is a run where that is the point
(nothing said); ``cold`` empties what can be emptied before each step's ramp-up, as root
on the database's own host: the OS page cache (sync, drop_caches) and the server's
buffer pool, by a restart where there is no other way. The restart is an outage, stored
as one before the step (:data:`~tpsbench.results.schema.BEFORE_STEP`), so no measured
window holds it; the step's users start on new connections.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tpsbench.core.errors import TpsbenchError, kept_said
from tpsbench.core.target import Target

DROP_CACHES = "/proc/sys/vm/drop_caches"


@dataclass(frozen=True)
class Emptied:
    """What emptying the caches before a step did: the live line, and the restart's
    outage (wall-clock start and end) if the server was restarted."""

    line: str
    outage: tuple[float, float] | None = None


class ServerDown(TpsbenchError):
    """A restart before a step left the server down: the run ends there, failed, with the
    steps before kept (a step on a server that is not there would measure only errors)."""

    exit_code = 1

    def run_ended(self, run_id: int, kept: Sequence[int], *, during: int | None, end_written: bool) -> ServerDown:
        """This failure as run ``run_id``'s last line (as the results store's failures say theirs)."""
        said = f"{self}: run {run_id} failed before step {during}; {kept_said(kept)}"
        return ServerDown(said if end_written else f"{said}; the store still shows the run as running")


def cold_refused(target: Target) -> str:
    """Why ``--cache cold`` cannot empty anything here ("" when it can)."""
    if not target.is_local:
        return "the server is not on this host"
    return "" if os.geteuid() == 0 else "not root"


def empty_caches(target: Target, step: int, drop_caches: str = DROP_CACHES) -> Emptied:
    """Restart the server (unless its pool is each connection's), sync and drop the page
    cache; the line says what was done, and what could not be emptied and why.
    :class:`ServerDown` where the restart failed and left the server down."""
    done, missed, outage = [], [], None
    if not target.embedded:
        began = time.time()
        try:
            target.restart_server()
        except TpsbenchError as exc:
            if not target.answers():  # down, not merely left running: no step can run
                raise ServerDown(f"the server did not come back after its restart before step {step} ({exc})"
                                 ) from None
            missed.append(f"the server's buffer pool ({exc})")
        else:
            outage = (began, time.time())
            done.append(f"server restarted in {outage[1] - began:.1f} s")
    os.sync()
    try:
        with open(drop_caches, "w") as file:
            file.write("3\n")
        done.insert(0, "page cache dropped")
    except OSError as exc:
        missed.append(f"the page cache ({drop_caches}: {exc.strerror})")
    said = f"cache cold: {', '.join(done) or 'nothing emptied'} before step {step}"
    return Emptied(f"{said}; could not empty {'; '.join(missed)}" if missed else said, outage)
