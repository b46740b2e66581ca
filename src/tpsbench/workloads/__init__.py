"""Benchmarks, one package each; :func:`get_workload` finds one by name.

A subpackage here that defines ``WORKLOAD`` (a :class:`~tpsbench.core.workload.Workload`
subclass) is found automatically, so adding a workload touches nothing else. Workloads
of your own live anywhere: name their folders in ``TPSBENCH_WORKLOADS`` (separated by
``:``), each either a workload package or a folder of them, or call
:func:`add_workload_path`. Such a folder is put on ``sys.path``, so the engine's worker
processes, which inherit it, import the package by the same name.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from functools import cache
from pathlib import Path

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.workload import Workload

#: folders of the user's own workloads (see the module docstring)
ENV_VAR = "TPSBENCH_WORKLOADS"


@cache
def workload_classes() -> dict[str, type[Workload]]:
    """Every workload package's ``WORKLOAD``, keyed by its name: ours, then the user's."""
    found: dict[str, type[Workload]] = {}
    packages = [f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__)]
    for folder in _user_folders():
        packages += _packages_in(folder)
    for package in packages:
        cls = getattr(importlib.import_module(package), "WORKLOAD", None)
        if cls is None:
            continue
        if cls.name in found and found[cls.name] is not cls:
            raise TpsbenchError(f"two workloads are called {cls.name!r}: {found[cls.name].__module__} and {package}")
        found[cls.name] = cls
    return found


def get_workload(name: str) -> Workload:
    """The workload called ``name``, or a one-line error listing the known ones."""
    cls = workload_classes().get(name.lower())
    if cls is None:
        raise TpsbenchError(f"unknown workload {name!r}; known: {', '.join(sorted(workload_classes()))}")
    return cls()


def add_workload_path(folder: str | os.PathLike[str]) -> None:
    """Find workloads in ``folder`` too (a workload package, or a folder of them), here
    and in every process started from now on (through ``TPSBENCH_WORKLOADS``)."""
    path = str(Path(folder).resolve())
    if not Path(path).is_dir():
        raise TpsbenchError(f"no workload folder {path}")
    known = [p for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    if path not in known:
        os.environ[ENV_VAR] = os.pathsep.join([*known, path])
    workload_classes.cache_clear()


def _user_folders() -> list[Path]:
    folders = []
    for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if not entry:
            continue
        folder = Path(entry).resolve()
        if not folder.is_dir():
            raise TpsbenchError(f"{ENV_VAR} names {entry!r}, which is not a folder")
        folders.append(folder)
    return folders


def _packages_in(folder: Path) -> list[str]:
    """The importable names of the workload packages ``folder`` is or holds, with the
    folder above them put on sys.path."""
    if (folder / "__init__.py").exists():
        parent, names = folder.parent, [folder.name]
    else:
        parent, names = folder, [info.name for info in pkgutil.iter_modules([str(folder)]) if info.ispkg]
    if str(parent) not in sys.path:
        sys.path.append(str(parent))
    return names
