"""Starting the web view: the checks that refuse it in one line, then uvicorn on a socket
bound here (so that the port checked is the port served, with no race between them).

Why local by default: the pages show database URLs, server settings and storage notes,
and have no login; another host sees them only when asked for with ``--allow-remote``.
"""

from __future__ import annotations

import importlib
import ipaddress
import socket
from collections.abc import Callable

from tpsbench.core.errors import TpsbenchError

#: the libraries of the ``live`` extra, by import name
LIVE_MODULES = ("starlette", "uvicorn", "sse_starlette")
MISSING_EXTRA = "tpsbench serve needs the live extra: pip install 'tpsbench[live]'"


def check_extra() -> None:
    """Refuse in one line when a library of the ``live`` extra is not installed."""
    missing = []
    for name in LIVE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise TpsbenchError(f"{MISSING_EXTRA} ({', '.join(missing)} missing)")


def addresses(host: str) -> list[str]:
    """The addresses ``host`` names; a one-line error when it names none."""
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})
    except (socket.gaierror, UnicodeError) as exc:
        raise TpsbenchError(f"--host {host}: no such address ({getattr(exc, 'strerror', None) or exc})") from None


def check_local(host: str, allow_remote: bool) -> None:
    """Refuse an address other hosts can reach (anything but loopback) unless allowed."""
    if allow_remote:
        return
    remote = [a for a in addresses(host) if not ipaddress.ip_address(a.split("%")[0]).is_loopback]
    if remote:
        raise TpsbenchError(f"--host {host} is reachable from other hosts ({', '.join(remote)}) and the pages have "
                            "no login: add --allow-remote to serve it there anyway")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; a one-line error when the port is taken."""
    family = socket.AF_INET6 if ":" in addresses(host)[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise TpsbenchError(f"cannot serve on {host}:{port}: "
                            f"{'the port is in use' if exc.errno == 98 else exc.strerror or exc}") from None
    return sock


def serve(results_url: str | None, host: str, port: int, allow_remote: bool,
          said: Callable[[str], None]) -> None:
    """Check everything, then serve the store's pages until interrupted."""
    check_extra()
    check_local(host, allow_remote)
    from tpsbench.results.live import ReadOnlyStore

    store = ReadOnlyStore(results_url)
    store.list_runs()  # a store that cannot be read is refused before serving
    sock = bind(host, port)
    import uvicorn

    from tpsbench.serve.app import make_app

    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    said(f"serving {store.url} read-only at http://{shown}:{bound}/ (Ctrl-C stops)")
    server = uvicorn.Server(uvicorn.Config(make_app(store), log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
