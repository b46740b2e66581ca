"""``python -m tpsbench`` and the ``tpsbench`` command."""

import logging
import signal
import sys


def _quit(signum: int, frame: object) -> None:
    """Until the CLI has loaded: end at once with one line (nothing has been done yet)."""
    terminated = signum == signal.SIGTERM
    sys.stderr.write("tpsbench: terminated\n" if terminated else "tpsbench: interrupted\n")
    raise SystemExit(143 if terminated else 130)


def entry() -> None:
    """Load the CLI, then run it. Ctrl-C (or SIGTERM) while its libraries load (the first
    second or so) ends like an interruption anywhere else: one line and exit code 130
    (143), no traceback; and so does one while a database call does not return (watchdog)."""
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
