"""Server instances of a test's own, for tests that restart a server or change a setting.

Why: the shared servers (conftest's ``pg_url``, ``mysql_url``) keep their shipped
settings and are used by everyone running tests at the same time; a test that restarts a
server must not take theirs down. Each instance here lives in a temporary folder on a
free port and is stopped and removed when the ``with`` block ends, also when the test fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from conftest import unavailable


def free_port() -> int:
    """A TCP port nothing listens on now (the instance binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=120)


class PrivatePostgres:
    """A PostgreSQL cluster of its own (pg_createcluster), restartable at will."""

    def __init__(self, folder: Path) -> None:
        self.version = max(Path("/etc/postgresql").iterdir()).name
        self.name, self.port = f"tpsb_{uuid.uuid4().hex[:10]}", free_port()
        _run("pg_createcluster", self.version, self.name, "-p", str(self.port), "-d", str(folder / "data"),
             "--", "--auth=trust")
        try:
            self.restart("start")
        except BaseException:
            self.remove()
            raise

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/tpsbench"

    def restart(self, action: str = "restart") -> None:
        """``pg_ctlcluster ... restart --mode=fast`` (or start): open connections are ended."""
        extra = ["--mode=fast"] if action == "restart" else []
        _run("pg_ctlcluster", "--skip-systemctl-redirect", self.version, self.name, action, *extra)

    def remove(self) -> None:
        subprocess.run(["pg_dropcluster", "--stop", self.version, self.name], capture_output=True, timeout=120,
                       check=False)


class PrivateMariadb:
    """A mariadbd of its own (its own datadir, port and socket), restartable at will."""

    def __init__(self, folder: Path, files: int | None = None, args: Sequence[str] = ()) -> None:
        #: the open-files limit the server runs under (prlimit), where the test sets one;
        #: ``args``: startup options (those SET GLOBAL cannot change, e.g. --thread-handling)
        self.folder, self.port, self.files, self.args = folder, free_port(), files, tuple(args)
        _run("mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={folder / 'data'}",
             "--auth-root-authentication-method=normal", "--skip-test-db")
        self.process: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"mysql+pymysql://root@127.0.0.1:{self.port}/tpsbench"

    def start(self) -> None:
        limit = ["prlimit", f"--nofile={self.files}:{self.files}"] if self.files else []
        self.process = subprocess.Popen(
            [*limit, "/usr/sbin/mariadbd", "--no-defaults", "--user=root", f"--datadir={self.folder / 'data'}",
             f"--port={self.port}", "--bind-address=127.0.0.1", f"--socket={self.folder / 'mysqld.sock'}",
             f"--pid-file={self.folder / 'mysqld.pid'}", f"--log-error={self.folder / 'error.log'}", *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(60)
            self.process = None

    def restart(self) -> None:
        """Stop (SIGTERM: a clean shutdown, its clients' connections ended) and start again."""
        self.stop()
        self.start()

    def remove(self) -> None:
        self.stop()


def _answering(connect: Callable[[], object], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            connect()
            return
        except Exception:  # still starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@contextlib.contextmanager
def private_server(kind: str, files: int | None = None,
                   args: Sequence[str] = ()) -> Iterator[PrivatePostgres | PrivateMariadb]:
    """A running instance of ``kind`` ("postgresql" or "mysql") with an empty database
    ``tpsbench``, removed on exit; unavailable (skip, or fail under CI) where it cannot be made.
    ``files``: a MariaDB's open-files limit (its process's, so open_files_limit cannot exceed it);
    ``args``: a MariaDB's startup options."""
    tool = "pg_createcluster" if kind == "postgresql" else "mariadb-install-db"
    if shutil.which(tool) is None:
        unavailable(tool, "needed for a server instance of the test's own")
    folder = Path(tempfile.mkdtemp(prefix="tpsb-private-", dir="/var/tmp"))
    shutil.chown(folder, "postgres" if kind == "postgresql" else "root")
    server: PrivatePostgres | PrivateMariadb | None = None
    try:
        try:
            server = PrivatePostgres(folder) if kind == "postgresql" else PrivateMariadb(folder, files, args)
        except (subprocess.CalledProcessError, OSError, LookupError) as exc:
            unavailable(f"a private {kind} instance", getattr(exc, "stderr", b"") or exc)
        wait_until_answering(server)
        if kind == "postgresql":
            import psycopg

            with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", dbname="postgres",
                                 autocommit=True) as conn:
                conn.execute("CREATE DATABASE tpsbench")
        else:
            import pymysql

            conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", password="", autocommit=True)
            conn.cursor().execute("CREATE DATABASE tpsbench CHARACTER SET utf8mb4")
            conn.close()
        yield server
    finally:
        if server is not None:
            server.remove()
        shutil.rmtree(folder, ignore_errors=True)


def wait_until_answering(server: PrivatePostgres | PrivateMariadb) -> None:
    """Until the instance accepts a connection (60 s at most)."""
    if isinstance(server, PrivatePostgres):
        import psycopg

        _answering(lambda: psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", dbname="postgres",
                                           connect_timeout=2).close())
    else:
        import pymysql

        _answering(lambda: pymysql.connect(host="127.0.0.1", port=server.port, user="root", password="",
                                           connect_timeout=2).close())


#: PgBouncer set up as docs/postgresql.md sets it up for many users: transaction pooling
#: over few server connections, the user tpsbench connects as allowed on its admin console
PGBOUNCER_INI = """[databases]
* = host={host} port={port}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/userlist.txt
admin_users = {user}
pool_mode = transaction
default_pool_size = {pool}
max_client_conn = {clients}
log_connections = 0
log_disconnections = 0
"""


@contextlib.contextmanager
def private_pgbouncer(host: str, port: int, user: str, *, pool: int, clients: int) -> Iterator[int]:
    """A PgBouncer of the test's own in front of the PostgreSQL at ``host:port``, its port
    yielded: ``pool`` server connections per database and user, ``clients`` clients at most.
    As root it runs as nobody (it refuses root; it reads its files before it switches)."""
    binary = shutil.which("pgbouncer")
    if binary is None:
        unavailable("pgbouncer", "apt-get install pgbouncer")
    folder, listen = Path(tempfile.mkdtemp(prefix="tpsb-pgbouncer-")), free_port()
    (folder / "userlist.txt").write_text(f'"{user}" ""\n')
    (folder / "pgbouncer.ini").write_text(PGBOUNCER_INI.format(host=host, port=port, listen=listen, folder=folder,
                                                               user=user, pool=pool, clients=clients))
    as_root = ["-u", "nobody"] if os.geteuid() == 0 else []
    # its log to a file: a pipe nobody reads fills up with thousands of clients, and then
    # PgBouncer blocks on its next line and answers no one
    log = (folder / "pgbouncer.log").open("wb")
    process = subprocess.Popen([binary, *as_root, str(folder / "pgbouncer.ini")], stdout=log, stderr=subprocess.STDOUT)
    try:
        import psycopg

        try:
            _answering(lambda: psycopg.connect(host="127.0.0.1", port=listen, user=user, dbname="postgres",
                                               connect_timeout=2).close(), timeout=20)
        except psycopg.Error as exc:
            process.kill()
            process.wait()
            unavailable("a private pgbouncer", (folder / "pgbouncer.log").read_text(errors="replace")[-300:] or exc)
        yield listen
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
