"""Benchmarks, one package each; :func:`get_workload` finds one by name.

A subpackage here that defines ``WORKLOAD`` (a :class:`~tpsbench.api.workload.Workload`
subclass) is found automatically, so adding a workload touches nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from tpsbench.api.workload import Workload
from tpsbench.errors import TpsbenchError


@cache
def workload_classes() -> dict[str, type[Workload]]:
    """Every workload package's ``WORKLOAD``, keyed by its name."""
    found: dict[str, type[Workload]] = {}
    for info in pkgutil.iter_modules(__path__):
        cls = getattr(importlib.import_module(f"{__name__}.{info.name}"), "WORKLOAD", None)
        if cls is not None:
            found[cls.name] = cls
    return found


def get_workload(name: str) -> Workload:
    """The workload called ``name``, or a one-line error listing the known ones."""
    cls = workload_classes().get(name.lower())
    if cls is None:
        raise TpsbenchError(f"unknown workload {name!r}; known: {', '.join(sorted(workload_classes()))}")
    return cls()
