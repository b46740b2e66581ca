"""Emulated storage pools on this machine, one PostgreSQL cluster on each, in cgroups.

Why: a storage review runs one database instance per pool on a database several times
larger than memory, so that the storage limits the result; on one small host that means
pools made for the purpose: ext4 on a loop device (a sparse file), a blkio cgroup that
throttles it to the IOPS of a pair of 10K SAS drives (cgroup v1,
blkio.throttle.{read,write}_iops_device), a tmpfs, and a memory cgroup holding every
process of a cluster so that its page cache cannot hold the database and reads reach the
device. Used by bench/storage_sensitivity.py and by the tests' throttled-loop fixture.

Every part is a context manager that takes down what it set up, also on Ctrl-C and on
SIGTERM (:func:`signals_raise` turns it into an exception); teardown ignores further
signals until it is done, so that no cgroup, loop device, mount or cluster is left.
Where this host cannot have them, :func:`check_host` says why in one line.

Needs root, cgroup v1 blkio and memory hierarchies, postgresql-common (pg_createcluster)
and a free loop device.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PG_VERSION = "15"
CGROUP = Path("/sys/fs/cgroup")
#: what every cgroup and cluster made here is named after, so that a leftover is recognisable
PREFIX = "tpsb_"


class PoolsUnavailable(Exception):
    """This host cannot have the pools; the message is one line saying why."""


def sh(*args: str) -> str:
    """Run a command; its output, or PoolsUnavailable with its last line of error."""
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()
        said = next((line for line in lines if "FATAL" in line), lines[-1])
        raise PoolsUnavailable(f"{' '.join(args[:3])}: {said}")
    return done.stdout.strip()


def check_host(*, loop: bool = True) -> None:
    """PoolsUnavailable naming the first thing this host lacks for the pools."""
    if os.geteuid() != 0:
        raise PoolsUnavailable("needs root (losetup, mount, cgroups, pg_createcluster)")
    for controller, knob in (("blkio", "blkio.throttle.write_iops_device"), ("memory", "memory.limit_in_bytes")):
        if not (CGROUP / controller / knob).exists():
            raise PoolsUnavailable(f"no cgroup v1 {controller} hierarchy ({CGROUP / controller / knob} is missing)")
    for tool in ("pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "losetup", "mkfs.ext4"):
        if shutil.which(tool) is None:
            raise PoolsUnavailable(f"no {tool} on the PATH")
    if loop and subprocess.run(["losetup", "-f"], capture_output=True, check=False).returncode != 0:
        raise PoolsUnavailable("no free loop device (losetup -f found none)")


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """SIGTERM raised as an exception (KeyboardInterrupt's kind, as tpsbench's CLI does),
    so that every ``finally`` below runs when the script is killed politely."""
    from tpsbench.core.errors import raise_interruption

    before = signal.signal(signal.SIGTERM, raise_interruption)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Teardown in peace: a second Ctrl-C or SIGTERM must not leave half of it undone."""
    try:
        before = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: signals go to the main thread anyway
        before = {}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _undo(*command: str) -> None:
    """A teardown command: tried, never raising (the next one must still run)."""
    subprocess.run(command, capture_output=True, check=False)


@dataclass(frozen=True)
class Pool:
    """A mounted folder for a cluster; ``device`` is its loop device ("loop3"), None on a tmpfs."""

    name: str
    path: Path
    device: str | None = None

    @property
    def majmin(self) -> str:
        """The device's MAJ:MIN, as the blkio throttle files want it."""
        if self.device is None:
            raise PoolsUnavailable(f"pool {self.name} has no block device to throttle")
        return (Path("/sys/class/block") / self.device / "dev").read_text().strip()


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A folder for the pools' mounts and images on the disk (/var/tmp), which the
    postgres user can pass through; removed on exit (empty by then)."""
    base = Path(tempfile.mkdtemp(prefix="tpsb-pools-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        yield base
    finally:
        with contextlib.suppress(OSError):
            base.rmdir()


def _postgres_owns(path: Path) -> None:
    user = pwd.getpwnam("postgres")
    os.chown(path, user.pw_uid, user.pw_gid)


@contextlib.contextmanager
def loop_pool(base: Path, name: str, size_mb: int) -> Iterator[Pool]:
    """ext4 on a loop device over a sparse file in ``base``, mounted at ``base/name``."""
    image, mount = base / f"{name}.img", base / name
    device = None
    try:
        mount.mkdir()
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        device = sh("losetup", "-f", "--show", str(image))
        # initialised now, not lazily by ext4lazyinit under the measurement
        sh("mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", device)
        sh("mount", device, str(mount))
        _postgres_owns(mount)
        yield Pool(name, mount, Path(device).name)
    finally:
        with _shielded():
            _unmount(mount)
            if device:
                _undo("losetup", "-d", device)
            image.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                mount.rmdir()


def _unmount(mount: Path) -> None:
    """umount, retried a few times while something lets go of it."""
    for _ in range(10):
        if not os.path.ismount(mount) or subprocess.run(["umount", str(mount)], capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    _undo("umount", "-l", str(mount))


def drop_pool_cache(pool: Pool) -> None:
    """Empty the page cache of this pool's file system only (unmount and mount it again):
    a freshly copied database must come from the device, not from the copy's pages."""
    if pool.device is None:
        return
    sh("umount", str(pool.path))
    sh("mount", f"/dev/{pool.device}", str(pool.path))


@contextlib.contextmanager
def tmpfs_pool(base: Path, name: str, size_mb: int) -> Iterator[Pool]:
    """A tmpfs of ``size_mb`` mounted at ``base/name``: memory, no device."""
    mount = base / name
    try:
        mount.mkdir()
        sh("mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", f"{PREFIX}{name}", str(mount))
        _postgres_owns(mount)
        yield Pool(name, mount)
    finally:
        with _shielded():
            _unmount(mount)
            with contextlib.suppress(OSError):
                mount.rmdir()


@dataclass
class Cgroups:
    """A blkio and a memory cgroup (v1) of one name; processes join with :meth:`add`."""

    name: str
    dirs: list[Path] = field(default_factory=list)

    @property
    def blkio(self) -> Path:
        return CGROUP / "blkio" / f"{PREFIX}{self.name}"

    @property
    def memory(self) -> Path:
        return CGROUP / "memory" / f"{PREFIX}{self.name}"

    def add(self, pid: int) -> None:
        """Put ``pid`` in both cgroups (its later children inherit them)."""
        for folder in self.dirs:
            (folder / "cgroup.procs").write_text(str(pid))

    def throttle(self, majmin: str, iops: int | None) -> None:
        """Read and write IOPS of ``majmin`` for this cgroup's processes; None lifts it."""
        for knob in ("read", "write"):
            (self.blkio / f"blkio.throttle.{knob}_iops_device").write_text(f"{majmin} {iops or 0}")

    def oom_kills(self) -> int:
        """Processes the memory limit has killed so far: a cluster that lost a backend so
        has crashed and restarted, and its figures are not the storage's."""
        for line in (self.memory / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0


@contextlib.contextmanager
def cgroups(name: str, memory_mb: int | None) -> Iterator[Cgroups]:
    """The two cgroups, the memory one limited to ``memory_mb`` (None: unlimited); on exit
    their processes go back to the root cgroups and the cgroups are removed."""
    groups = Cgroups(name)
    try:
        for folder in (groups.blkio, groups.memory):
            if folder.exists():
                raise PoolsUnavailable(f"cgroup {folder} exists already (left by a killed run? rmdir it)")
            folder.mkdir()
            groups.dirs.append(folder)
        if memory_mb is not None:
            (groups.memory / "memory.limit_in_bytes").write_text(str(memory_mb << 20))
        yield groups
    finally:
        with _shielded():
            for folder in groups.dirs:
                for _ in range(20):
                    for pid in (folder / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError):  # it ended meanwhile
                            (folder.parent / "cgroup.procs").write_text(pid)
                    try:
                        folder.rmdir()
                        break
                    except OSError:
                        time.sleep(0.25)


@dataclass(frozen=True)
class Cluster:
    """A PostgreSQL cluster of its own (postgresql-common), its data and WAL on ``pool``."""

    name: str
    port: int
    pool: Pool

    @property
    def data(self) -> Path:
        return self.pool.path / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self, groups: Cgroups | None = None) -> None:
        """Started from a shell already in ``groups``, so the postmaster and every backend
        it forks are in them; then every process of the cluster is put there again."""
        command = ["pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION, self.name, "start"]
        if groups is not None:
            joins = "; ".join(f'echo $$ > "{d}/cgroup.procs"' for d in groups.dirs)
            command = ["sh", "-c", f'{joins}; exec "$@"', "sh", *command]
        sh(*command)
        if groups is not None:
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):  # a child that has ended meanwhile
                    groups.add(pid)

    def stop(self) -> None:
        _undo("pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION, self.name, "stop", "-m", "fast")

    def pids(self) -> list[int]:
        """The postmaster and its children."""
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return []
        postmaster = int(pid_file.read_text().split()[0])
        children = Path(f"/proc/{postmaster}/task/{postmaster}/children")
        return [postmaster, *map(int, children.read_text().split())] if children.exists() else []

    def psql(self, sql: str, database: str = "postgres") -> str:
        return sh("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-Atc", sql)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@contextlib.contextmanager
def cluster(pool: Pool, name: str, port: int, shared_buffers: str = "32MB",
            settings: dict[str, str] | None = None) -> Iterator[Cluster]:
    """``pg_createcluster`` on ``pool`` (WAL inside the data directory, trust on
    127.0.0.1, a small shared_buffers so that reads reach the page cache or the device,
    and any further ``settings``), not started; stopped and dropped on exit."""
    if not _port_free(port):
        raise PoolsUnavailable(f"port {port} is taken: another server listens there")
    made = Cluster(f"{PREFIX}{name}", port, pool)
    if (Path("/etc/postgresql") / PG_VERSION / made.name).exists():
        raise PoolsUnavailable(f"cluster {PG_VERSION}/{made.name} exists already (pg_dropcluster --stop it first)")
    try:
        sh("pg_createcluster", PG_VERSION, made.name, "-p", str(port), "-d", str(made.data),
           *(part for key, value in {"shared_buffers": shared_buffers, **(settings or {})}.items()
             for part in ("-o", f"{key}={value}")),
           "--", "--auth-host=trust", "--auth-local=trust")
        yield made
    finally:
        with _shielded():
            made.stop()
            _undo("pg_dropcluster", "--stop", PG_VERSION, made.name)


def copy_data(source: Cluster, target: Cluster) -> None:
    """The source's data directory, both stopped, as the target's own files (its config
    stays in /etc/postgresql, with its own port)."""
    shutil.rmtree(target.data)
    sh("cp", "-a", str(source.data), str(target.data))


@dataclass(frozen=True)
class Throttled:
    """A cluster's database ``url`` on loop device ``device`` (MAJ:MIN ``majmin``), its
    processes in ``groups``, throttled to ``iops`` read and ``iops`` write IOPS."""

    url: str
    device: str
    iops: int
    groups: Cgroups
    majmin: str

    @contextlib.contextmanager
    def unthrottled(self) -> Iterator[None]:
        """The same cluster with the throttle lifted for a while, put back after."""
        self.groups.throttle(self.majmin, None)
        try:
            yield
        finally:
            self.groups.throttle(self.majmin, self.iops)


@contextlib.contextmanager
def throttled_sysbench(name: str, port: int, iops: int, tables: int, table_size: int) -> Iterator[Throttled]:
    """A cluster on ext4 over a loop device with a sysbench database ``sbtest`` built
    unthrottled, then throttled to ``iops``: a run on it is limited by its storage (the
    tests' throttled_pg fixture, bench/record_readings.py). All taken down on exit."""
    from tpsbench.commands.build import build

    with contextlib.ExitStack() as stack:
        base = stack.enter_context(workspace())
        pool = stack.enter_context(loop_pool(base, "throttled", 1024))
        made = stack.enter_context(cluster(pool, name, port))
        groups = stack.enter_context(cgroups(name, None))
        made.start(groups)
        made.psql("CREATE DATABASE sbtest")
        url = made.url("sbtest").replace("postgresql://", "postgresql+psycopg://")
        build("sysbench", tables, url, show_progress=False, options={"table_size": str(table_size)})
        groups.throttle(pool.majmin, iops)
        assert pool.device is not None
        yield Throttled(url, pool.device, iops, groups, pool.majmin)
