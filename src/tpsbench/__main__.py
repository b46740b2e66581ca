"""``python -m tpsbench`` and the ``tpsbench`` command."""

import atexit
import logging
import os
import signal
import sys


def _quit(signum: int, frame: object) -> None:
    """Until the CLI has loaded: end at once with one line (nothing has been done yet).

    Ended there and then rather than by raising SystemExit, which the import under way
    may turn into another error and a traceback (Python 3.11 wraps what a class's
    ``__set_name__`` raises, as dataclasses' fields do, in a RuntimeError)."""
    terminated = signum == signal.SIGTERM
    sys.stderr.write("tpsbench: terminated\n" if terminated else "tpsbench: interrupted\n")
    sys.stderr.flush()
    os._exit(143 if terminated else 130)


def _keep_exit_code() -> None:
    """The last exit handler: make the exit code the one the command chose.

    Python then puts back the default handlers for its own shutdown, where a late Ctrl-C
    or SIGTERM would kill the process and replace the exit code of the finished command
    with a signal's; ignored signals stay ignored through that shutdown (milliseconds).

    And CPython marks a KeyboardInterrupt that passed through exec() or eval() of a string
    as never handled, even once tpsbench has handled it: namedtuple, dataclasses and
    SQLAlchemy build functions that way, so a Ctrl-C landing there (a fraction of a
    second into a run) made ``python -m tpsbench`` kill itself with SIGINT at exit in
    place of its 130. Every evaluation of a string starts by clearing that mark, and no
    KeyboardInterrupt leaves :func:`entry` unhandled, so one empty evaluation clears it."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    exec("")  # noqa: S102 - clears CPython's unhandled-KeyboardInterrupt mark (above)


def entry() -> None:
    """Load the CLI, then run it. Ctrl-C (or SIGTERM) while its libraries load (the first
    second or so) ends like an interruption anywhere else: one line and exit code 130
    (143), no traceback; and so does one while a database call does not return (watchdog)."""
    atexit.register(_keep_exit_code)  # registered first, so it runs last
    signal.signal(signal.SIGINT, _quit)
    signal.signal(signal.SIGTERM, _quit)
    from tpsbench.cli.main import main
    from tpsbench.core import watchdog
    from tpsbench.core.errors import Terminated, raise_interruption

    watchdog.start()
    # SQLAlchemy's pool logs a Ctrl-C that lands while it closes a connection, traceback and
    # all, through logging's last resort, before the interruption ends the run in one line
    logging.getLogger("sqlalchemy.pool").addHandler(logging.NullHandler())
    try:
        signal.signal(signal.SIGINT, raise_interruption)
        signal.signal(signal.SIGTERM, raise_interruption)
        main()
    except KeyboardInterrupt as exc:  # came between the handlers, before main() listened
        _quit(signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT, None)


if __name__ == "__main__":
    entry()
