"""Connecting a run to a Dask cluster (``--cluster``): its Dask workers, checked before any step.

What can go wrong with a cluster is said in one line before the run is stored, let alone
started: a scheduler that cannot be reached, one with no Dask workers (or none of those named
by ``--cluster-workers``), a Dask worker whose tpsbench is missing or of another version, a
Dask worker that cannot connect back to this host (tpsbench.engine.dask.transport), or cannot
reach the database from its own host, a database URL that only means this host
(127.0.0.1, localhost, a Unix socket, a SQLite file) given to a Dask worker on another host,
and a Dask worker whose clock is off this host's by more than ``MAX_CLOCK_OFFSET_S``.

Clock offsets are measured as NTP does, bounded by the round trip: this host reads its
clock, asks every Dask worker for its own (through the scheduler), and reads it again; the
worker's reading minus the midpoint is its offset, known to within half the round trip.
Of ``CLOCK_ROUNDS`` rounds the one with the shortest round trip counts. The transport
applies the offsets (steps start at one instant, intervals are aligned by this host's
clock), and the run stores them with every worker's facts. Why a limit although the
offsets are applied: a clock that far off is not kept by NTP, and one that is not kept
drifts, and may be stepped, while the run goes on.

Only this module and tpsbench.engine.dask.transport import Dask, and only tpsbench.commands.run_setup
imports them, when ``--cluster`` is given: tpsbench without the ``distributed`` extra
never imports it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import make_url

from tpsbench import __version__
from tpsbench.core.errors import TpsbenchError, first_line
from tpsbench.core.redact import scrub_text
from tpsbench.engine.dask import probe
from tpsbench.engine.dask.transport import DaskTransport, Place

#: how long connecting to the scheduler may take: a bad address ends within 10 s in all
CONNECT_TIMEOUT_S = 6.0
#: of which the first TCP connection may take (the port's answer, before Dask's handshake)
REACH_TIMEOUT_S = 2.0
#: the schemes of a Dask scheduler's address that a worker on another host can reach
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
#: how a scheduler's address is written (the scheme may be left out: tcp)
ADDRESS_FORM = "tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786"
#: the largest clock offset of a worker from this host that a run accepts (seconds)
MAX_CLOCK_OFFSET_S = 0.25
#: clock readings per worker; the one with the shortest round trip counts
CLOCK_ROUNDS = 5
#: how the error lines tell a user to put tpsbench on a worker
INSTALL = f"pip install 'tpsbench[distributed]=={__version__}'"


def connect(address: str, names: Sequence[str], url: str, *, timeout_s: float = CONNECT_TIMEOUT_S,
            max_offset_s: float = MAX_CLOCK_OFFSET_S) -> DaskTransport:
    """The run's transport on the cluster at ``address``, its Dask workers (all, or those
    ``names`` names by worker name, address or host) checked; a one-line error otherwise."""
    refuse_relative_sqlite(url)
    host, port = checked_address(address)
    reach(address, host, port, min(REACH_TIMEOUT_S, timeout_s))
    try:
        import cloudpickle  # type: ignore[import-untyped]  # cloudpickle ships no type hints
        from distributed import Client
        from distributed.comm import get_address_host
        from distributed.utils import get_ip
    except ImportError as exc:
        raise TpsbenchError(f"--cluster needs Dask, which is not installed here ({exc}): "
                            "pip install 'tpsbench[distributed]'") from None
    handshake(address, host, port, min(REACH_TIMEOUT_S, timeout_s))
    try:
        client = Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, ValueError, TypeError) as exc:
        raise TpsbenchError(f"cannot reach a Dask scheduler at {address} within {timeout_s:.0f} s "
                            f"({first_line(exc)}): start one with `dask scheduler`, or give its address as "
                            f"{ADDRESS_FORM}") from None
    scheduler: str = client.scheduler.address  # type: ignore[union-attr,assignment]  # a connected Client's scheduler rpc, never None
    transport = DaskTransport(client, scheduler, get_ip(get_address_host(scheduler)))
    try:
        chosen = choose(client.scheduler_info(n_workers=-1)["workers"], names, scheduler)
        cloudpickle.register_pickle_by_value(probe)  # see probe: it runs where tpsbench may not
        answers = client.run(probe.probe, __version__, url, transport.callback, workers=chosen,
                             on_error="return")
        for address_ in chosen:
            refuse(address_, answers[address_], url, transport.callback)
        offsets = clock_offsets(client, chosen)
        info = client.scheduler_info(n_workers=-1)["workers"]
        transport.places = [Place(a, str(info[a].get("name")), answers[a]["host"], answers[a]["pid"],
                                  answers[a]["python"], answers[a]["tpsbench"], *offsets[a]) for a in chosen]
        for place in transport.places:
            if abs(place.offset_s) > max_offset_s:
                raise TpsbenchError(f"the clock of Dask worker {place.address} on {place.host} is "
                                    f"{place.offset_s:+.3f} s off this host's (+-{place.bound_s:.3f} s), more than "
                                    f"the {max_offset_s} s a run accepts: synchronise the clocks (chrony, NTP)")
    except BaseException:
        transport.close(0.0)
        raise
    return transport


def checked_address(address: str) -> tuple[str, int]:
    """The host and port of a scheduler's ``address``, refused in one line before anything
    connects when it is not one: user info (a scheduler takes none; what stands before
    its '@' is never shown), an unknown scheme, no host or port."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if "@" in rest:
        shown = f"{scheme}://{rest.rpartition('@')[2]}" if sep else rest.rpartition("@")[2]
        raise TpsbenchError(f"--cluster takes a Dask scheduler's address, which carries no user or password: give "
                            f"{shown} (the user info before '@' is not shown, nor used)")
    shown = scrub_text(address)
    if scheme not in SCHEMES:
        raise TpsbenchError(f"--cluster {shown!r}: unknown scheme {scheme!r} (a Dask scheduler's address is "
                            f"{ADDRESS_FORM}; schemes {', '.join(SCHEMES)})")
    host, colon, port = rest.rstrip("/").rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c in host for c in "/ "):
        raise TpsbenchError(f"--cluster {shown!r} is not a Dask scheduler's address: give {ADDRESS_FORM}")
    return host, int(port)


def reach(address: str, host: str, port: int, timeout_s: float) -> None:
    """A one-line error when nothing listens at the scheduler's port, or nothing answers
    there within ``timeout_s``: Dask's own client would say so only after its timeout
    (and, for an address that answers in another protocol, hang in its clean-up at exit
    and print a traceback: :func:`handshake`)."""
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__).lower()
        raise TpsbenchError(f"cannot reach a Dask scheduler at {address} ({why} from {host}:{port} within "
                            f"{timeout_s:.0f} s): start one with `dask scheduler`, or give its address as "
                            f"{ADDRESS_FORM}") from None


def handshake(address: str, host: str, port: int, timeout_s: float) -> None:
    """A one-line error when what answers at a tcp:// or ws:// address does not speak Dask
    (the other schemes need security settings first)."""
    if address.partition("://")[0] not in ("tcp", "ws") and "://" in address:
        return
    try:
        asyncio.run(asyncio.wait_for(_handshake(address, timeout_s), timeout_s))
    except Exception as exc:  # noqa: BLE001 - whatever answers sent what Dask cannot read (MemoryError included)
        said = "no answer" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {first_line(exc)}"
        raise TpsbenchError(f"cannot reach a Dask scheduler at {address}: {host}:{port} answers, but not as a Dask "
                            f"scheduler ({said})") from None


async def _handshake(address: str, timeout_s: float) -> None:
    """Dask's connection handshake with ``address``, then goodbye."""
    from distributed.comm import connect as dask_connect

    comm = await dask_connect(address, timeout=timeout_s)
    await comm.close()


def refuse_relative_sqlite(url: str) -> None:
    """A SQLite file named relative to this folder would be another file (or none) for
    every Dask worker, which runs in a folder of its own: refused, in one line."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and not os.path.isabs(parsed.database or ""):
        raise TpsbenchError(f"the SQLite database {parsed.database or '(in memory)'!r} is named relative to this "
                            "folder, which a Dask worker would take for a file in its own folder: give the file's "
                            "absolute path, e.g. sqlite:////data/tpcc.db")


def describe(transport: DaskTransport) -> str:
    """The cluster a run is on, said before it starts: its workers, hosts and clock offsets."""
    places = transport.places
    hosts = sorted({p.host for p in places})
    worst = max(places, key=lambda p: abs(p.offset_s))
    return (f"cluster {transport.scheduler}: {len(places)} Dask worker(s) on {len(hosts)} host(s) "
            f"({', '.join(hosts)}); largest clock offset {worst.offset_s * 1000:+.1f} ms "
            f"(+-{worst.bound_s * 1000:.1f} ms, {worst.host}), applied to every step")


def choose(workers: dict[str, dict[str, Any]], names: Sequence[str], scheduler: str) -> list[str]:
    """The addresses of the Dask workers a run uses: all, or those named (by worker name,
    address or host), ordered by host and name."""
    if not workers:
        raise TpsbenchError(f"the Dask cluster at {scheduler} has no workers: start them on the client machines "
                            f"with `dask worker {scheduler}`")

    def known(address: str) -> set[str]:
        info = workers[address]
        return {address, str(info.get("name")), str(info.get("host"))}

    unknown = [name for name in names if not any(name in known(a) for a in workers)]
    if unknown:
        have = ", ".join(sorted(f"{info.get('name')} ({a})" for a, info in workers.items()))
        raise TpsbenchError(f"--cluster-workers names {unknown[0]!r}, which is no worker name, address or host of "
                            f"the Dask cluster at {scheduler}; it has {have}")
    chosen = [a for a in workers if not names or known(a) & set(names)]
    return sorted(chosen, key=lambda a: (str(workers[a].get("host")), str(workers[a].get("name")), a))


def refuse(address: str, answer: Any, url: str, callback: tuple[str, int]) -> None:
    """A one-line error when the Dask worker at ``address`` cannot run this run (its
    ``answer`` to probe.probe, or the exception it raised)."""
    if isinstance(answer, BaseException):
        raise TpsbenchError(f"Dask worker {address} could not run tpsbench's check ({type(answer).__name__}: "
                            f"{first_line(answer)}); install tpsbench there: {INSTALL}")
    where = f"Dask worker {address} on {answer['host']}"
    if answer["tpsbench"] is None:
        raise TpsbenchError(f"{where} cannot import tpsbench ({answer['import_error']}): {INSTALL}")
    if answer["tpsbench"] != __version__:
        raise TpsbenchError(f"{where} runs tpsbench {answer['tpsbench']}, this host {__version__}: every worker "
                            f"needs the coordinator's version ({INSTALL})")
    local = local_only(url)
    if local and answer["host"] != socket.gethostname():
        raise TpsbenchError(f"the database URL names {local}, which {where} would take for its own host: give "
                            "the database server's address as the client machines reach it, e.g. "
                            "postgresql://postgres@10.0.0.5/tpcc")
    if answer["callback"]:
        raise TpsbenchError(f"{where} cannot connect back to tpsbench at {callback[0]}:{callback[1]} "
                            f"({answer['callback']}): the workers report over TCP to this host, so it must be "
                            "reachable from the client machines")
    if answer["database"]:
        raise TpsbenchError(f"{where} cannot reach the database: {answer['database']}")


def local_only(url: str) -> str:
    """What makes ``url`` mean this host only ("127.0.0.1", "a Unix socket or file"), or ""
    when it names a host that others can reach too."""
    host = make_url(url).host
    if not host:
        return "no host (a Unix socket, or a file)"
    if host == "localhost":
        return host
    try:
        return host if ipaddress.ip_address(host).is_loopback else ""
    except ValueError:
        return ""


def offset_of(before: float, theirs: float, after: float) -> tuple[float, float]:
    """A clock's offset from ours, read as ``theirs`` between our ``before`` and ``after``,
    and its bound: half the round trip."""
    return theirs - (before + after) / 2, (after - before) / 2


def clock_offsets(client: Any, workers: Sequence[str], rounds: int = CLOCK_ROUNDS) -> dict[str, tuple[float, float]]:
    """Each worker's (offset, bound) of the round with the shortest round trip (see the module docstring)."""
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        before = time.time()
        theirs = client.run(time.time, workers=list(workers))
        after = time.time()
        for address, reading in theirs.items():
            offset = offset_of(before, reading, after)
            if address not in best or offset[1] < best[address][1]:
                best[address] = offset
    return best
