"""Where a folder's data lives, down to the physical devices.

Why: a storage review puts each result in a column named by its storage ("ENT 15K V4
2.5in", "RAID 10 of 16 x 15K SAS"), and tells the drives' IOPS beside the TPS. A run
that does not know which devices its database wrote to can be put in neither: the
user's label may name the wrong disk, and the I/O counters must be read from the right
ones. So every run stores, for the database's data directory and tablespaces, the
chain the kernel keeps: folder -> mount -> block device -> partition's disk, LVM's or
md's members, a loop device's backing file and its own device -> the physical disks
with their model, rotational flag, size, I/O scheduler and queue depth.

What cannot be resolved is said with the reason, never guessed: a tmpfs has no block
device ("tmpfs: in memory, no block device"), nor does an NFS mount or an overlay;
btrfs, whose device numbers are anonymous, is resolved through /sys/fs/btrfs when it
can be. Only a path that does not exist is an error.

Everything is read under a root prefix (default "/"): :func:`placement_of` and
:func:`block_device` read nothing outside it, so tests walk recorded trees of other
machines (tests/fixtures/sysfs). The tree needs /proc/self/mountinfo,
/sys/dev/block/MAJ:MIN and /sys/class/block/NAME (symlinks into /sys/devices, as the
kernel has them), and /sys/fs/btrfs for btrfs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.procfs import Mount, mountinfo, under

#: file systems whose data lives in memory
IN_MEMORY = frozenset({"tmpfs", "ramfs"})
#: file systems whose data lives on another host (or the hypervisor's)
REMOTE = frozenset({"nfs", "nfs4", "cifs", "smb3", "9p", "virtiofs", "ceph", "glusterfs", "fuse.sshfs"})


@dataclass
class Device:
    """One block device, and what it lives on (``below``).

    ``kind``: "disk" (physical as far as the kernel knows: a drive, an NVMe namespace, a
    virtio disk), "partition", "dm" (LVM, dm-crypt, multipath), "md" (software RAID),
    "loop" (a file), "stacked" (another driver with members, such as bcache) or "unknown".
    """

    name: str
    kind: str
    size_bytes: int | None = None
    #: the drive's model as the kernel reports it (None where it reports none: virtio)
    model: str | None = None
    rotational: bool | None = None
    #: the I/O scheduler in use ("none", "mq-deadline", "bfq")
    scheduler: str | None = None
    #: the device's queue depth (device/queue_depth: SCSI, SATA), else the block layer's nr_requests
    queue_depth: int | None = None
    #: md: the RAID level ("raid10") and chunk (stripe unit) size
    raid_level: str | None = None
    chunk_bytes: int | None = None
    #: dm: its name ("vg0-data": volume group and logical volume)
    label: str | None = None
    #: loop: the file it reads and writes
    backing_file: str | None = None
    #: what it lives on: a partition's disk, the members of dm and md, a loop file's device
    below: list[Device] = field(default_factory=list)
    #: why this device's chain ends here although it is not a disk
    unresolved: str | None = None

    @property
    def physical(self) -> bool:
        return self.kind == "disk"

    def walk(self) -> Iterator[Device]:
        """This device and everything beneath it, depth first (a shared one once per path)."""
        yield self
        for lower in self.below:
            yield from lower.walk()


@dataclass
class Placement:
    """Where one folder's data lives: its mount and the block device(s) of that file system
    (one but for multi-device btrfs; none, with the reason, for tmpfs, NFS, overlay ...)."""

    path: str
    mount_point: str | None
    fs_type: str | None
    #: what was mounted (/dev/mapper/vg0-data, tmpfs, host:/export)
    source: str | None
    #: the mount's options, then the file system's (noatime, discard, stripe=...)
    options: str | None
    devices: list[Device]
    unresolved: str | None = None

    def physical(self) -> list[Device]:
        """The distinct physical devices beneath, in walk order."""
        return list({d.name: d for top in self.devices for d in top.walk() if d.physical}.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain dicts, lists and scalars (stored as JSON with every run)."""
        return asdict(self)


def resolve(path: str | os.PathLike[str], root: str = "/") -> Placement:
    """Where the data of ``path`` (a folder or file that exists) lives; see the module docstring."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise TpsbenchError(f"cannot find the storage of {os.fspath(path)}: {exc.strerror}") from exc
    return placement_of(os.path.realpath(path), (os.major(st.st_dev), os.minor(st.st_dev)), root)


def placement_of(path: str, dev: tuple[int, int], root: str = "/") -> Placement:
    """Where ``path`` lives, given its st_dev: nothing is read outside ``root``."""
    mount = _mount_at(path, mountinfo(root), dev)
    if mount is None:
        devices, reason = _block_devices(dev, root, ()) if dev[0] else ([], None)
        return Placement(path, None, None, None, None, devices, reason or (
            f"no mount of device {dev[0]}:{dev[1]} holds {path} in {under(root, 'proc/self/mountinfo')}"))
    devices, reason = _fs_devices(mount, dev, root, ())
    return Placement(path, mount.point, mount.fs_type, mount.source, f"{mount.options} {mount.fs_options}", devices,
                     reason)


def block_device(name: str, root: str = "/") -> Device:
    """The block device of kernel name ``name`` ("sda2", "loop0"), walked down to its disks."""
    return _walk(name, root, ())


def _mount_at(path: str, mounts: list[Mount], dev: tuple[int, int] | None) -> Mount | None:
    """The mount ``path`` is on: the deepest mount point containing it, of its device ``dev``
    (any when ``dev`` is None; a btrfs one for an anonymous ``dev`` no mount has, as a
    subvolume shows another number than its mount); the later of two mounts on one
    folder, which hides the earlier."""
    def contains(mount: Mount) -> bool:
        return path == mount.point or path.startswith(mount.point.rstrip("/") + "/")

    around = [m for m in mounts if contains(m)]
    pool = around if dev is None else [m for m in around if m.device == dev] or [
        m for m in around if dev[0] == 0 and m.fs_type == "btrfs"]
    return max(reversed(pool), key=lambda m: len(m.point), default=None)


Resolved = tuple[list[Device], str | None]


def _fs_devices(mount: Mount, dev: tuple[int, int], root: str, chain: tuple[str, ...]) -> Resolved:
    """The block devices of a mounted file system, or none and why."""
    if dev[0] != 0:
        return _block_devices(dev, root, chain)
    if mount.fs_type == "btrfs":
        return _btrfs_devices(mount.source, root, chain)
    if mount.fs_type in IN_MEMORY:
        return [], f"{mount.fs_type}: in memory, no block device"
    if mount.fs_type in REMOTE:
        return [], f"{mount.fs_type} from {mount.source}: a remote file system, no local block device"
    if mount.fs_type == "overlay":
        return [], "overlay: a union of other folders, no block device of its own"
    return [], f"{mount.fs_type} on {mount.source}: device {dev[0]}:{dev[1]} is not a block device"


def _block_devices(dev: tuple[int, int], root: str, chain: tuple[str, ...]) -> Resolved:
    link = under(root, f"sys/dev/block/{dev[0]}:{dev[1]}")
    if not os.path.exists(link):
        return [], f"no block device {dev[0]}:{dev[1]} in {under(root, 'sys/dev/block')}"
    return [_walk(os.path.basename(os.path.realpath(link)), root, chain)], None


def _btrfs_devices(source: str, root: str, chain: tuple[str, ...]) -> Resolved:
    """btrfs: the members of the file system that lists ``source`` among its devices
    (/sys/fs/btrfs/UUID/devices/NAME; /dev/mapper/NAME matches a dm member by its name)."""
    wanted, base = os.path.basename(source), under(root, "sys/fs/btrfs")
    for uuid in sorted(_listdir(base)):
        members = sorted(_listdir(os.path.join(base, uuid, "devices")))
        if any(wanted in (m, _read(_class(root, m, "dm/name"))) for m in members):
            return [_walk(m, root, chain) for m in members], None
    return [], f"btrfs on {source}: unresolved, no {base}/*/devices entry names it"


def _walk(name: str, root: str, chain: tuple[str, ...]) -> Device:
    """``name`` and what it lives on; ``chain``: the devices above it (a loop onto itself ends)."""
    if not os.path.isdir(_class(root, name)):
        return Device(name, "unknown", unresolved=f"no {_class(root, name)}")
    if name in chain:
        return Device(name, "unknown", unresolved="lives on itself")
    chain += (name,)
    device = Device(name, _kind(name, root), size_bytes=_int(_class(root, name, "size"), 512),
                    model=_read(_class(root, name, "device/model")),
                    rotational=_flag(_class(root, name, "queue/rotational")),
                    scheduler=_scheduler(_read(_class(root, name, "queue/scheduler"))),
                    queue_depth=_int(_class(root, name, "device/queue_depth"))
                    or _int(_class(root, name, "queue/nr_requests")))
    if device.kind == "partition":
        disk = os.path.basename(os.path.dirname(os.path.realpath(_class(root, name))))
        device.below = [_walk(disk, root, chain)]
    elif device.kind == "loop":
        device.backing_file = _read(_class(root, name, "loop/backing_file"))
        if device.backing_file is None:
            device.unresolved = "no backing file: the loop device is not attached"
        else:
            device.below, device.unresolved = _backing(device.backing_file, root, chain)
    else:
        device.below = [_walk(member, root, chain) for member in sorted(_listdir(_class(root, name, "slaves")))]
    if device.kind == "md":
        device.raid_level = _read(_class(root, name, "md/level"))
        device.chunk_bytes = _int(_class(root, name, "md/chunk_size"))
    elif device.kind == "dm":
        device.label = _read(_class(root, name, "dm/name"))
    return device


def _kind(name: str, root: str) -> str:
    def has(entry: str) -> bool:
        return os.path.exists(_class(root, name, entry))

    if has("partition"):
        return "partition"
    if has("md"):
        return "md"
    if has("dm"):
        return "dm"
    if name.startswith("loop"):
        return "loop"
    return "stacked" if _listdir(_class(root, name, "slaves")) else "disk"


def _backing(file: str, root: str, chain: tuple[str, ...]) -> Resolved:
    """The device(s) of the file system a loop device's backing file is on. The file is
    found by the mount table alone, not by stat, so that a recorded tree resolves too."""
    mount = _mount_at(file, mountinfo(root), None)
    if mount is None:
        return [], f"backing file {file}: no mount holds it"
    devices, reason = _fs_devices(mount, mount.device, root, chain)
    return devices, reason and f"backing file {file} on {reason}"


def _class(root: str, name: str, entry: str = "") -> str:
    return under(root, os.path.join("sys/class/block", name, entry))


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _read(path: str) -> str | None:
    """A sysfs attribute without the kernel's padding (SCSI and NVMe models end in spaces)."""
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError:
        return None


def _int(path: str, unit: int = 1) -> int | None:
    """An integer attribute in ``unit``s (sizes are in 512-byte sectors whatever the device's)."""
    text = _read(path)
    return int(text) * unit if text is not None and text.isdigit() else None


def _flag(path: str) -> bool | None:
    value = _int(path)
    return None if value is None else value != 0


def _scheduler(text: str | None) -> str | None:
    """The scheduler in use: the bracketed one of "none [mq-deadline] kyber bfq"."""
    if text is None or "[" not in text:
        return text
    return text[text.index("[") + 1:text.index("]")]
