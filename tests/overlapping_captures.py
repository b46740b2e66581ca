"""Two live captures of one server at overlapping times, for test_capture_mysql and test_capture_pg.

Why real processes: the damage the lock prevents came from two tpsbench captures, each
saving and restoring the server's settings; the first runs as a user would start it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def capture_args(url: str, duration: str, trace: Path) -> list[str]:
    return [sys.executable, "-m", "tpsbench", "capture", "--db", url, "--duration", duration, "-o", str(trace),
            "--allow-settings"]


def second_capture(first: str, second: str, tmp_path: Path,
                   holder: Callable[[], object]) -> tuple[subprocess.CompletedProcess[str], object]:
    """A 1 s capture of ``second`` started while a 4 s capture of ``first`` has its settings
    in place (it ends first, so that without the lock the server ends as it began), and what
    ``holder`` said meanwhile."""
    env = dict(os.environ, PYTHONPATH=SRC)
    running = subprocess.Popen(capture_args(first, "4s", tmp_path / "first.trace"), env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while "meanwhile" not in (line := running.stderr.readline()):  # type: ignore[union-attr]
            assert line, "the first capture ended before it changed the settings"
        held = holder()
        refused = subprocess.run(capture_args(second, "1s", tmp_path / "second.trace"), env=env, text=True,
                                 capture_output=True, timeout=60)
    finally:
        running.communicate(timeout=60)
    return refused, held


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused capture says, checked to be its only output and a failure."""
    lines = done.stderr.splitlines()
    assert done.returncode != 0 and len(lines) == 1 and not done.stdout, done.stderr
    assert "another tpsbench capture is running on this server" in lines[0], lines[0]
    return lines[0]
