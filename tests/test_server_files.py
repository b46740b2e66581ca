"""A MariaDB whose open files run out before its max_connections: tpsbench counts the
files, refuses a step that would pass them in one line naming open_files_limit, and
the room it reads can really be connected.

Why: each client connection holds one of the server's open files, beside its tables' and
InnoDB's. A server raised to thousands of max_connections under a low open-files limit
does not refuse the connection past it: the client waits. So a 15,000-user step must be
refused before it starts, with the setting to change, not left hanging.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from private_servers import PrivateMariadb, private_server
from sqlalchemy.engine import make_url

from tpsbench.commands.build import build
from tpsbench.targets import open_target

pytestmark = pytest.mark.slow
#: the server's open-files limit: a few hundred connections' worth
FILES = 400


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateMariadb]:
    with private_server("mysql", files=FILES) as instance:
        assert isinstance(instance, PrivateMariadb)
        admin = pymysql.connect(host="127.0.0.1", port=instance.port, user="root", password="", autocommit=True)
        admin.cursor().execute("SET GLOBAL max_connections = 5000")
        admin.close()
        build("tpcc", 1, instance.url, show_progress=False)
        yield instance


def test_the_room_read_is_what_the_files_allow(server: PrivateMariadb) -> None:
    target = open_target(server.url)
    room = target.connection_limit()
    assert room is not None and room < FILES < 5000
    assert "open_files_limit" in target.connection_limit_hint()
    url = make_url(server.url)
    held = []
    try:  # every connection of the room is accepted and answers
        for _ in range(room):
            conn = pymysql.connect(host="127.0.0.1", port=url.port, user="root", password="", connect_timeout=5,
                                   read_timeout=5)
            conn.cursor().execute("SELECT 1")
            held.append(conn)
    finally:
        for conn in held:
            conn.close()
    assert len(held) == room


def test_a_step_past_the_files_is_refused_in_one_line(server: PrivateMariadb, tmp_path: Path) -> None:
    """Refused before anything is stored: the results file is not even made."""
    done = subprocess.run([sys.executable, "-m", "tpsbench", "run", "tpcc", "--users", "1,1000", "--duration", "1s",
                           "--db", server.url, "--results", f"sqlite:///{tmp_path}/results.db"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "1000 users need 1000 connections" in lines[0] and "raise open_files_limit" in lines[0], lines[0]
    assert not (tmp_path / "results.db").exists()
