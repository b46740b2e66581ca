"""A run's storage: described by --storage-file, detected from the database's own folders,
stored with the run, and its devices' I/O and the database's counters in the report."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import _pg_admin, copy_of
from test_cli_help import invoke
from test_devices import attached_loop, mounted

from tpsbench.commands.run import RunConfig, run
from tpsbench.commands.storage import storage_facts
from tpsbench.report.table import render
from tpsbench.targets import open_target

STORAGE = '[storage."pool A"]\ndevices = 2\nraid_level = "RAID1"\nrpm = 7200\n'


def short(url: str, tmp_path: Path, **overrides: object) -> RunConfig:
    config = RunConfig("tpcc", url, users=[2], rampup_s=0.5, duration_s=1.0, interval_s=0.5, seed=1,
                       results_url=f"sqlite:///{tmp_path / 'results.db'}", options={"think": "off"})
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def test_a_run_stores_its_described_and_detected_storage_and_reports_its_io(built_tpcc_sqlite: Path,
                                                                            tmp_path: Path) -> None:
    (tmp_path / "storage.toml").write_text(STORAGE)
    url = copy_of(built_tpcc_sqlite, tmp_path)
    record = run(short(url, tmp_path, storage_file=str(tmp_path / "storage.toml")), live=None)
    data = record.store.load_run(record.run_id)
    assert data.run.storage == "pool A"  # the file's one configuration names the run
    stored = data.run.config["storage"]
    assert stored["described"] == {"name": "pool A", "devices": 2, "raid_level": "RAID1", "rpm": 7200}
    (placement,) = stored["detected"]["paths"]
    assert placement["path"] == str(tmp_path)
    if placement["devices"]:  # the folder is on a block device here: its I/O was read
        disk_io = data.readings(1)["disk_io"]
        assert disk_io["total.w_s"] >= 0 and "total.util_pct" in disk_io
        assert "IOPS" in render([data]) and "MB/s" in render([data])


@pytest.mark.slow  # a run: the quick lane runs test_a_run_stores_its_described_and_detected_storage_and_reports_its_io
def test_a_database_on_tmpfs_has_no_device_and_says_so(built_tpcc_sqlite: Path, tmp_path: Path, require) -> None:
    if os.geteuid() != 0:
        require("root (to mount a tmpfs)", f"running as uid {os.geteuid()}")
    with mounted(tmp_path / "ram", "-t", "tmpfs", "-o", "size=256m", "tmpfs") as ram:
        url = copy_of(built_tpcc_sqlite, ram)
        said: list[str] = []
        record = run(short(url, tmp_path), live=said.append)
        data = record.store.load_run(record.run_id)
    (placement,) = data.run.config["storage"]["detected"]["paths"]
    assert placement["devices"] == [] and "tmpfs" in placement["unresolved"]
    assert any("tmpfs" in line and "no block device" in line for line in said)
    assert "disk_io" not in data.readings(1) and "IOPS" not in render([data])


def test_a_remote_database_gets_no_device() -> None:
    facts = storage_facts(open_target("postgresql://u@192.0.2.7/x"), "", None, None)
    assert facts.devices == [] and facts.detected == {"remote": True, "host": "192.0.2.7"}
    assert "another host" in facts.notes[0]


@pytest.mark.postgresql
@pytest.mark.slow  # a file system made, a database moved and a run: the quick lane runs on SQLite
def test_a_postgresql_tablespace_on_a_loop_device_is_found_and_its_io_read(tpcc_pg_url: str, tmp_path: Path,
                                                                          require) -> None:
    """The database's tables in a tablespace on ext4 over a loop device: data_paths names the
    tablespace, the loop device is found under it, and the run reads its I/O. The database
    is a copy of the session's TPC-C build, moved into the tablespace whole."""
    pg_url = tpcc_pg_url
    if shutil.which("mkfs.ext4") is None:
        require("mkfs.ext4", "not on PATH")
    reachable = Path(tempfile.mkdtemp(prefix="tpsb-pool-", dir="/tmp"))  # pytest's tmp is root's alone
    reachable.chmod(0o755)
    with attached_loop(tmp_path / "pool.img", require, megabytes=256) as loop:
        subprocess.run(["mkfs.ext4", "-q", loop], check=True)
        with mounted(reachable / "pool", loop) as pool:
            shutil.chown(pool, "postgres", "postgres")
            name = f"ts_{Path(loop).name}_{os.getpid()}"
            database = pg_url.rsplit("/", 1)[1]
            with _pg_admin() as admin:
                admin.execute(f"CREATE TABLESPACE {name} LOCATION '{pool}'")
            try:
                with _pg_admin() as admin:
                    admin.execute(f'ALTER DATABASE "{database}" SET TABLESPACE {name}')
                target = open_target(pg_url)
                assert str(pool) in target.data_paths()
                record = run(short(pg_url, tmp_path, users=[4], duration_s=3.0), live=None)
                data = record.store.load_run(record.run_id)
                found = [p for p in data.run.config["storage"]["detected"]["paths"] if p["path"] == str(pool)]
                assert found and found[0]["devices"][0]["name"] == Path(loop).name
                assert data.readings(1)["disk_io"][f"{Path(loop).name}.w_s"] >= 0
                assert data.readings(1)["database"]["buffer_hit_pct"] > 0
                assert record.honesty["match"] is True
            finally:
                with _pg_admin() as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
                    admin.execute(f"DROP TABLESPACE IF EXISTS {name}")
    shutil.rmtree(reachable)


@pytest.mark.parametrize(("args", "needle"), [
    (["--storage-file", "nope.toml"], "storage file nope.toml does not exist"),
    (["--storage-file", "bad.toml"], "unknown key(s) rmp"),
    (["--storage-file", "good.toml", "--storage", "other"], "does not describe 'other'"),
    (["--data-path", "/no/such/folder"], "--data-path /no/such/folder does not exist"),
])
def test_bad_storage_input_is_one_line_and_nothing_is_stored(built_tpcc_sqlite: Path, bare_cwd: Path,
                                                             capsys: pytest.CaptureFixture[str], args: list[str],
                                                             needle: str) -> None:
    """On a built database, where the run would go ahead but for the storage input; the
    CLI in this process (bare_cwd)."""
    (bare_cwd / "bad.toml").write_text('[storage."A"]\nrmp = 7200\n')
    (bare_cwd / "good.toml").write_text(STORAGE)
    db = copy_of(built_tpcc_sqlite, bare_cwd)
    code, _, lines = invoke(["run", "tpcc", "--db", db, "--users", "1", "--duration", "1s", *args], capsys)
    assert code != 0 and len(lines) == 1 and needle in lines[0], lines
    assert not (bare_cwd / "tpsbench-results.db").exists()
