"""Restarting the server on this host (its top process is found by Target.server_pid).

Why restarts: ``--cache cold`` must start a step with the server's buffer pool empty, and
neither PostgreSQL nor MariaDB can empty theirs while running (PostgreSQL has no way at
all; InnoDB's pool can only be resized, not dropped). A restart is the honest way, and
it has to be the server's own way where there is one (a Debian cluster is restarted by
``pg_ctlcluster``, which keeps its bookkeeping straight), else as the server was started.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Callable

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.target import Target

#: how long a restarted server may take to answer again, and to stop before that
RESTART_WAIT_S = 60.0
POLL_S = 0.1
#: the suffix of InnoDB's buffer pool dump while a cold restart keeps it from being reloaded
ASIDE = ".tpsbench-cold"


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended; reaped here if it is ours (a server this module
    started before), else it would stay a zombie that still has its /proc entry."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        return True


def wait_until(answers: Callable[[], bool], what: str, seconds: float = RESTART_WAIT_S) -> None:
    """Poll ``answers`` until it is true; a one-line error after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not answers():
        if time.monotonic() > deadline:
            raise TpsbenchError(f"{what} within {seconds:.0f} s")
        time.sleep(POLL_S)


def _run(args: list[str], user: str | None = None) -> None:
    """Run a server tool, as ``user`` when that is not who we are; its error in one line."""
    if user is not None and user != pwd.getpwuid(os.geteuid()).pw_name:
        args = ["runuser", "-u", user, "--", *args]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=RESTART_WAIT_S * 2, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TpsbenchError(f"{' '.join(args)} failed: {exc}") from None
    if done.returncode:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise TpsbenchError(f"{' '.join(args)} failed: {said[-1] if said else f'exit {done.returncode}'}")


def restart_postgres(data_directory: str, port: int, pid: int | None) -> None:
    """Restart the PostgreSQL server of ``data_directory``: with ``pg_ctlcluster`` where a
    Debian cluster has that directory and port, else ``pg_ctl restart -m fast`` (from the
    running server's own binaries) as the directory's owner."""
    if shutil.which("pg_lsclusters") and shutil.which("pg_ctlcluster"):
        listing = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=False)
        for line in listing.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[2] == str(port) and os.path.realpath(fields[5]) == \
                    os.path.realpath(data_directory):
                _run(["pg_ctlcluster", "--skip-systemctl-redirect", fields[0], fields[1], "restart"])
                return
    try:
        owner = pwd.getpwuid(os.stat(data_directory).st_uid).pw_name
    except OSError as exc:
        raise TpsbenchError(f"cannot read the data directory {data_directory}: {exc.strerror}") from None
    pg_ctl = shutil.which("pg_ctl")
    if pid is not None:
        with_server = os.path.join(os.path.dirname(os.path.realpath(f"/proc/{pid}/exe")), "pg_ctl")
        pg_ctl = with_server if os.path.exists(with_server) else pg_ctl
    if pg_ctl is None:
        raise TpsbenchError("no pg_ctl found to restart PostgreSQL with")
    _run([pg_ctl, "-D", data_directory, "-w", "-m", "fast", "restart"], user=owner)


def restart_detached(pid: int, shut_down: Callable[[], None], aside: str = "") -> None:
    """Stop the server process ``pid`` with ``shut_down`` (SHUTDOWN over SQL) and start the
    same binary again with the same arguments, user and working directory, detached from
    us (a session of its own, no terminal), as MariaDB's server has no restart of its own.
    ``aside``: a file moved to ``aside + ASIDE`` while the server starts (the caller puts it back)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            args = [a.decode() for a in file.read().split(b"\0") if a]
        binary, cwd, info = os.readlink(f"/proc/{pid}/exe"), os.readlink(f"/proc/{pid}/cwd"), os.stat(f"/proc/{pid}")
    except OSError as exc:
        raise TpsbenchError(f"cannot read the server process {pid}: {exc.strerror}") from None
    shut_down()
    wait_until(lambda: gone(pid), f"the server (process {pid}) did not stop")
    if aside and os.path.exists(aside):
        os.replace(aside, aside + ASIDE)
    try:
        subprocess.Popen([binary, *args[1:]], cwd=cwd, user=info.st_uid, group=info.st_gid, start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as exc:
        raise TpsbenchError(f"could not start {binary} again: {exc.strerror or exc}") from None


def restart_mysql(target: Target) -> None:
    """SHUTDOWN over SQL, the same server started again as it was, and wait until it answers."""
    pid = target.server_pid()
    if pid is None:
        raise TpsbenchError(f"{target.describe()}: the server's process is not found on this host")
    try:  # InnoDB reloads the pages of its last shutdown's dump at startup (MariaDB 10.3+, MySQL 5.7+)
        ((datadir, name),) = target.fetch_all("SELECT @@datadir, @@innodb_buffer_pool_filename", "reading")
        dump = os.path.join(*(v.decode() if isinstance(v, bytes) else str(v) for v in (datadir, name)))
    except TpsbenchError:  # no such variable: nothing is reloaded
        dump = ""
    with target.session("shutting the server down") as conn:
        restart_detached(pid, lambda: conn.cursor().execute("SHUTDOWN"), aside=dump)
    try:
        wait_until(target.answers, f"{target.describe()} did not answer after its restart")
    finally:  # the dump back for the server's own next start, unless it wrote one meanwhile
        if dump and os.path.exists(dump + ASIDE) and not os.path.exists(dump):
            os.replace(dump + ASIDE, dump)
