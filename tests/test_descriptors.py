"""The driver raises its own soft limit on open files to the hard one, and its workers
start with it (tpsbench.engine.descriptors)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tpsbench.core.errors import TpsbenchError
from tpsbench.engine.descriptors import SPARE_DESCRIPTORS, refuse_descriptors

#: a process started with soft limit 256 and hard 4096, as a login shell may start it:
#: what its own limit and a spawned worker's are after plan_run's raise
PROBE = """
import multiprocessing as mp, resource
from tpsbench.engine.descriptors import raise_soft_limit

def soft(queue):
    queue.put(resource.getrlimit(resource.RLIMIT_NOFILE)[0])

if __name__ == "__main__":
    before = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    raised = raise_soft_limit()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=soft, args=(queue,))
    child.start()
    print(before, raised, resource.getrlimit(resource.RLIMIT_NOFILE)[0], queue.get(timeout=60))
    child.join()
"""


def test_the_soft_limit_is_raised_to_the_hard_one_and_workers_inherit_it(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROBE)  # a file: a spawned process imports its target from it
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py")], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 4096)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["256", "4096", "4096", "4096"]


def test_a_step_within_the_hard_limit_passes_and_one_beyond_is_refused() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on open files here to go beyond")
    room = hard - SPARE_DESCRIPTORS
    refuse_descriptors(2 * room, 2)  # exactly what two processes can hold
    with pytest.raises(TpsbenchError, match=rf"{room + 1:,} connections in one driver process.*is {hard:,}"):
        refuse_descriptors(2 * room + 1, 2)
