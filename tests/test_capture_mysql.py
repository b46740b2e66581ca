"""capture and replay on MariaDB with sysbench (oltp_read_write, 4 threads, text statements):
the general log is turned on for the window and put back as it was, with the rows it
wrote; the trace replays on a second sysbench database, every statement sent. Clients
connected before the window are kept by the database they were on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql
import pytest
from conftest import scratch_mysql_database, unavailable
from overlapping_captures import refusal, second_capture
from sqlalchemy.engine import make_url

#: one capture at a time per server (the capture lock)
pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.exclusive("mariadb capture")]

SYSBENCH = "/usr/bin/sysbench"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def sysbench(url: str, *args: str) -> list[str]:
    u = make_url(url)
    return [SYSBENCH, "oltp_read_write", f"--mysql-host={u.host}", f"--mysql-port={u.port or 3306}",
            f"--mysql-user={u.username}", f"--mysql-password={u.password or ''}", f"--mysql-db={u.database}",
            "--tables=1", "--table-size=1000", *args]


def server_state(url: str) -> tuple[tuple, int]:
    u = make_url(url)
    with pymysql.connect(host=u.host, port=u.port or 3306, user=u.username, password=u.password or "") as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.general_log, @@GLOBAL.log_output")
            settings = cur.fetchone()
            cur.execute("SELECT COUNT(*) FROM mysql.general_log")
            return settings, cur.fetchone()[0]


def processlist(url: str) -> list[tuple]:
    """What every session of the server was doing (SHOW FULL PROCESSLIST), but this one."""
    u = make_url(url)
    with pymysql.connect(host=u.host, port=u.port or 3306, user=u.username, password=u.password or "") as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT id, db, command, time, state, LEFT(info, 120) FROM information_schema.PROCESSLIST"
                        " WHERE id <> CONNECTION_ID()")
            return list(cur.fetchall())


def capture_sysbench(source: str, trace: Path, run_s: int, capture_s: int) -> subprocess.CompletedProcess[str]:
    """sysbench oltp_read_write at 4 threads with text statements for ``run_s`` on
    ``source``, captured a second after its start for ``capture_s`` into ``trace``."""
    bench = subprocess.Popen(sysbench(source, "--threads=4", f"--time={run_s}", "--db-ps-mode=disable", "run"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1)
    cap = subprocess.run([sys.executable, "-m", "tpsbench", "capture", "--db", source, "--duration", f"{capture_s}s",
                          "-o", str(trace), "--allow-settings"], env=dict(os.environ, PYTHONPATH=SRC),
                         capture_output=True, text=True, timeout=120)
    bench.communicate(timeout=60)
    assert cap.returncode == 0, cap.stderr
    return cap


@pytest.mark.alone  # its replay hung twice in full suites (once beside another test, once alone), never run by itself
def test_sysbench_captured_from_the_general_log_and_replayed(tmp_path: Path):
    if not shutil.which(SYSBENCH):
        unavailable("sysbench", f"no {SYSBENCH}")
    with scratch_mysql_database() as source, scratch_mysql_database() as copy:
        for url in (source, copy):
            subprocess.run(sysbench(url, "prepare"), check=True, capture_output=True)
        before = server_state(source)
        env = dict(os.environ, PYTHONPATH=SRC)
        trace = tmp_path / "sb.trace"
        cap = capture_sysbench(source, trace, run_s=8, capture_s=4)
        assert "performance_schema" in cap.stderr or "general log" in cap.stderr
        if before[1] == 0:
            assert server_state(source) == before  # the log's rows went with it
        else:
            assert server_state(source)[0] == before[0]
        rows = [json.loads(line) for line in trace.read_text().splitlines()]
        captured = {s["statement"]: s["count"] for s in rows[-2]["summary"]["statements"]}
        assert captured["SELECT c FROM sbtest1 WHERE id=?"] == 10 * captured["BEGIN"] > 0
        try:
            rep = subprocess.run([sys.executable, "-m", "tpsbench", "replay", str(trace), "--db", copy], env=env,
                                 capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:  # seen twice in full suites, never alone: say what it waited on
            pytest.fail(f"the replay did not end in 120 s; captured {sorted(captured.items())}; "
                        f"the server's sessions then: {processlist(copy)}")
        assert rep.returncode == 0, rep.stderr
        replayed = {}
        for line in rep.stdout.splitlines():
            cells = [c.strip() for c in line.split("│")[1:-1]]
            if len(cells) == 8 and cells[1].isdigit():
                replayed[cells[0]] = (int(cells[1]), int(cells[2]))
        assert replayed["SELECT c FROM sbtest1 WHERE id=?"] == (captured["SELECT c FROM sbtest1 WHERE id=?"],) * 2
        assert all(t == r for t, r in replayed.values())


def test_clients_connected_before_the_window_are_kept_by_their_database(tmp_path: Path):
    """Two clients connected before the capture keep sending: the one on another database of
    the same server is left out, the one on the captured database is kept."""
    with scratch_mysql_database() as source, scratch_mysql_database() as other:
        stop = threading.Event()

        def client(url: str, sql: str) -> None:
            u = make_url(url)
            with pymysql.connect(host=u.host, port=u.port or 3306, user=u.username, password=u.password or "",
                                 database=u.database, autocommit=True) as conn, conn.cursor() as cur:
                while not stop.wait(0.02):
                    cur.execute(sql)

        clients = [threading.Thread(target=client, args=(url, sql)) for url, sql in
                   ((source, "SELECT 1 AS on_source"), (other, "SELECT 1 AS on_other"))]
        for t in clients:
            t.start()
        time.sleep(0.5)
        trace = tmp_path / "c.trace"
        cap = subprocess.run([sys.executable, "-m", "tpsbench", "capture", "--db", source, "--duration", "3s",
                              "-o", str(trace), "--allow-settings"], env=dict(os.environ, PYTHONPATH=SRC),
                             capture_output=True, text=True, timeout=60)
        stop.set()
        for t in clients:
            t.join()
        assert cap.returncode == 0, cap.stderr
        text = trace.read_text()
        assert "on_source" in text and "on_other" not in text


def test_a_second_capture_on_the_server_is_refused_and_changes_nothing(tmp_path: Path):
    """A capture of another database of the server, while one runs, is refused in one line
    naming the running one's connection; the server ends with the settings it began with."""
    with scratch_mysql_database() as first, scratch_mysql_database() as second:
        before = server_state(first)[0]
        u = make_url(first)

        def holder() -> object:
            with pymysql.connect(host=u.host, port=u.port or 3306, user=u.username, password=u.password or "") as c:
                with c.cursor() as cur:
                    cur.execute("SELECT IS_USED_LOCK('tpsbench.capture')")
                    return cur.fetchone()[0]

        refused, held = second_capture(first, second, tmp_path, holder)
        assert f"(connection {held}," in refusal(refused)
        assert server_state(first)[0] == before
