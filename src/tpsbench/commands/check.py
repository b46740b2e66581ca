"""Run a workload's consistency conditions against a built database."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tpsbench.core.target import Target
from tpsbench.targets import open_target
from tpsbench.workloads import get_workload


@dataclass
class CheckResult:
    number: int
    title: str
    #: violating rows, or None when the condition was skipped
    violations: int | None
    skipped_because: str = ""

    @property
    def passed(self) -> bool:
        return self.violations == 0


def check(workload: str, url: str | Target | None = None, options: Mapping[str, str] | None = None,
          ) -> list[CheckResult]:
    """Evaluate every condition that holds in the database's present state; ``options``
    configure the workload first (custom's file, whose checks these are).

    Raises a one-line error when there is nothing to check (never built) or the build
    is incomplete (interrupted), because conditions on half-loaded data mean nothing.
    """
    wl = get_workload(workload)
    if options:
        wl.configure(options)
    target = url if isinstance(url, Target) else open_target(url)
    meta = wl.verify_schema(target)
    runs = int(meta.get("runs", "0"))
    results = []
    with target.translate_errors("checking"), target.engine.connect() as conn:
        for item in wl.checks():
            if runs and not item.holds_after_run:
                results.append(CheckResult(item.number, item.title, None, f"{runs} run(s) since the build"))
                continue
            results.append(CheckResult(item.number, item.title, item.count(target, conn)))
    return results
