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
import threading
from collections.abc import Iterator
from types import TracebackType

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


class Deferred:
    """While on, a signal of :data:`ENDING` is only noted; once off, the handlers that were
    there before get it, as if it came then. For writes that must not be cut in two (a
    run's row as running, then the try that ends it; its final status): blocking the
    signals is not enough, since one whose handler is already due would still raise there."""

    def __init__(self) -> None:
        self.came: int | None = None
        self.previous: dict[int, object] = {}

    def hold(self) -> Deferred:
        """On (until :meth:`release`)."""
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            self.previous = {sig: signal.signal(sig, self._note) for sig in listened()}
        return self

    def __enter__(self) -> Deferred:
        return self.hold()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def _note(self, signum: int, frame: object) -> None:
        self.came = self.came or signum

    def release(self) -> None:
        """Off: the handlers before are back, and get the signal that came meanwhile."""
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]  # a handler signal.signal() gave back
        self.previous = {}
        if self.came is not None:
            came, self.came = self.came, None
            signal.raise_signal(came)


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
