"""``python -m tpsbench`` and the ``tpsbench`` command."""

import os
import signal
import sys

from tpsbench.core.errors import EXIT_CODES, SAID  # milliseconds: it imports nothing else


def _quit(signum: int, frame: object) -> None:
    """Until the CLI has loaded: end at once with one line (nothing has been done yet).

    Ended there and then rather than by raising SystemExit, which the import under way
    may turn into another error and a traceback (Python 3.11 wraps what a class's
    ``__set_name__`` raises, as dataclasses' fields do, in a RuntimeError)."""
    try:
        sys.stderr.write(f"tpsbench: {SAID[signum]}\n")
        sys.stderr.flush()
    except OSError:  # SIGHUP: the terminal may be gone
        pass
    os._exit(EXIT_CODES[signum])


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
    for sig in EXIT_CODES:
        signal.signal(sig, signal.SIG_IGN)
    exec("")  # clears CPython's unhandled-KeyboardInterrupt mark (above)


def entry() -> None:
    """Load the CLI, then run it. Ctrl-C (SIGTERM, SIGHUP) while its libraries load (the
    first second or so) ends like an interruption anywhere else: one line and exit code
    130 (143, 129), no traceback; and so does one while a database call does not return
    (watchdog)."""
    # first of all (a signal before it ends in Python's traceback): SIGHUP stays ignored
    # under nohup; SIGINT is ignored for a command started in the background by a script
    # (`cmd &`), where it is still the way to stop it
    listened = [sig for sig in EXIT_CODES if sig != signal.SIGHUP or signal.getsignal(sig) != signal.SIG_IGN]
    for sig in listened:
        signal.signal(sig, _quit)
    import atexit
    import logging

    atexit.register(_keep_exit_code)  # registered first, so it runs last
    from tpsbench.cli.main import main
    from tpsbench.core import watchdog
    from tpsbench.core.errors import drop_swallowed_interruption, raise_interruption, signal_of

    watchdog.start()
    sys.unraisablehook = drop_swallowed_interruption
    # SQLAlchemy's pool logs a Ctrl-C that lands while it closes a connection, traceback and
    # all, through logging's last resort, before the interruption ends the run in one line
    logging.getLogger("sqlalchemy.pool").addHandler(logging.NullHandler())
    try:
        for sig in listened:
            signal.signal(sig, raise_interruption)
        main()
    except KeyboardInterrupt as exc:  # came between the handlers, before main() listened
        _quit(signal_of(exc), None)


if __name__ == "__main__":
    entry()
