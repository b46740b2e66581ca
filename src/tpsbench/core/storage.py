"""Storage configurations as reviewers describe them: ``--storage-file FILE.toml``.

Why a file of its own: a storage review lists, above its tables, what each configuration
is (drives, model, capacity, RPM or flash type, interface, form factor, cache feature,
RAID level and controller, stripe size, controller cache mode, filesystem, price), and
a reader compares configurations by exactly those. A free-text label cannot be sorted,
filtered or checked; a described configuration is stored whole with every run that
used it, beside what the machine found out by itself (tpsbench.measure.devices).

The file holds one table per configuration, named as ``--storage NAME`` names it::

    [storage."RAID10 8x SSHD"]
    devices = 8
    drive_model = "ST600MX0052"
    capacity_gb = 600
    rpm = 10000
    interface = "SAS 12Gb/s"
    raid_level = "RAID10"
    controller = "LSI MegaRAID 9361-8i"
    stripe_kb = 256
    controller_cache = "write-back"

An unknown key is refused by name (a misspelt ``rmp`` would otherwise vanish from every
comparison), as is a value of the wrong kind.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import check_text, read_toml


@dataclass(frozen=True)
class StorageConfig:
    """One storage configuration: every field optional but its name."""

    name: str
    #: how many drives the pool has
    devices: int | None = None
    drive_model: str = ""
    capacity_gb: float | None = None
    #: spindle speed of a hard drive or an SSHD; flash_type for an SSD (SLC, MLC, TLC, QLC)
    rpm: int | None = None
    flash_type: str = ""
    #: SAS 12Gb/s, SATA 6Gb/s, NVMe PCIe 4.0 x4 ...
    interface: str = ""
    #: 2.5in, 3.5in, M.2 2280, U.2 ...
    form_factor: str = ""
    #: an SSHD's flash cache, a drive's enhanced cache ...
    cache_feature: str = ""
    #: RAID0, RAID1, RAID10, RAID5, span, none ...
    raid_level: str = ""
    controller: str = ""
    stripe_kb: float | None = None
    #: write-back, write-through, read-ahead ...
    controller_cache: str = ""
    filesystem: str = ""
    price_usd: float | None = None
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The fields that were given (JSON-able), for the results store."""
        return {key: value for key, value in asdict(self).items() if value not in ("", None)}


#: key -> the Python types its value may have (bool is refused where a number is meant)
_KINDS: dict[str, tuple[type, ...]] = {
    f.name: (str,) if f.type == "str" else (int,) if f.type == "int | None" else (int, float)
    for f in fields(StorageConfig) if f.name != "name"
}


def load_storage_file(path: str | Path) -> dict[str, StorageConfig]:
    """The configurations in a storage file, by name; one clear line for what is wrong."""
    where = Path(path)
    data = read_toml(where, "storage file")
    unknown = sorted(set(data) - {"storage"})
    if unknown:
        raise TpsbenchError(f"storage file {where}: unknown table(s) {', '.join(unknown)}; "
                            'configurations go under [storage."NAME"]')
    tables = data.get("storage", {})
    if not tables or not isinstance(tables, dict):
        raise TpsbenchError(f'storage file {where} describes no configuration: add a [storage."NAME"] table')
    return {name: _config(where, name, values) for name, values in tables.items()}


def _config(where: Path, name: str, values: Any) -> StorageConfig:
    if not isinstance(values, dict):
        raise TpsbenchError(f'storage file {where}: storage.{name} must be a table ([storage."{name}"])')
    unknown = sorted(set(values) - set(_KINDS))
    if unknown:
        raise TpsbenchError(f"storage file {where}: {name!r} has unknown key(s) {', '.join(unknown)}; "
                            f"known: {', '.join(_KINDS)}")
    for key, value in values.items():
        kinds = _KINDS[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            kind = "text" if kinds == (str,) else "a whole number" if kinds == (int,) else "a number"
            raise TpsbenchError(f"storage file {where}: {name!r}: {key} must be {kind}, not {value!r}")
        if isinstance(value, str):
            check_text(f"{name!r}'s {key}", value)
        elif isinstance(value, int | float) and (not math.isfinite(value) or value < 0):
            raise TpsbenchError(f"storage file {where}: {name!r}: {key} must be 0 or more, not {value!r}")
    return StorageConfig(name=name, **values)


def storage_for(name: str, path: str | Path | None) -> StorageConfig | None:
    """The configuration ``--storage NAME`` names in ``--storage-file``, or None without a
    file; a file that does not describe NAME is refused, naming those it does describe."""
    if path is None:
        return None
    configs = load_storage_file(path)
    if not name:
        if len(configs) == 1:
            return next(iter(configs.values()))
        raise TpsbenchError(f"storage file {path} describes {len(configs)} configurations: say which with "
                            f"--storage ({', '.join(map(repr, configs))})")
    if name not in configs:
        raise TpsbenchError(f"storage file {path} does not describe {name!r}; it describes "
                            f"{', '.join(map(repr, configs))}")
    return configs[name]
