"""Tests side by side (pytest-xdist's ``-n``), and the few that must run with none beside them.

Why: most of the suite is fixed-length runs that leave part of the CPU idle, so a few tests
at once finish the suite in a little over half the time (the performance page has the
figures). A test that reads a server's global counters or the host's CPU or device
figures, changes a server-wide setting or wants most of a server's connections would see
or disturb its neighbours: it is marked ``alone``, waits until the tests beside it end, and
no test starts until it has ended. That is a readers-writer lock on a file the workers
share, held over a test's set-up, call and tear-down (a module's fixtures are made and
dropped inside some test's); a waiting ``alone`` test goes before the tests that ask after
it (the turnstile), so it is never starved. Without ``-n`` nothing here waits.

Tests that only exclude one another (two captures of one server) share an ``xdist_group``
instead (pyproject's ``--dist loadgroup``): one worker runs them one after another.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import IO, Any

import pytest

#: the folder of the run's lock files, made by the controller and handed to every worker
FOLDER = "tpsbench_lock_folder"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "alone: runs with no other test beside it when tests run side by side (-n): "
                                       "it reads a server's global counters or the host's CPU or device figures, "
                                       "changes a server-wide setting or wants most of a server's connections")
    if not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist"):
        config.stash[_folder] = tempfile.mkdtemp(prefix="tpsbench-tests-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _folder in config.stash:
        shutil.rmtree(config.stash[_folder], ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's hook on the controller, once per worker: the worker learns the lock folder."""
    node.workerinput[FOLDER] = node.config.stash[_folder]


_folder = pytest.StashKey[str]()


class _Lock:
    """The turnstile and the readers-writer lock, each a file opened once by this worker."""

    def __init__(self, folder: Path) -> None:
        self.turnstile: IO[str] = open(folder / "turnstile", "a")
        self.shared: IO[str] = open(folder / "tests", "a")

    def enter(self, alone: bool) -> None:
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.shared, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)

    def leave(self) -> None:
        fcntl.flock(self.shared, fcntl.LOCK_UN)


_lock: list[_Lock] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    folder = getattr(item.config, "workerinput", {}).get(FOLDER)
    if folder is None or not os.path.isdir(folder):
        return (yield)
    if not _lock:
        _lock.append(_Lock(Path(folder)))
    _lock[0].enter(item.get_closest_marker("alone") is not None)
    try:
        return (yield)
    finally:
        _lock[0].leave()
