"""Finding processes on this host in /proc: a process's parent and command name, a
server's top process, the process listening on a port.

Why here, at the bottom: a target finds its own server's process
(:meth:`tpsbench.core.target.Target.server_pid`) for a restart, and the step observers
(tpsbench.measure) weigh that process's CPU and memory; both use this one way. Every
reader returns None for a process that is gone: processes come and go.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from tpsbench.core.errors import TpsbenchError


class ProcStat(NamedTuple):
    """What /proc/<pid>/stat says of one process (or thread), CPU in ticks."""

    ppid: int
    #: utime + stime
    cpu: int
    #: start time, ticks after boot
    start: int
    comm: str
    #: cutime + cstime: CPU of its children that it has waited for
    children_cpu: int


def read_stat(path: str) -> ProcStat | None:
    """/proc/<pid>/stat (or .../task/<tid>/stat) parsed; None if the process is gone."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    rest = text[text.rindex(")") + 2:].split()
    return ProcStat(int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19]), comm, int(rest[13]) + int(rest[14]))


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def top_process(pid: int, commands: tuple[str, ...]) -> int | None:
    """The topmost ancestor of ``pid`` (itself included) whose command name is one of
    ``commands``: a server's main process from any of its processes (PostgreSQL's
    postmaster from its checkpointer). None if ``pid`` is gone or is no such process."""
    st = read_stat(f"/proc/{pid}/stat")
    if st is None or st.comm not in commands:
        return None
    while (parent := read_stat(f"/proc/{st.ppid}/stat")) is not None and parent.comm in commands:
        pid, st = st.ppid, parent
    return pid


def listening_pid(port: int) -> int | None:
    """The process with a TCP socket listening on ``port`` (IPv4 or IPv6), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        inodes |= {row[9] for row in rows if row[3] == "0A" and int(row[1].rpartition(":")[2], 16) == port}
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in all_pids() if wanted else ():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in wanted for fd in fds):
                return pid
        except OSError:
            continue
    return None


def server_pid(hint: Callable[[], int | None], commands: tuple[str, ...], port: int | None) -> int | None:
    """A server's top process on this host: the topmost ancestor with one of the server's
    ``commands`` of the process ``hint()`` names (None, or a TpsbenchError, where the
    server will not say), else of the process listening on ``port``; None if neither is one."""
    try:
        named = hint()
    except TpsbenchError:  # a server that will not say is looked for by its port
        named = None
    found = top_process(named, commands) if named else None
    if found is None and port:
        listener = listening_pid(port)
        found = top_process(listener, commands) if listener else None
    return found
