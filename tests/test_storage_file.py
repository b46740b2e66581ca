"""``--storage-file``: storage configurations described as reviewers describe them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.storage import StorageConfig, load_storage_file, storage_for

REVIEW = '''
[storage."RAID10 8x SSHD"]
devices = 8
drive_model = "ST600MX0052"
capacity_gb = 600
rpm = 10000
interface = "SAS 12Gb/s"
form_factor = "2.5in"
cache_feature = "32 GB eMLC flash cache"
raid_level = "RAID10"
controller = "LSI MegaRAID 9361-8i"
stripe_kb = 256
controller_cache = "write-through, read-ahead"
filesystem = "ext4"
price_usd = 289.5
notes = "one database per pool"

[storage."NVMe TLC"]
flash_type = "TLC"
interface = "NVMe PCIe 4.0 x4"
'''


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "storage.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_review_s_attributes_load_and_keep_what_was_given(tmp_path: Path) -> None:
    configs = load_storage_file(write(tmp_path, REVIEW))
    assert list(configs) == ["RAID10 8x SSHD", "NVMe TLC"]
    sshd = configs["RAID10 8x SSHD"]
    assert sshd.rpm == 10000 and sshd.stripe_kb == 256 and sshd.price_usd == 289.5
    assert configs["NVMe TLC"].to_dict() == {"name": "NVMe TLC", "flash_type": "TLC", "interface": "NVMe PCIe 4.0 x4"}
    assert storage_for("NVMe TLC", write(tmp_path, REVIEW)) == configs["NVMe TLC"]
    assert storage_for("", None) is None


@pytest.mark.parametrize(("text", "needle"), [
    ('[storage."A"]\nrmp = 7200\n', "unknown key(s) rmp"),
    ('[storage."A"]\nrpm = "fast"\n', "rpm must be a whole number, not 'fast'"),
    ('[storage."A"]\nrpm = 7200.5\n', "rpm must be a whole number"),
    ('[storage."A"]\ndevices = true\n', "devices must be a whole number, not True"),
    ('[storage."A"]\ncapacity_gb = -1\n', "capacity_gb must be 0 or more"),
    ('[storage."A"]\ncapacity_gb = nan\n', "capacity_gb must be 0 or more"),
    ('[storage."A"]\ndrive_model = 5\n', "drive_model must be text"),
    ('[pools."A"]\nrpm = 1\n', "unknown table(s) pools"),
    ('storage = 3\n', "describes no configuration"),
    ('[storage]\nA = 3\n', "storage.A must be a table"),
    ('', "describes no configuration"),
    ('[storage."A"\n', "is not valid TOML"),
])
def test_what_is_wrong_is_named_in_one_line(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(TpsbenchError) as caught:
        load_storage_file(write(tmp_path, text))
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_the_named_configuration_must_be_in_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, REVIEW)
    with pytest.raises(TpsbenchError, match="does not describe 'RAID5'; it describes 'RAID10 8x SSHD', 'NVMe TLC'"):
        storage_for("RAID5", path)
    with pytest.raises(TpsbenchError, match="say which with --storage"):
        storage_for("", path)
    one = write(tmp_path, '[storage."only"]\nrpm = 15000\n')
    assert storage_for("", one) == StorageConfig(name="only", rpm=15000)
    with pytest.raises(TpsbenchError, match="does not exist"):
        storage_for("x", tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe[storage]")
    with pytest.raises(TpsbenchError, match="cannot be read"):
        load_storage_file(tmp_path / "bad.toml")
