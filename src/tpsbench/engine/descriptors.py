"""File descriptors for a run's connections: every user holds a socket in its worker process.

Why: thousands of users put thousands of sockets in one process, and most shells start
programs with a soft RLIMIT_NOFILE of 1024; the user would meet "Too many open files"
halfway through a ramp-up. A process may raise its own soft limit up to the hard one, so
tpsbench does (:func:`raise_soft_limit`, in the driver and in every worker), and refuses
before anything is stored a step the hard limit cannot take (:func:`refuse_descriptors`):
only root or the service manager can raise that one.
"""

from __future__ import annotations

import resource

from tpsbench.core.errors import TpsbenchError

#: descriptors a worker holds beside its users' sockets: the interpreter's and its
#: libraries', the pipe to the coordinator, an observer's connection, a trace file
SPARE_DESCRIPTORS = 64
#: the kernel's own ceiling on any process's descriptors, when the hard limit is unlimited
NR_OPEN = "/proc/sys/fs/nr_open"


def hard_limit() -> int | None:
    """This process's hard RLIMIT_NOFILE; None when unlimited."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def raise_soft_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (the kernel's nr_open when
    that is unlimited) and return the soft limit now; processes it starts inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard
    if hard == resource.RLIM_INFINITY:
        try:
            with open(NR_OPEN, encoding="ascii") as file:
                wanted = int(file.read())
        except (OSError, ValueError):
            return soft
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        soft = wanted
    return soft


def refuse_descriptors(users: int, processes: int) -> None:
    """Refuse, in one line naming the limit and what to set, ``users`` spread over
    ``processes`` worker processes when one of them would need more descriptors than the
    hard RLIMIT_NOFILE allows."""
    hard = hard_limit()
    per_process = -(-users // processes)
    need = per_process + SPARE_DESCRIPTORS
    if hard is None or need <= hard:
        return
    raise TpsbenchError(
        f"{users:,} users put {per_process:,} connections in one driver process, which needs about {need:,} "
        f"file descriptors, but the hard limit on open files (RLIMIT_NOFILE) is {hard:,}; raise it to {need:,} or "
        f"more: ulimit -n {need} as root in the shell that runs tpsbench, LimitNOFILE={need} in its systemd unit, "
        f"or nofile in /etc/security/limits.conf")
