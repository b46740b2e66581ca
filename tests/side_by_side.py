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

Tests that only exclude one another (two captures of one server take the same server-wide
lock) are marked ``exclusive("name")`` instead: a lock of that name (a file of its own)
keeps them apart while other tests go on beside them. (xdist's own ``xdist_group`` rewrote
a test's node id, which pytest 9.2 no longer reads.)
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
    config.addinivalue_line("markers", "exclusive(name): runs with no other test of the same name beside it when "
                                       "tests run side by side (-n)")
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
        self.folder = folder
        self.turnstile: IO[str] = open(folder / "turnstile", "a")
        self.shared: IO[str] = open(folder / "tests", "a")
        self.named: dict[str, IO[str]] = {}
        self.held: list[IO[str]] = []

    def enter(self, alone: bool, names: list[str]) -> None:
        """The named locks first, in one order (no two tests wait on each other's), then the
        readers-writer lock: a test waiting for a name holds nothing an alone test needs."""
        for name in sorted(set(names)):
            if name not in self.named:
                self.named[name] = open(self.folder / f"exclusive-{len(self.named)}-{name.replace('/', '_')}", "a")
            fcntl.flock(self.named[name], fcntl.LOCK_EX)
            self.held.append(self.named[name])
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.shared, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)

    def leave(self) -> None:
        fcntl.flock(self.shared, fcntl.LOCK_UN)
        while self.held:
            fcntl.flock(self.held.pop(), fcntl.LOCK_UN)


_lock: list[_Lock] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    folder = getattr(item.config, "workerinput", {}).get(FOLDER)
    if folder is None or not os.path.isdir(folder):
        return (yield)
    if not _lock:
        _lock.append(_Lock(Path(folder)))
    _lock[0].enter(item.get_closest_marker("alone") is not None,
                   [str(mark.args[0]) for mark in item.iter_markers("exclusive")])
    try:
        return (yield)
    finally:
        _lock[0].leave()
