"""tpsbench: an OLTP database benchmark driver.

Build a database at a scale factor, run a transaction mix at stepped user loads,
record TPS and response times per storage configuration, and report them side by side.
Everything the CLI does is a function here::

    import tpsbench
    tpsbench.build("tpcc", 4, "postgresql://postgres@127.0.0.1/tpcc")
    record = tpsbench.run(tpsbench.RunConfig("tpcc", "postgresql://postgres@127.0.0.1/tpcc", users=[1, 20]))
    print(tpsbench.render([record.store.load_run(record.run_id)]))

The names load on first use, so that ``import tpsbench`` (and the CLI's start) stays quick.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: the public API: name -> module that defines it
_API = {
    "build": "tpsbench.commands.build",
    "drop": "tpsbench.commands.build",
    "estimate_size": "tpsbench.commands.build",
    "check": "tpsbench.commands.check",
    "run": "tpsbench.commands.run",
    "RunConfig": "tpsbench.commands.run",
    "RunRecord": "tpsbench.commands.run",
    "ResultsStore": "tpsbench.results.store",
    "render": "tpsbench.report.table",
    "add_workload_path": "tpsbench.workloads",
    "StepObserver": "tpsbench.measure.observers",
    "HostCpu": "tpsbench.measure.host_cpu",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'tpsbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
