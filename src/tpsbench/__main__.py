"""``python -m tpsbench`` and the ``tpsbench`` command."""

import signal
import sys

from tpsbench.core.errors import Terminated, raise_terminated


def entry() -> None:
    """Load the CLI, then run it. Ctrl-C (or SIGTERM) while its libraries load (the first
    second or so) ends like an interruption anywhere else: one line and exit code 130
    (143), no traceback."""
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        from tpsbench.cli.main import main
    except Terminated:
        sys.stderr.write("tpsbench: terminated\n")
        sys.exit(143)
    except KeyboardInterrupt:
        sys.stderr.write("tpsbench: interrupted\n")
        sys.exit(130)
    main()


if __name__ == "__main__":
    entry()
