"""What the driver's host is, kept with every run: results are compared months later.

A storage review compares configurations; a difference that came from a new tpsbench,
another Python or driver, or a host with fewer cores must be visible in the record, not
remembered. So every run stores the tpsbench version (and its git revision when it runs
from a checkout), Python, the database drivers, the OS, kernel, CPU model, cores and
memory of the host that drove the load. The server's side is the target's server_info.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from importlib import metadata
from pathlib import Path

#: the installed distributions whose versions are recorded (drivers and what the hot path uses)
DISTRIBUTIONS = ("psycopg", "psycopg-binary", "mysqlclient", "PyMySQL", "pyodbc", "SQLAlchemy", "numpy",
                 "hdrhistogram")


def driver_host() -> dict[str, object]:
    """The facts above, as text and numbers; what cannot be read is left out."""
    from tpsbench import __version__

    facts: dict[str, object] = {"tpsbench": __version__, "python": platform.python_version(),
                                "os": platform.platform(), "kernel": platform.release(),
                                "machine": platform.machine(), "cores": os.cpu_count() or 0}
    revision = git_revision()
    if revision:
        facts["git_revision"] = revision
    facts.update(_proc_facts())
    for name in DISTRIBUTIONS:
        try:
            facts[name.lower()] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    facts["sqlite"] = sqlite3.sqlite_version
    return facts


def git_revision() -> str:
    """The checkout's commit when tpsbench runs from one ("+changes" if it has some); "" else."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=5)
        if head.returncode:
            return ""
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "."],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("+changes" if dirty else "")


def _proc_facts() -> dict[str, object]:
    facts: dict[str, object] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                facts["memory_mb"] = int(line.split()[1]) // 1024
                break
    except OSError:
        pass
    return facts
