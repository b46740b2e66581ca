"""Signals as people send them: to the whole process group, at any moment.

A terminal's Ctrl-C, a closed terminal's SIGHUP and ``kill -TERM -PGID`` reach every
process of the group at once: the command (the coordinator) and the processes it started
(a run's workers, a build's loaders). Only the coordinator decides what a signal means
(stop the workers through their transport, keep what finished, mark the run
interrupted); a child that acted on it too would die half started, with a traceback, and
be reported as lost. So a child is started with these signals blocked (:func:`held`:
the new interpreter inherits the blocked mask through exec) and ignores them before it
unblocks them (:func:`ignore_here`): a signal that came while it started is discarded.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

#: the signals a command ends on cleanly (tpsbench.core.errors.EXIT_CODES)
ENDING = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@contextlib.contextmanager
def blocked() -> Iterator[None]:
    """Block :data:`ENDING` in this thread meanwhile; one that came is delivered at the end."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """:func:`blocked`, for starting multiprocessing's children, which inherit the block.

    multiprocessing's resource tracker is started first, with SIGHUP blocked for good
    in it (it ignores SIGINT and SIGTERM itself): starting it unblocks SIGINT and SIGTERM
    in the caller, which would undo the block for the first child started after it."""
    from multiprocessing import resource_tracker  # here: tpsbench.__main__ loads this module first thing

    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    with blocked():
        yield


def ignore_here() -> None:
    """In a child started under :func:`held`: ignore :data:`ENDING`, then unblock them
    (one pending since the start is discarded); the coordinator stops this process."""
    for sig in ENDING:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, ENDING)


def listened() -> list[int]:
    """The signals of :data:`ENDING` that a handler may take over here: not one this
    process was told to ignore (``nohup`` ignores SIGHUP so that the command outlives its
    terminal; tpsbench's own start listens to SIGINT and SIGTERM even when ignored)."""
    return sorted(sig for sig in ENDING if signal.getsignal(sig) != signal.SIG_IGN)


def leave_terminal() -> None:
    """After SIGHUP: the terminal is gone, and writing to it fails (EIO), which would
    break the clean ending; what would have gone there goes nowhere. Output to a file or
    a pipe is kept."""
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, fd)
                os.close(null)
