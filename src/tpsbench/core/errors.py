"""The one exception type users see.

Bad input and unreachable databases are the user's everyday business, not bugs: they
must end in one line that names the problem and a non-zero exit, never a traceback.
Everything raised for such reasons is a :class:`TpsbenchError`; the CLI prints its
message and exits with its ``exit_code``.
"""

import signal
import sys
from collections.abc import Sequence
from typing import Any

from tpsbench.core.signals import leave_terminal


class TpsbenchError(Exception):
    """An error caused by input or environment, reported as one line."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(first_line(message))
        if exit_code is not None:
            self.exit_code = exit_code


class CheckFailed(TpsbenchError):
    """Consistency checks found violations; the report was already printed."""

    exit_code = 1


def kept_said(kept: Sequence[int]) -> str:
    """Which steps a run that stopped early keeps, for the one line that ends it."""
    return f"steps {', '.join(map(str, kept))} were kept" if len(kept) > 1 else \
        f"step {kept[0]} was kept" if kept else "no step was kept"


def first_line(text: object) -> str:
    """The first non-empty line of a (driver) message, so errors stay one line."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return str(text).strip() or type(text).__name__


class Terminated(KeyboardInterrupt):
    """SIGTERM (a service manager, ``kill``), handled as Ctrl-C is: what is finished is
    kept and the run is marked interrupted; the process then exits with 143, not 130."""


class HungUp(KeyboardInterrupt):
    """SIGHUP (the terminal or SSH session closed), handled as Ctrl-C is; exit code 129."""


#: the signals that end a command cleanly, each with its exit code (128 + the signal)
EXIT_CODES: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
#: what the one line says for each
SAID: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}
_RAISED: dict[int, type[KeyboardInterrupt]] = {signal.SIGINT: KeyboardInterrupt, signal.SIGTERM: Terminated,
                                               signal.SIGHUP: HungUp}


def interruption_for(signum: int) -> type[KeyboardInterrupt]:
    """The exception a signal of :data:`EXIT_CODES` raises in the main thread."""
    return _RAISED.get(signum, KeyboardInterrupt)


def signal_of(exc: BaseException) -> int:
    """The signal behind an interruption (:func:`interruption_for`); a bare
    KeyboardInterrupt is Ctrl-C's."""
    return next((sig for sig, kind in _RAISED.items() if kind is not KeyboardInterrupt and isinstance(exc, kind)),
                signal.SIGINT)


#: the signal :func:`raise_interruption` last raised for, until :func:`take_signal`
_raised: list[int | None] = [None]


def raise_interruption(signum: int, frame: object) -> None:
    """The CLI's handler of the signals of :data:`EXIT_CODES`: KeyboardInterrupt
    (:class:`Terminated`, :class:`HungUp`) wherever the main thread is, and the signal
    remembered. A library may swallow the exception (numpy's random module, importing,
    catches everything, KeyboardInterrupt included); the run and the CLI then still see
    the signal (:func:`take_signal`)."""
    _raised[0] = signum
    if signum == signal.SIGHUP:
        leave_terminal()
    raise interruption_for(signum)


def drop_swallowed_interruption(unraisable: Any) -> None:
    """``sys.unraisablehook``: an interruption raised where Python cannot pass it on (a
    weakref callback, a ``__del__``: the import system's module locks have such callbacks)
    is not printed, traceback and all, since :func:`take_signal` still answers its signal;
    anything else goes to Python's own hook."""
    if isinstance(unraisable.exc_value, tuple(_RAISED.values())) and _raised[0] is not None:
        return
    sys.__unraisablehook__(unraisable)


def take_signal() -> int | None:
    """The signal :func:`raise_interruption` raised for and nothing has answered yet, if
    any (then forgotten): a run that starts after one ends at once as interrupted."""
    signum, _raised[0] = _raised[0], None
    return signum
