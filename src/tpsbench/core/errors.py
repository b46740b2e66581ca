"""The one exception type users see.

Bad input and unreachable databases are the user's everyday business, not bugs: they
must end in one line that names the problem and a non-zero exit, never a traceback.
Everything raised for such reasons is a :class:`TpsbenchError`; the CLI prints its
message and exits with its ``exit_code``. The drivers' own errors are read here too
(:func:`error_codes`, :func:`error_message`), so that every layer classifies them by code
and shows them in one line.
"""

import re
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


#: pyodbc ends a message with the native error number and the ODBC call: "... (1213) (SQLExecDirectW)"
_ODBC_NATIVE = re.compile(r"\((-?\d+)\)\s*\(SQL\w+\)\s*$")
_SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")
#: and the ODBC call alone, cut from a message shown to the user
_ODBC_CALL = re.compile(r"\s*\(SQL\w+\)\s*$")


def error_codes(exc: BaseException) -> tuple[str | None, int | None]:
    """(SQLSTATE, native error number) of a driver exception, either one None if unknown.

    Drivers report them in different places: psycopg as ``exc.sqlstate``; PyMySQL and
    mysqlclient as ``args == (number, message)``; pyodbc as ``args == (sqlstate,
    message)`` with the native number in the message's tail. Reading all three here
    lets every target classify errors by code, never by message text. SQLAlchemy's
    wrappers are unwrapped first.
    """
    exc = getattr(exc, "orig", None) or exc
    state = getattr(exc, "sqlstate", None)
    args: tuple[Any, ...] = getattr(exc, "args", ())
    code: int | None = None
    if len(args) >= 2 and isinstance(args[0], int) and isinstance(args[1], str):
        code = args[0]
    elif len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str) and _SQLSTATE.match(args[0]):
        state = state or args[0]
        found = _ODBC_NATIVE.search(args[1])
        code = int(found.group(1)) if found else None
    return (state if isinstance(state, str) else None), code


def error_message(exc: BaseException) -> str:
    """One line of a driver error, without the tuple dressing some drivers put around it.

    ``str()`` of a PyMySQL or pyodbc error is the repr of its ``(code, message)`` args,
    which is noise in front of a user; the message itself is what they need.
    """
    args: tuple[Any, ...] = getattr(exc, "args", ())
    if len(args) >= 2 and isinstance(args[1], str) and args[1].strip():
        text = _ODBC_CALL.sub("", first_line(args[1]))
        return f"{text} ({args[0]})" if isinstance(args[0], int) else text
    return first_line(exc)
