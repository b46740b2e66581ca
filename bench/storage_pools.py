"""Three storage pools on this machine, one PostgreSQL database on each, all at once.

The storage reviews' experiment in small (one database per drive, all drives at once, as
docs/storage-reviews.md describes): the same TPC-C database built three times on PostgreSQL, each in a
tablespace of its own, on a tmpfs (memory: no device), on ext4 over a loop device (a
file on the disk) and on the disk itself, synchronous_commit on; a concurrent campaign
over the three at 1, 8 and 32 users. It prints, per pool and step, TPS and p95 and the
I/O the device sampler attributed to the pool's device (none to the tmpfs; the loop
device's own, with the disk beneath it), beside the database's own counters.

Every run reads its pool's folder (``data_path``), so the figures are the tablespace's
device: the WAL of all three databases goes to the data directory's disk, which is the
same for all of them and is not any one pool's.

Needs root (mount, losetup, chown to postgres) and the PostgreSQL server of the tests.
Run: ``python bench/storage_pools.py [--duration 30s] | tee bench/results/storage_pools.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg

from tpsbench.commands.campaign import run_campaign
from tpsbench.results.records import RunData

ADMIN = "host=127.0.0.1 user=postgres dbname=postgres"
POOLS = ("tmpfs", "loop-ext4", "disk")


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


def admin(sql: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(sql)


@contextlib.contextmanager
def pools(base: Path) -> Iterator[dict[str, Path]]:
    """The three folders, each on its storage, owned by postgres; all undone on exit."""
    undo: list[list[str]] = []
    folders = {name: base / name for name in POOLS}
    try:
        for folder in folders.values():
            folder.mkdir(parents=True)
        sh("mount", "-t", "tmpfs", "-o", "size=768m", "tmpfs", str(folders["tmpfs"]))
        undo.append(["umount", str(folders["tmpfs"])])
        image = base / "loop.img"
        with open(image, "wb") as f:
            f.truncate(1536 << 20)
        loop = sh("losetup", "--find", "--show", str(image))
        undo.append(["losetup", "-d", loop])
        sh("mkfs.ext4", "-q", loop)
        sh("mount", loop, str(folders["loop-ext4"]))
        undo.append(["umount", str(folders["loop-ext4"])])
        for folder in folders.values():
            shutil.chown(folder, "postgres", "postgres")
        yield folders
    finally:
        for command in reversed(undo):
            subprocess.run(command, check=False)


def describe(data: RunData) -> list[str]:
    """One line per step: the run's figures and the pool device's I/O."""
    lines = []
    for step in data.steps:
        if step.summary is None:
            continue
        seen = data.readings(step.step)
        io, db = seen.get("disk_io", {}), seen.get("database", {})
        devices = sorted({name.split(".")[0] for name in io} - {"total"})
        per_device = "; ".join(
            f"{d}: {io[d + '.r_s'] + io[d + '.w_s']:,.0f} IOPS, {io[d + '.w_kB_s'] / 1024:.1f} MB/s written"
            for d in devices) or "no device (in memory)"
        lines.append(f"{data.run.storage:10} {step.users:>3} users  TPS {step.summary.tps:8.1f}  "
                     f"p95 {step.summary.latency.p95:7.2f} ms  | {per_device} | database: "
                     f"{db.get('commits_s', 0):,.0f} commits/s, {db.get('write_kB_s', 0) / 1024:.1f} MB/s written, "
                     f"buffer hit {db.get('buffer_hit_pct', 0):.1f} %")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="30s")
    parser.add_argument("--users", default="1,8,32")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("storage_pools.py needs root (mount, losetup)")
    base = Path(tempfile.mkdtemp(prefix="tpsb-pools-", dir="/var/tmp"))  # /var/tmp: on the disk
    base.chmod(0o755)
    work = Path(tempfile.mkdtemp(prefix="tpsb-pools-run-"))
    try:
        with pools(base) as folders:
            for name, folder in folders.items():
                ident = name.replace("-", "_")
                admin(f"CREATE TABLESPACE pool_{ident} LOCATION '{folder}'")
                admin(f"CREATE DATABASE pool_{ident} TABLESPACE pool_{ident}")
                admin(f"ALTER DATABASE pool_{ident} SET synchronous_commit = on")
            try:
                targets = "".join(
                    f'[[target]]\ndb = "postgresql://postgres@127.0.0.1/pool_{n.replace("-", "_")}"\n'
                    f'storage = "{n}"\ndata_path = "{folders[n]}"\n' for n in POOLS)
                campaign = work / "pools.toml"
                campaign.write_text(f'name = "three pools"\nworkload = "tpcc"\nscale = 1\n'
                                    f'users = [{args.users}]\nrampup = "5s"\nduration = "{args.duration}"\n'
                                    f'interval = "5s"\n[options]\nthink = "off"\n' + targets)
                outcome = run_campaign(campaign, concurrent=True, results_url=f"sqlite:///{work / 'results.db'}",
                                       live=lambda line: None)
                print(f"campaign {outcome.campaign_id}: {outcome.status}; PostgreSQL "
                      f"{sh('psql', '-h', '127.0.0.1', '-U', 'postgres', '-Atc', 'SHOW server_version')}, "
                      f"{os.cpu_count()} cores, {args.duration} per step, all three pools at once")
                for target in outcome.targets:
                    print(f"  {target.storage}: {target.said}")
                for run in outcome.store.campaign_runs(outcome.campaign_id):
                    for line in describe(outcome.store.load_run(run.id)):
                        print(line)
            finally:
                for name in POOLS:
                    ident = name.replace("-", "_")
                    admin(f"DROP DATABASE IF EXISTS pool_{ident} WITH (FORCE)")
                    admin(f"DROP TABLESPACE IF EXISTS pool_{ident}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
