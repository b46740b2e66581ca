"""``python -m tpsbench`` and the ``tpsbench`` command."""

import sys


def entry() -> None:
    """Load the CLI, then run it. Ctrl-C while its libraries load (the first second or
    so) ends like an interruption anywhere else: one line and exit code 130, no traceback."""
    try:
        from tpsbench.cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write("tpsbench: interrupted\n")
        sys.exit(130)
    main()


if __name__ == "__main__":
    entry()
