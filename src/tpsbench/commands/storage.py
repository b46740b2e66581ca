"""A run's storage configuration: what the user says it is, and what this machine can tell.

What is said comes from ``--storage NAME`` and ``--storage-file`` (tpsbench.core.storage);
what is found comes from the database's own folders (its data directory, tablespaces and
log folders as the server reports them, or ``--data-path``) resolved down to the devices
(tpsbench.measure.devices). Both are stored with every run, and the devices found are
the ones the device I/O observer reads. A server on another host is said to be remote
and gets no device: the devices of this host would be the wrong ones.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.storage import StorageConfig, storage_for
from tpsbench.core.target import Target
from tpsbench.measure.devices import Device, resolve


@dataclass
class StorageFacts:
    """The storage of one run: described (may be None), detected, and the devices to read."""

    described: StorageConfig | None
    #: JSON-able: "remote" or "paths" (each path's placement), and what could not be found
    detected: dict[str, Any]
    devices: list[Device] = field(default_factory=list)
    #: lines to say before the run: what could not be told
    notes: list[str] = field(default_factory=list)

    def stored(self) -> dict[str, Any]:
        """What the run's record keeps."""
        return {"described": self.described.to_dict() if self.described else None, "detected": self.detected}


def storage_facts(target: Target, label: str, storage_file: str | None, data_path: str | None) -> StorageFacts:
    """Read the storage file and find the devices; refused only for a storage file that is
    wrong or a ``--data-path`` that does not exist (one line each)."""
    described = storage_for(label, storage_file)
    if data_path is not None:
        if not os.path.exists(data_path):
            raise TpsbenchError(f"--data-path {data_path} does not exist on this host")
        paths = [data_path]
    elif not target.is_local:
        return StorageFacts(described, {"remote": True, "host": target.url.host},
                            notes=[f"the database is on another host ({target.url.host}): no device of this "
                                   "host is its storage, so none is read"])
    else:
        paths = target.data_paths()
    placements: list[dict[str, Any]] = []
    devices: dict[str, Device] = {}
    notes: list[str] = []
    for path in paths:
        try:
            placement = resolve(path)
        except TpsbenchError as exc:  # the server's folder is not on this host as it says (a container?)
            notes.append(f"storage: {exc}; its devices are not read")
            continue
        placements.append(placement.to_dict())
        for device in placement.devices:
            devices.setdefault(device.name, device)
        if placement.unresolved:
            notes.append(f"storage: {path}: {placement.unresolved}")
    if not paths:
        notes.append("storage: the database did not say where its files are (give --data-path): no device is read")
    return StorageFacts(described, {"paths": placements}, list(devices.values()), notes)
