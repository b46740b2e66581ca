"""Bad ``--cluster`` addresses through the CLI: one line within 10 s, no traceback, no
password in any line, nothing stored; and a SQLite file named relative to this folder,
which every Dask worker would take for another file, refused before anything connects.

Dask is in the test extra (tests/test_dask.py has the clusters that run); these need no
cluster: 127.0.0.1 ports where nothing listens, or where something that is not Dask does.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import distributed  # noqa: F401 - the test extra has it: CI runs these tests, never skips them
import pytest
from conftest import copy_of
from test_signals import _catches_sigterm, _env

#: the longest a bad address may take, from tpsbench's code beginning to its end, on a
#: machine where the CLI starts in a second or so (more is granted when the same start
#: without --cluster takes longer: a busy machine's doing, not the address's)
WITHIN_S = 10.0
SECRET = "S3cretPassw0rd"


def free_port() -> int:
    """A 127.0.0.1 port where nothing listens (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def not_dask() -> Iterator[tuple[int, int]]:
    """Two ports that answer, but not as Dask: one says an HTTP error and closes, one
    accepts and never says a word."""
    talker, silent = socket.socket(), socket.socket()
    held: list[socket.socket] = []
    for listening in (talker, silent):
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        listening.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            for listening in (talker, silent):
                try:
                    conn = listening.accept()[0]
                except TimeoutError:
                    continue
                if listening is talker:
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
                    conn.close()
                else:
                    held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield talker.getsockname()[1], silent.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for conn in (*held, talker, silent):
            conn.close()


def cli_run(args: list[str], cwd: Path) -> tuple[int, float, str, str]:
    """``tpsbench run tpcc ARGS``: exit code, seconds from tpsbench's code beginning to
    the end, stdout, stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "tpsbench", "run", "tpcc", "--users", "1", "--rampup", "0s",
                             "--duration", "1s", "--interval", "1s", *args], cwd=cwd, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while proc.poll() is None and not _catches_sigterm(proc.pid):
        time.sleep(0.005)
    began = time.monotonic()
    out, err = proc.communicate(timeout=120)
    return proc.returncode, time.monotonic() - began, out, err


@pytest.mark.slow
def test_bad_cluster_addresses_end_in_one_line_within_10_s(built_tpcc_sqlite: Path, tmp_path: Path,
                                                           not_dask: tuple[int, int]) -> None:
    db = copy_of(built_tpcc_sqlite, tmp_path)
    results = tmp_path / "results.db"
    port, (talker, silent) = free_port(), not_dask
    cases = {  # address: what the line says
        f"tcp://alice:{SECRET}@127.0.0.1:{port}": f"give tcp://127.0.0.1:{port} (the user info",
        f"alice:{SECRET}@127.0.0.1:{port}": "carries no user or password",
        f"tcp://127.0.0.1:{port}": f"cannot reach a Dask scheduler at tcp://127.0.0.1:{port} (connection refused",
        f"foo://127.0.0.1:{port}": "unknown scheme 'foo'",
        "garbage": "'garbage' is not a Dask scheduler's address",
        "tcp://127.0.0.1:99999": "is not a Dask scheduler's address",
        f"tcp://127.0.0.1:{talker}": "answers, but not as a Dask scheduler",
        f"tcp://127.0.0.1:{silent}": "answers, but not as a Dask scheduler (no answer)",
    }
    with ThreadPoolExecutor(4) as pool:
        outcomes = dict(zip(cases, pool.map(
            lambda address: cli_run(["--db", db, "--results", f"sqlite:///{results}", "--cluster", address],
                                    tmp_path), cases)))
        # the same start, refused without --cluster, under the same load
        start = max(pool.map(lambda _: cli_run(["--db", db, "--think", "nonsense"], tmp_path)[1], range(2)))
    for address, (code, took, out, err) in outcomes.items():
        where = f"{address}: exit {code} after {took:.1f} s (start alone {start:.1f} s)\n{out}{err}"
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and took < WITHIN_S + max(0.0, start - 1.0), where
        assert len(lines) == 1 and lines[0].startswith("tpsbench: error: ") and cases[address] in lines[0], where
        assert SECRET not in out + err and "Traceback" not in out + err, where
    assert not results.exists()  # refused before the results store was even opened


@pytest.mark.slow
def test_a_sqlite_file_relative_to_this_folder_is_refused_for_a_dask_run(built_tpcc_sqlite: Path,
                                                                         tmp_path: Path) -> None:
    copy_of(built_tpcc_sqlite, tmp_path)
    results = tmp_path / "results.db"
    for url in ("sqlite:///tpcc.db", "sqlite:///./tpcc.db"):
        code, took, out, err = cli_run(["--db", url, "--results", f"sqlite:///{results}",
                                        "--cluster", f"tcp://127.0.0.1:{free_port()}"], tmp_path)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and "Traceback" not in out + err, (url, out, err)
        assert "is named relative to this folder" in lines[0] and "absolute path" in lines[0], lines
    assert not results.exists()
