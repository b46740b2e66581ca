"""Server settings a capture changes for its window, put back whatever ends it, and the
refusal when another capture holds the server.

Why one place: a capture changes a server that other people's applications run on; the
way back must survive Ctrl-C (the restore itself is not cut: signals wait until it is
done) and a lost connection (a new one is made, retried for a while), and when even that
fails the one line says what to run by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tpsbench.core.errors import TpsbenchError, first_line
from tpsbench.core.signals import Deferred
from tpsbench.core.target import close_quietly

#: how long a lost connection is retried to restore the settings
RECONNECT_S = 30.0


def restore(connect: Callable[[], Any], conn: Any, apply: Callable[[Any], None], by_hand: str) -> None:
    """``apply(conn)``, on ``conn`` or, if it is lost, on a new connection from ``connect``
    (retried for :data:`RECONNECT_S`); Ctrl-C meanwhile waits until it is done."""
    with Deferred():
        deadline = time.monotonic() + RECONNECT_S
        while True:
            try:
                if conn is None or _closed(conn):
                    conn = connect()
                apply(conn)
                return
            except Exception as exc:  # noqa: BLE001 - lost or refused: retried until the deadline
                close_quietly(conn)
                conn = None
                if time.monotonic() > deadline:
                    raise TpsbenchError(f"could not restore the server's settings ({first_line(exc)}); restore "
                                        f"them by hand: {by_hand}") from None
                time.sleep(1.0)


def _closed(conn: Any) -> bool:
    closed = getattr(conn, "closed", False)
    return bool(closed() if callable(closed) else closed)


def capture_running(by: str) -> TpsbenchError:
    """The refusal when another capture holds the server's lock, ``by`` naming its holder:
    two captures of one server would each restore settings the other still needs."""
    return TpsbenchError(f"another tpsbench capture is running on this server ({by}): wait for it to end; "
                         "nothing was changed")
