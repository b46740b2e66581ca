"""How a run hears Ctrl-C, SIGTERM and SIGHUP: as a flag its step loop acts on.

Apart from the coordinator because it is the one part of a run that the operating system,
not the workers, drives: the first signal only asks the run to end with what it finished
(signals reach the main thread only), a second one stops waiting for anything.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from tpsbench.core import watchdog
from tpsbench.core.errors import interruption_for, take_signal
from tpsbench.core.signals import leave_terminal, listened


class Interruptible:
    """The signal state of a run: which signal interrupted it, and whether to stop now."""

    def __init__(self) -> None:
        #: the signal that interrupted the run (SIGINT, SIGTERM, SIGHUP), if one did (before it too: take_signal)
        self.signal: int | None = take_signal()
        #: stop the run now: a Ctrl-C, a SIGTERM, a SIGHUP or a callback's failure came
        self.interrupted = self.signal is not None

    @contextlib.contextmanager
    def sigint_handler(self) -> Iterator[None]:
        """Turn the first Ctrl-C, SIGTERM or SIGHUP into the flag, while the block runs."""
        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {sig: signal.signal(sig, self._on_signal) for sig in listened()}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            leave_terminal()
        if self.interrupted:  # a second one: stop waiting for anything
            raise interruption_for(signum)
        self.interrupted, self.signal = True, signum
        watchdog.handled()
