"""``python -m tpsbench`` and the ``tpsbench`` command."""

import atexit
import logging
import signal
import sys


def _quit(signum: int, frame: object) -> None:
    """Until the CLI has loaded: end at once with one line (nothing has been done yet)."""
    terminated = signum == signal.SIGTERM
    sys.stderr.write("tpsbench: terminated\n" if terminated else "tpsbench: interrupted\n")
    raise SystemExit(143 if terminated else 130)


def _ignore_signals() -> None:
    """Once everything is done and the last exit handler has run: Python then puts back the
    default handlers for its own shutdown, where a late Ctrl-C or SIGTERM would kill the
    process and replace the exit code of the finished command with a signal's. Ignored
    signals stay ignored through that shutdown, which takes milliseconds."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def entry() -> None:
    """Load the CLI, then run it. Ctrl-C (or SIGTERM) while its libraries load (the first
    second or so) ends like an interruption anywhere else: one line and exit code 130
    (143), no traceback; and so does one while a database call does not return (watchdog)."""
    atexit.register(_ignore_signals)  # registered first, so it runs last
    interrupt = signal.signal(signal.SIGINT, _quit)
    signal.signal(signal.SIGTERM, _quit)
    from tpsbench.cli.main import main
    from tpsbench.core import watchdog
    from tpsbench.core.errors import raise_terminated

    watchdog.start()
    # SQLAlchemy's pool logs a Ctrl-C that lands while it closes a connection, traceback and
    # all, through logging's last resort, before the interruption ends the run in one line
    logging.getLogger("sqlalchemy.pool").addHandler(logging.NullHandler())
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, raise_terminated)
    main()


if __name__ == "__main__":
    entry()
