"""Database targets, one module (or package) each; :func:`open_target` picks one from a URL.

A module or package here that defines ``TARGET`` (a :class:`~tpsbench.core.target.Target`
subclass) is found automatically, so adding a database is one module here (plus one
DDL file per workload) and touches nothing else. Modules without ``TARGET`` are the
targets' shared helpers; a target with helpers of its own keeps them in its package
(``targets/mysql/``).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from functools import cache

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.redact import safe_url
from tpsbench.core.target import Target

DEFAULT_URL = "sqlite:///tpsbench.db"
ENV_VAR = "TPSBENCH_DB"


@cache
def target_classes() -> dict[str, type[Target]]:
    """Every target module's ``TARGET``, keyed by the SQLAlchemy backend names it serves."""
    found: dict[str, type[Target]] = {}
    for info in pkgutil.iter_modules(__path__):
        cls = getattr(importlib.import_module(f"{__name__}.{info.name}"), "TARGET", None)
        if cls is not None:
            for backend in cls.backends:
                found[backend] = cls
    return found


def resolve_url(url: str | None) -> str:
    """The URL given, else ``$TPSBENCH_DB``, else a SQLite file in the current folder."""
    return url or os.environ.get(ENV_VAR) or DEFAULT_URL


def open_target(url: str | None = None) -> Target:
    """The target for a SQLAlchemy URL such as ``postgresql://postgres@127.0.0.1/tpcc``.

    ``<backend>+pyodbc://`` URLs go through the ODBC target whatever the backend.
    """
    text = resolve_url(url)
    try:
        parsed = sa.engine.make_url(text)
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise TpsbenchError(f"malformed database URL {safe_url(text)!r}:"
                            " expected e.g. postgresql://user@host/db") from exc
    classes = target_classes()
    backend, _, driver = parsed.drivername.partition("+")
    cls = classes.get("odbc" if driver == "pyodbc" and "odbc" in classes else backend)
    if cls is None:
        known = ", ".join(sorted(classes))
        raise TpsbenchError(f"unsupported database {backend!r} in URL {safe_url(text)!r}; known: {known}")
    return cls(parsed)
