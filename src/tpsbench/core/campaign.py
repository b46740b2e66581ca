"""A campaign file: one workload, one load shape, several databases on several storage pools.

Why: the storage reviews ran the same TPC-C load on one database per drive, all at the
same time, and published the drives side by side. A campaign says that once::

    workload = "tpcc"
    scale = 1                      # built first where a target has no build
    users = [1, 8, 32]
    rampup = "5s"
    duration = "30s"
    interval = "5s"
    cache = "cold"                 # optional: warm (default), cached or cold, as run --cache
    repeat = 3                     # optional: each target 3 times (A B C A B C one after another)
    storage_file = "pools.toml"    # optional: describes the storage names below
    [options]                      # run options the same for every target
    think = "off"                  # (tpsbench run's, by name: processes, rate, mix ...)

    [[target]]
    db = "postgresql://postgres@127.0.0.1/pool_ssd"
    storage = "SSD"
    [[target]]
    db = "postgresql://postgres@127.0.0.1/pool_hdd"
    storage = "HDD"
    data_path = "/srv/hdd"         # optional, where the server cannot say

Every value is checked before anything runs: unknown keys by name, durations, users and
the scale as ``tpsbench run`` checks them, and two targets that are one database (the
same server, port and database, or the same SQLite file) are refused: their runs would
count each other's commits. ``[options]`` keeps its values as typed (text, or true/false
for a flag); which names it takes is for the CLI to say (tpsbench.cli.campaign), which
knows ``run``'s options.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import (
    check_cache,
    check_seed,
    check_text,
    parse_duration,
    parse_scale,
    parse_users,
    read_toml,
)
from tpsbench.core.redact import safe_url
from tpsbench.core.repeats import check_repeat

TOP_KEYS = {"name", "workload", "scale", "users", "rampup", "duration", "interval", "storage_file", "seed",
            "options", "target", "cache", "repeat"}
TARGET_KEYS = {"db", "storage", "data_path"}


@dataclass(frozen=True)
class CampaignTarget:
    db: str
    storage: str
    data_path: str | None = None


@dataclass(frozen=True)
class Campaign:
    name: str
    workload: str
    scale: int
    targets: list[CampaignTarget]
    users: list[int] = field(default_factory=lambda: [1, 20, 50, 100, 300])
    rampup_s: float = 30.0
    duration_s: float = 120.0
    interval_s: float = 10.0
    storage_file: str | None = None
    seed: int | None = None
    #: run options by name (dashes as underscores): text, or a flag's true/false
    options: dict[str, str | bool] = field(default_factory=dict)
    cache: str = "warm"
    #: each target run this many times (tpsbench.core.repeats): one after another, in
    #: rounds A B C A B C; all at once, each run with --repeat
    repeat: int = 1

    def stored(self) -> dict[str, Any]:
        """JSON-able, with the database URLs' passwords hidden (kept with the campaign)."""
        data = asdict(self)
        data["targets"] = [{**t, "db": safe_url(t["db"])} for t in data["targets"]]
        return data


def load_campaign(path: str | Path) -> Campaign:
    """The campaign in ``path``; one line naming what is wrong."""
    where = Path(path)
    data = read_toml(where, "campaign file")

    def refuse(what: str) -> TpsbenchError:
        return TpsbenchError(f"campaign file {where}: {what}")

    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise refuse(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(TOP_KEYS))}")
    for key in ("workload", "scale"):
        if key not in data:
            raise refuse(f"{key} is missing")
    targets = data.get("target")
    if not isinstance(targets, list) or not targets:
        raise refuse('no [[target]]: add one per database (db = "URL", storage = "NAME")')
    try:
        options = data.get("options", {})
        if not isinstance(options, dict):
            raise TpsbenchError("options must be a table ([options])")
        chosen = {str(k).replace("-", "_"): _option_value(str(k), v) for k, v in options.items()}
        checked = [_target(n, t) for n, t in enumerate(targets, start=1)]
        _refuse_same_database(checked)
        given = data.get("users", [1, 20, 50, 100, 300])
        users = parse_users(",".join(map(str, given)) if isinstance(given, list) else str(given))
        storage_file = data.get("storage_file")
        return Campaign(
            name=check_text("its name", str(data.get("name", where.stem)), 200),
            workload=_text(data["workload"], "workload"),
            scale=parse_scale(data["scale"]),
            targets=checked,
            users=users,
            rampup_s=parse_duration(data.get("rampup", "30s")),
            duration_s=parse_duration(data.get("duration", "2m")),
            interval_s=parse_duration(data.get("interval", "10s")),
            storage_file=None if storage_file is None else str(where.parent / _text(storage_file, "storage_file")),
            seed=None if data.get("seed") is None else check_seed(_whole(data["seed"], "seed")),
            options=chosen,
            cache=check_cache(data.get("cache", "warm")),
            repeat=check_repeat(data.get("repeat", 1), len(users), "repeat"),
        )
    except TpsbenchError as exc:
        raise refuse(str(exc)) from None


def _target(number: int, values: Any) -> CampaignTarget:
    if not isinstance(values, dict):
        raise TpsbenchError(f"target {number} must be a table ([[target]])")
    unknown = sorted(set(values) - TARGET_KEYS)
    if unknown:
        raise TpsbenchError(f"target {number}: unknown key(s) {', '.join(unknown)}; known: db, storage, data_path")
    if "db" not in values:
        raise TpsbenchError(f'target {number}: db is missing (db = "postgresql://...")')
    data_path = values.get("data_path")
    return CampaignTarget(db=_text(values["db"], f"target {number}'s db"),
                          storage=check_text(f"target {number}'s storage",
                                             _text(values.get("storage", f"target {number}"),
                                                   f"target {number}'s storage"), 200),
                          data_path=None if data_path is None else _text(data_path, f"target {number}'s data_path"))


def run_args(options: dict[str, str | bool]) -> list[str]:
    """``[options]`` as ``tpsbench run`` takes them: ``--name VALUE``, a flag ``--name`` or
    ``--no-name`` (the one spelling both the campaign's check and its runs use)."""
    args: list[str] = []
    for name, value in options.items():
        flag = name.replace("_", "-")
        args += [f"--{flag}" if value else f"--no-{flag}"] if isinstance(value, bool) else [f"--{flag}", value]
    return args


def _option_value(name: str, value: Any) -> str | bool:
    """A TOML value of ``[options]`` as the run takes it: text or a number as text, true/false for a flag."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int, float)):
        return str(value)
    raise TpsbenchError(f"[options] {name} must be text, a number or true/false, not {value!r}")


#: where a server listens when the URL names none, by SQLAlchemy's backend name
DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306, "mssql": 1433}
#: host names that all mean this machine
LOCAL_HOSTS = {"", "localhost", "127.0.0.1", "::1", "[::1]"}


def database_identity(db: str) -> tuple[str, ...]:
    """What makes two URLs one database: for SQLite the file's absolute path, for a server
    its kind, host (this machine's names taken as one), port (the default where none is
    given) and database; driver, user and settings aside."""
    try:
        url = sa.engine.make_url(db)
    except Exception:  # noqa: BLE001 - the run says why in its own words; here, only "not this one"
        return ("unparsed", db)
    backend = url.get_backend_name()
    if backend == "sqlite":
        name = url.database or ""
        return ("sqlite", name if name in ("", ":memory:") else str(Path(name).expanduser().resolve()))
    kind = "mysql" if backend == "mariadb" else backend
    host = (url.host or "").lower()
    port = url.port or DEFAULT_PORTS.get(backend)
    return (kind, "localhost" if host in LOCAL_HOSTS else host, str(port), url.database or "")


def _refuse_same_database(targets: list[CampaignTarget]) -> None:
    """Two targets that are one database would each count the other's commits: refused,
    naming both (their URLs without a password)."""
    seen: dict[tuple[str, ...], int] = {}
    for number, target in enumerate(targets, start=1):
        identity = database_identity(target.db)
        if identity[0] == "sqlite" and identity[1] in ("", ":memory:"):
            continue  # a database of its own in every process
        if identity in seen:
            first = seen[identity]
            raise TpsbenchError(
                f"targets {first} ({targets[first - 1].storage}, {safe_url(targets[first - 1].db)}) and {number} "
                f"({target.storage}, {safe_url(target.db)}) are the same database: each target needs one of its own")
        seen[identity] = number


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise TpsbenchError(f"{what} must be text, not {value!r}")
    return value


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TpsbenchError(f"{what} must be a whole number, not {value!r}")
    return value
