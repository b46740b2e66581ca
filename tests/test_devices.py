"""Where a folder's data lives: real loop devices and tmpfs mounts where this machine lets
us (root), and recorded /sys and /proc trees of other machines always.

The trees under tests/fixtures/sysfs mirror real kernels: ``host-lvm`` is a workstation
(/ on the NVMe partition nvme0n1p2; /data an LVM volume dm-0 over sda2, a hard drive's,
and sdb1, an SSD's; a loop file on /data mounted at /mnt/scratch; btrfs on sdc; a tmpfs,
an NFS mount and a btrfs whose device is not listed), ``host-raid`` a container (/ on
overlay, the data directory a bind mount of md0, RAID10 over the SAS disks sd[a-d]).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.devices import Device, block_device, placement_of, resolve

FIXTURES = Path(__file__).parent / "fixtures" / "sysfs"
LVM, RAID = str(FIXTURES / "host-lvm"), str(FIXTURES / "host-raid")
SECTOR = 512

Require = Callable[[str, object], NoReturn]


def as_root(require: Require) -> None:
    """Skip (fail under CI=true) unless this test may attach loop devices and mount."""
    if os.geteuid() != 0:
        require("root (to attach loop devices and mount file systems)", f"running as uid {os.geteuid()}")


@contextlib.contextmanager
def attached_loop(image: Path, require: Require, megabytes: int = 64) -> Iterator[str]:
    """/dev/loopN over a new sparse file ``image``, detached on exit."""
    as_root(require)
    if shutil.which("losetup") is None:
        require("losetup", "not on PATH")
    with open(image, "wb") as f:
        f.truncate(megabytes << 20)
    attach = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=False)
    if attach.returncode:
        require("a free loop device", attach.stderr)
    device = attach.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=True)


@contextlib.contextmanager
def mounted(folder: Path, *source: str) -> Iterator[Path]:
    """``mount *source folder``, unmounted on exit."""
    folder.mkdir()
    subprocess.run(["mount", *source, str(folder)], check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def names(devices: list[Device]) -> list[str]:
    return [d.name for top in devices for d in top.walk()]


def disks_under(folder: Path) -> list[str]:
    """The physical disks beneath ``folder`` as df and lsblk see them (not as devices.py does)."""
    source = subprocess.run(["df", "--output=source", str(folder)], capture_output=True, text=True,
                            check=True).stdout.split()[-1]
    if not source.startswith("/dev/"):
        return []
    rows = subprocess.run(["lsblk", "--inverse", "--list", "--noheadings", "--output", "NAME,TYPE", source],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    return list(dict.fromkeys(row.split()[0] for row in rows if row.split()[1:] == ["disk"]))


def test_a_folder_on_a_loop_device_resolves_to_it_and_to_the_disk_of_its_backing_file(
        tmp_path: Path, require: Require) -> None:
    image = tmp_path / "disk.img"
    with attached_loop(image, require) as loop:
        subprocess.run(["mkfs.ext4", "-q", loop], check=True)
        with mounted(tmp_path / "mnt", loop) as mnt:
            (mnt / "pgdata").mkdir()
            placement = resolve(mnt / "pgdata")
    assert (placement.path, placement.mount_point) == (str(mnt / "pgdata"), str(mnt))
    assert (placement.fs_type, placement.source, placement.unresolved) == ("ext4", loop, None)
    [device] = placement.devices
    assert (device.name, device.kind, device.backing_file) == (os.path.basename(loop), "loop", str(image))
    assert device.size_bytes == 64 << 20 and not device.physical
    expected = disks_under(tmp_path)
    assert [d.name for d in placement.physical()] == expected
    if expected:  # the disk /tmp is on: its attributes read
        assert device.unresolved is None and all(d.size_bytes and d.rotational is not None and d.scheduler
                                                 for d in placement.physical())
    else:
        assert device.below == [] and device.unresolved
    assert json.loads(json.dumps(placement.to_dict())) == placement.to_dict()


def test_a_folder_on_tmpfs_and_a_loop_file_on_tmpfs_have_no_block_device(tmp_path: Path, require: Require) -> None:
    as_root(require)
    with mounted(tmp_path / "ram", "-t", "tmpfs", "-o", "size=16m", "tpsbench-devices") as ram:
        (ram / "pgdata").mkdir()
        placement = resolve(ram / "pgdata")
        with attached_loop(ram / "disk.img", require, megabytes=8) as loop:
            device = block_device(os.path.basename(loop))
    assert (placement.mount_point, placement.fs_type, placement.devices) == (str(ram), "tmpfs", [])
    assert placement.unresolved == "tmpfs: in memory, no block device"
    assert (device.kind, device.backing_file, device.below) == ("loop", str(ram / "disk.img"), [])
    assert device.unresolved == f"backing file {ram / 'disk.img'} on tmpfs: in memory, no block device"


def test_an_nvme_partition_resolves_to_its_disk() -> None:
    placement = placement_of("/home/pg/data", (259, 2), LVM)
    assert (placement.mount_point, placement.fs_type, placement.source) == ("/", "ext4", "/dev/nvme0n1p2")
    [part] = placement.devices
    assert (part.name, part.kind, part.size_bytes) == ("nvme0n1p2", "partition", 1952472064 * SECTOR)
    [disk] = part.below
    assert disk == Device("nvme0n1", "disk", size_bytes=1953525168 * SECTOR, model="Samsung SSD 980 PRO 1TB",
                          rotational=False, scheduler="none", queue_depth=1023)
    assert placement.physical() == [disk]


def test_an_lvm_volume_resolves_to_the_partitions_and_disks_beneath() -> None:
    placement = placement_of("/data/pg/base", (253, 0), LVM)
    assert (placement.mount_point, placement.fs_type, placement.source) == ("/data", "xfs", "/dev/mapper/vg0-data")
    assert placement.options is not None and "noatime" in placement.options.split()[0].split(",")
    [volume] = placement.devices
    assert (volume.kind, volume.label, volume.scheduler) == ("dm", "vg0-data", "none")
    assert names(placement.devices) == ["dm-0", "sda2", "sda", "sdb1", "sdb"]
    hdd, ssd = placement.physical()
    assert (hdd.name, hdd.model, hdd.rotational, hdd.queue_depth, hdd.scheduler) == (
        "sda", "ST4000DM004-2CV1", True, 32, "mq-deadline")
    assert (ssd.name, ssd.model, ssd.rotational) == ("sdb", "Samsung SSD 870", False)


def test_a_bind_mount_with_a_space_in_its_folder_is_found() -> None:
    placement = placement_of("/var/lib/postgresql 16/main", (253, 0), LVM)
    assert placement.mount_point == "/var/lib/postgresql 16"
    assert names(placement.devices)[0] == "dm-0"


def test_a_loop_device_resolves_through_its_backing_file_to_the_disks_beneath() -> None:
    placement = placement_of("/mnt/scratch/db", (7, 0), LVM)
    [loop] = placement.devices
    assert (loop.kind, loop.backing_file, loop.unresolved) == ("loop", "/data/images/scratch.img", None)
    assert names(placement.devices) == ["loop0", "dm-0", "sda2", "sda", "sdb1", "sdb"]
    assert [d.name for d in placement.physical()] == ["sda", "sdb"]


def test_a_later_mount_on_the_same_folder_hides_the_earlier(tmp_path: Path) -> None:
    tree = tmp_path / "host"
    shutil.copytree(LVM, tree, symlinks=True)
    with open(tree / "proc/self/mountinfo", "a") as f:
        f.write("40 22 0:70 / /data rw,relatime shared:9 - tmpfs tmpfs rw,size=1048576k\n")
    loop = block_device("loop0", str(tree))
    assert loop.below == []
    assert loop.unresolved == "backing file /data/images/scratch.img on tmpfs: in memory, no block device"


def test_an_md_raid10_resolves_to_its_four_members() -> None:
    placement = placement_of("/var/lib/postgresql/data/base", (9, 0), RAID)
    assert (placement.mount_point, placement.source) == ("/var/lib/postgresql/data", "/dev/md0")
    [array] = placement.devices
    assert (array.kind, array.raid_level, array.chunk_bytes, array.queue_depth) == ("md", "raid10", 524288, None)
    assert [d.name for d in array.below] == ["sda", "sdb", "sdc", "sdd"]
    assert all((d.kind, d.model, d.rotational, d.queue_depth, d.size_bytes, d.below)
               == ("disk", "ST600MM0088", True, 254, 1172123568 * SECTOR, []) for d in array.below)


@pytest.mark.parametrize("dev", [(0, 48), (0, 49)])  # the mount's device number, a nested subvolume's
def test_btrfs_resolves_through_sys_fs_btrfs(dev: tuple[int, int]) -> None:
    placement = placement_of("/srv/btrfs/base", dev, LVM)
    assert (placement.mount_point, placement.fs_type) == ("/srv/btrfs", "btrfs")
    assert (names(placement.devices), placement.unresolved) == (["sdc"], None)
    assert placement.devices[0].model == "WDC WD40EFRX-68N"


@pytest.mark.parametrize("tree, path, dev, mount_point, reason", [
    (LVM, "/run/pg", (0, 25), "/run", "tmpfs: in memory, no block device"),
    (LVM, "/mnt/nfs/pg", (0, 52), "/mnt/nfs", "nfs4 from db1:/export: a remote file system, no local block device"),
    (LVM, "/srv/other/pg", (0, 60), "/srv/other",
     f"btrfs on /dev/sdz: unresolved, no {LVM}/sys/fs/btrfs/*/devices entry names it"),
    (RAID, "/var/lib/pg", (0, 44), "/", "overlay: a union of other folders, no block device of its own"),
    (LVM, "/mnt/pg", (0, 99), None, f"no mount of device 0:99 holds /mnt/pg in {LVM}/proc/self/mountinfo"),
    (LVM, "/mnt/gone", (8, 99), None, f"no block device 8:99 in {LVM}/sys/dev/block"),
])
def test_what_has_no_block_device_says_why_and_names_none(tree: str, path: str, dev: tuple[int, int],
                                                          mount_point: str | None, reason: str) -> None:
    placement = placement_of(path, dev, tree)
    assert (placement.mount_point, placement.devices, placement.unresolved) == (mount_point, [], reason)


def test_a_placement_is_plain_json() -> None:
    placement = placement_of("/mnt/scratch/db", (7, 0), LVM)
    stored = json.loads(json.dumps(placement.to_dict()))
    assert stored == placement.to_dict()
    assert stored["devices"][0]["below"][0]["label"] == "vg0-data"
    assert stored["devices"][0]["below"][0]["below"][0]["below"][0]["model"] == "ST4000DM004-2CV1"


def test_a_path_that_does_not_exist_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TpsbenchError, match=f"cannot find the storage of {tmp_path / 'nowhere'}: No such file"):
        resolve(tmp_path / "nowhere")


def test_this_machines_own_file_systems_resolve_without_raising() -> None:
    proc = resolve("/proc")
    assert (proc.fs_type, proc.devices) == ("proc", [])
    assert proc.unresolved is not None and proc.unresolved.startswith("proc on proc: device 0:")
