"""Ctrl-C, SIGTERM and SIGHUP end the CLI within seconds even while a database call does not return.

Why this exists: Python runs signal handlers in the main thread, between bytecodes. A
driver written in C (mysqlclient, pyodbc) that waits inside one call, say for a server
that accepted the TCP connection but never answers its handshake, holds the main thread
there, so Ctrl-C does nothing until the driver's own timeout, if it has one. The run's
clean ending (stop the workers, keep the finished steps, mark the run interrupted) is
done by the handlers in Python, and this module leaves it alone whenever it can run.

How: the C-level signal handler writes each signal's number to a wake-up pipe
(signal.set_wakeup_fd), which a thread of ours reads even while the main thread is
stuck. On SIGINT, SIGTERM or SIGHUP it watches the main thread for STUCK_AFTER_S: if a handler
says it ran (:func:`handled`, for handlers that set a flag and return, like the
coordinator's), or the main thread's frame moves at all (a handler that raises unwinds
it), Python is handling the signal and the watchdog stands down; if it stays on one
instruction the whole time, the main thread is inside one blocking call, and the process
ends with one line and the exit code the handler would have given
(130, 143, 129). Nothing was being written at that moment (the call that blocks is a read or
a connect), so nothing written is left half done.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from tpsbench.core.errors import EXIT_CODES, SAID

#: how long the main thread may sit in one call after a signal before the process ends
STUCK_AFTER_S = 3.0
#: how often the main thread's frame is looked at meanwhile
LOOK_EVERY_S = 0.1
#: how many times a Python-level handler said it ran (see handled())
_handled = [0]


def handled() -> None:
    """Called by a signal handler that returns without raising: the signal is in hand."""
    _handled[0] += 1


def start() -> None:
    """Watch for signals the main thread cannot handle (call once, from the main thread)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    os.register_at_fork(after_in_child=_forget)
    threading.Thread(target=_watch, args=(read_end, threading.main_thread().ident),
                     name="signal-watchdog", daemon=True).start()


def _forget() -> None:
    """A forked child has no watchdog thread: its signals must not wake its parent's."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # forked from a thread other than the main one: it was never set there
        pass


def _watch(read_end: int, main: int | None) -> None:
    while True:
        for signum in os.read(read_end, 64):
            if signum in EXIT_CODES and _stuck(main):
                sys.stderr.write(f"tpsbench: {SAID[signum]} (a database call did not return within "
                                 f"{STUCK_AFTER_S:.0f} s, so the process ended without waiting for it)\n")
                sys.stderr.flush()
                os._exit(EXIT_CODES[signum])


def _where(main: int | None) -> tuple[int, int] | None:
    frame = sys._current_frames().get(main) if main is not None else None  # the only way to see another thread's frame
    return None if frame is None else (id(frame), frame.f_lasti)


def _stuck(main: int | None) -> bool:
    """True when the main thread stays on one instruction for STUCK_AFTER_S."""
    first, seen = _where(main), _handled[0]
    deadline = time.monotonic() + STUCK_AFTER_S
    while time.monotonic() < deadline:
        time.sleep(LOOK_EVERY_S)
        if _where(main) != first or _handled[0] != seen:
            return False
    return first is not None
