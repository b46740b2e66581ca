"""HammerDB 4.12's CLI driven from Python: build its TPC-C schema, start a timed run, read
its own result, for the scripts that put tpsbench beside it (vs_hammerdb.py, tpcc_server_cost.py).

Nothing of HammerDB's is in this repository (it is GPLv3): the scripts find an installed
copy by ``--hammerdb DIR`` or ``$HAMMERDB_HOME`` and talk to it only through its CLI's
documented commands (``dbset``, ``diset``, ``buildschema``, ``vuset``, ``vucreate``,
``vurun``) in a Tcl file written here. ``bench/hammerdb_setup.sh`` installs it on Debian 12
from a git directory of HammerDB's public repository; :func:`locate` says so when it is
missing.

The settings are those of a fair side-by-side run (bench/README.md has the reasons):
TCP to 127.0.0.1 as tpsbench connects, no SSL, HammerDB's default PL/pgSQL functions on
PostgreSQL (``pg_storedprocs false``) and its stored procedures on MariaDB, the timed
driver with no ramp-up, no keying or think time, each virtual user on one home
warehouse (``allwarehouse false``), errors logged and carried on past.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

SETUP = "bench/hammerdb_setup.sh"
#: HammerDB's dictionary prefix and database name per server kind
PREFIX = {"postgresql": "pg", "mariadb": "maria"}
DB_NAME = {"postgresql": "pg", "mariadb": "maria"}


class NotSetUp(SystemExit):
    """HammerDB is not where the options say, or lacks the shims it needs here."""


def locate(given: str | None) -> Path:
    """HammerDB's folder from ``--hammerdb`` or ``$HAMMERDB_HOME``; a NotSetUp that says
    how to install it when neither leads to a working copy."""
    folder = given or os.environ.get("HAMMERDB_HOME")
    how = (f"install it with `bash {SETUP} GITDIR DIR` (GITDIR: a git directory of "
           "github.com/TPC-Council/HammerDB holding tag v4.12; DIR: a folder outside the checkout), "
           "then pass --hammerdb DIR or set HAMMERDB_HOME=DIR")
    if not folder:
        raise NotSetUp(f"HammerDB is not set up: {how}")
    path = Path(folder).expanduser().resolve()
    if not (path / "hammerdbcli").is_file():
        raise NotSetUp(f"HammerDB: no hammerdbcli in {path}: {how}")
    if not (path / "lib" / "pgtclshim" / "pgtclshim.tcl").is_file():
        raise NotSetUp(f"HammerDB in {path} lacks the Pgtcl and mariatcl shims that Debian's Tcl needs: {how}")
    return path


def located(given: str | None, script: str) -> Path | None:
    """:func:`locate`, or None once ``script`` has said on stderr what is missing (the
    caller then exits with 2)."""
    try:
        return locate(given)
    except NotSetUp as missing:
        print(f"{script}: {missing}", file=sys.stderr)
        return None


def _connection(server: str, url: str, dbname: str) -> list[str]:
    """``diset`` lines for the server at ``url`` and HammerDB's database ``dbname``."""
    u = urlsplit(url)
    host, port = u.hostname or "127.0.0.1", u.port or (5432 if server == "postgresql" else 3306)
    user, password = unquote(u.username or ""), unquote(u.password or "")
    if server == "postgresql":
        return [f"diset connection pg_host {host}", f"diset connection pg_port {port}",
                "diset connection pg_sslmode disable",
                f"diset tpcc pg_superuser {user or 'postgres'}", f"diset tpcc pg_superuserpass {password or 'postgres'}",
                "diset tpcc pg_defaultdbase postgres", "diset tpcc pg_user tpcc", "diset tpcc pg_pass tpcc",
                f"diset tpcc pg_dbase {dbname}", "diset tpcc pg_storedprocs false"]
    # "null" makes HammerDB leave the password out (root with an empty one), and TCP not the socket
    return [f"diset connection maria_host {host}", f"diset connection maria_port {port}",
            "diset connection maria_socket null", f"diset tpcc maria_user {user or 'root'}",
            f"diset tpcc maria_pass {password or 'null'}", f"diset tpcc maria_dbase {dbname}",
            "diset tpcc maria_storage_engine innodb"]


@dataclass
class HammerDB:
    """One HammerDB installation, for one server kind and one database of its own."""

    home: Path
    server: str
    url: str
    dbname: str

    def _script(self, lines: list[str]) -> Path:
        head = [f"dbset db {DB_NAME[self.server]}", "dbset bm TPC-C",
                *_connection(self.server, self.url, self.dbname)]
        handle = tempfile.NamedTemporaryFile("w", suffix=".tcl", prefix="tpsb-hdb-", delete=False)
        with handle:
            handle.write("\n".join(head + lines) + "\n")
        return Path(handle.name)

    def _command(self, script: Path) -> tuple[list[str], dict[str, str]]:
        """hammerdbcli keeps its settings and job store in $TMP/hammer.DB and carries values
        over between invocations: every invocation gets a new folder."""
        tmp = tempfile.mkdtemp(prefix="tpsb-hdb-tmp-")
        return ["./hammerdbcli", "auto", str(script)], dict(os.environ, TMP=tmp)

    def build(self, warehouses: int) -> str:
        """Build HammerDB's schema at ``warehouses`` (the database must not exist); its output.
        PostgreSQL is loaded by 1 virtual user: the Pgtcl shim serialises the loaders' calls anyway."""
        p = PREFIX[self.server]
        loaders = 1 if self.server == "postgresql" else min(warehouses, 2)
        script = self._script([f"diset tpcc {p}_count_ware {warehouses}", f"diset tpcc {p}_num_vu {loaders}",
                               "buildschema", 'puts "TPSB BUILD DONE"'])
        argv, env = self._command(script)
        done = subprocess.run(argv, cwd=self.home, env=env, capture_output=True, text=True)
        script.unlink()
        out = done.stdout + done.stderr
        if done.returncode or "TPSB BUILD DONE" not in out or "FINISHED FAILED" in out:
            raise SystemExit(f"HammerDB build failed:\n{out[-2000:]}")
        return out

    def start(self, users: int, minutes: int, log: Path) -> subprocess.Popen[bytes]:
        """Start a timed run of ``users`` virtual users for ``minutes`` (no ramp-up), its
        output going to ``log``; the caller waits on (or stops, :func:`stop`) the process."""
        p = PREFIX[self.server]
        script = self._script([
            f"diset tpcc {p}_driver timed", f"diset tpcc {p}_rampup 0", f"diset tpcc {p}_duration {minutes}",
            f"diset tpcc {p}_allwarehouse false", f"diset tpcc {p}_keyandthink false",
            f"diset tpcc {p}_raiseerror false", "loadscript", f"vuset vu {users}", "vucreate", "vurun",
            "vudestroy", 'puts "TPSB RUN DONE"'])
        argv, env = self._command(script)
        with log.open("wb") as out:
            return subprocess.Popen(argv, cwd=self.home, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)


def stop(process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """End a run: wait for it, then SIGTERM its process group if it has not ended."""
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)


def own_result(log: Path) -> tuple[int, int] | None:
    """(NOPM, TPM) as HammerDB printed them at the end of a run, None if it did not."""
    found = re.search(r"System achieved (\d+) NOPM from (\d+) \w+ TPM", log.read_text(errors="replace"))
    return (int(found.group(1)), int(found.group(2))) if found else None


def error_lines(log: Path) -> int:
    """Lines of the run's output that report an error (raiseerror false logs and goes on)."""
    return sum(1 for line in log.read_text(errors="replace").splitlines()
               if re.match(r"Vuser \d+:", line) and re.search(r"\berror\b", line, re.I))
