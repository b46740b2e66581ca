"""The one exception type users see.

Bad input and unreachable databases are the user's everyday business, not bugs: they
must end in one line that names the problem and a non-zero exit, never a traceback.
Everything raised for such reasons is a :class:`TpsbenchError`; the CLI prints its
message and exits with its ``exit_code``.
"""

import signal


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


def first_line(text: object) -> str:
    """The first non-empty line of a (driver) message, so errors stay one line."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return str(text).strip() or type(text).__name__


class Terminated(KeyboardInterrupt):
    """SIGTERM (a service manager, ``kill``), handled as Ctrl-C is: what is finished is
    kept and the run is marked interrupted; the process then exits with 143, not 130."""


#: the signal :func:`raise_interruption` last raised for, until :func:`take_signal`
_raised: list[int | None] = [None]


def raise_interruption(signum: int, frame: object) -> None:
    """The CLI's SIGINT and SIGTERM handler: KeyboardInterrupt (:class:`Terminated`)
    wherever the main thread is, and the signal remembered. A library may swallow the
    exception (numpy's random module, importing, catches everything, KeyboardInterrupt
    included); the run and the CLI then still see the signal (:func:`take_signal`)."""
    _raised[0] = signum
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def take_signal() -> int | None:
    """The signal :func:`raise_interruption` raised for and nothing has answered yet, if
    any (then forgotten): a run that starts after one ends at once as interrupted."""
    signum, _raised[0] = _raised[0], None
    return signum
