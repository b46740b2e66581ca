"""Tests side by side (tests/side_by_side.py): an ``alone`` test overlaps no other test,
two tests ``exclusive`` of one name do not overlap each other, and the others do overlap,
in a small suite of timed tests run with pytest-xdist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUITE = '''
import json, os, time
import pytest

def timed(name, seconds):
    start = time.monotonic()
    time.sleep(seconds)
    with open(os.path.join(os.environ["SPANS"], name), "w") as f:
        json.dump([start, time.monotonic()], f)

@pytest.mark.parametrize("n", range(8))
def test_beside(n):
    timed(f"beside{n}", 0.4)

@pytest.mark.alone
@pytest.mark.parametrize("n", range(2))
def test_alone(n):
    timed(f"alone{n}", 0.4)

@pytest.mark.exclusive("capture")
@pytest.mark.parametrize("n", range(3))
def test_exclusive(n):
    timed(f"exclusive{n}", 0.6)
'''


def test_alone_overlaps_no_other_exclusive_none_of_its_name_and_the_rest_run_side_by_side(tmp_path: Path) -> None:
    suite, spans = tmp_path / "suite", tmp_path / "spans"
    suite.mkdir()
    spans.mkdir()
    (suite / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                                       "pytest_plugins = ('side_by_side',)\n")
    (suite / "test_timed.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3", str(suite)],
                          cwd=suite, env={**env, "SPANS": str(spans)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    timed = {f.name: json.loads(f.read_text()) for f in spans.iterdir()}
    assert len(timed) == 13

    def overlap(a: str, b: str) -> bool:
        return timed[a][0] < timed[b][1] and timed[b][0] < timed[a][1]

    for alone in ("alone0", "alone1"):
        assert not [other for other in timed if other != alone and overlap(alone, other)], timed
    exclusive = [name for name in timed if name.startswith("exclusive")]
    assert not [(a, b) for a in exclusive for b in exclusive if a < b and overlap(a, b)], timed
    beside = [name for name in timed if name.startswith("beside")]
    assert any(overlap(a, b) for a in beside for b in beside if a < b), timed
