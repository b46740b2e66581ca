"""``--cache``: the fits-in-memory line, and cold steps on servers of our own.

Cold runs restart their server, so they run on PRIVATE instances made here (a
PostgreSQL cluster on port 5441 and a mariadbd on 3307, removed afterwards, also when a
test fails): the shared servers on 5432 and 3306 serve other tests meanwhile. What a
cold step must show: the buffer pool starts empty (its first interval's hit ratio is
below a warm run's), the restart is an outage stored before the step and outside its
steady window, the honesty check still matches.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pymysql
import pytest
from conftest import copy_of, unavailable

from tpsbench.commands.build import build
from tpsbench.commands.run import RunConfig, RunRecord, run
from tpsbench.core.campaign import load_campaign
from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.memory import MemoryFit, cgroup_memory_limit, human_size
from tpsbench.results.schema import BEFORE_STEP
from tpsbench.results.store import ResultsStore

PG_PORT, MARIADB_PORT = 5441, 3307
STEP = {"users": [2], "rampup_s": 1.0, "duration_s": 2.0, "interval_s": 1.0}


def _root(what: str) -> None:
    if os.geteuid() != 0:
        unavailable(what, "needs root (restarts a server, drops the page cache)")


def _wait_answers(connect: Callable[[], object], what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            connect()
            return
        except Exception as exc:  # not up yet
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not answer within {seconds:.0f} s: {exc}") from exc
            time.sleep(0.2)


@pytest.fixture(scope="module")
def private_pg() -> Iterator[str]:
    """A PostgreSQL cluster of our own on port 5441, dropped afterwards."""
    _root("a private PostgreSQL cluster")
    if not shutil.which("pg_createcluster"):
        unavailable("pg_createcluster", "Debian's postgresql-common is not installed")
    version = max(p.name for p in Path("/usr/lib/postgresql").iterdir())
    name = "tpsb_cold"
    subprocess.run(["pg_dropcluster", "--stop", version, name], capture_output=True, check=False)  # a leftover
    folder = f"/tmp/tpsb_cold_{uuid.uuid4().hex[:8]}"
    try:
        subprocess.run(["pg_createcluster", version, name, "-p", str(PG_PORT), "-d", folder, "--", "--auth=trust"],
                       capture_output=True, check=True, timeout=120)
        subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, name, "start"], capture_output=True,
                       check=True, timeout=120)
        yield f"postgresql://postgres@127.0.0.1:{PG_PORT}/tpsb_cold"
    finally:
        subprocess.run(["pg_dropcluster", "--stop", version, name], capture_output=True, check=False, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def private_mariadb() -> Iterator[str]:
    """A mariadbd of our own on port 3307 in a temporary data directory, stopped and removed afterwards."""
    _root("a private MariaDB server")
    if not (shutil.which("mariadb-install-db") and shutil.which("mariadbd")):
        unavailable("mariadb-install-db and mariadbd", "the MariaDB server package is not installed")
    folder = Path(tempfile.mkdtemp(prefix="tpsb_cold_mdb_", dir="/tmp"))
    pid_file = folder / "mdb.pid"
    try:
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={folder / 'data'}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       capture_output=True, check=True, timeout=120)
        subprocess.Popen([shutil.which("mariadbd") or "mariadbd", "--no-defaults", f"--datadir={folder / 'data'}",
                          f"--port={MARIADB_PORT}", "--bind-address=127.0.0.1", f"--socket={folder / 'mdb.sock'}",
                          f"--pid-file={pid_file}", "--user=root", f"--log-error={folder / 'err.log'}",
                          "--innodb-buffer-pool-size=64M"],
                         cwd=folder, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        _wait_answers(lambda: pymysql.connect(host="127.0.0.1", port=MARIADB_PORT, user="root").close(),
                      "the private mariadbd")
        yield f"mysql://root@127.0.0.1:{MARIADB_PORT}/tpsb_cold"
    finally:
        _stop_mariadb(pid_file)
        shutil.rmtree(folder, ignore_errors=True)


def _stop_mariadb(pid_file: Path) -> None:
    """SIGTERM to the server in the pid file (a cold run restarts it under a new pid)."""
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 60
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)  # ours when the fixture started it
        except ChildProcessError:
            pass
        time.sleep(0.2)


def _run(url: str, results: str, cache: str, lines: list[str] | None = None, users: list[int] | None = None
         ) -> RunRecord:
    config = RunConfig(workload="sysbench", url=url, results_url=results, cache=cache, seed=1,
                       **{**STEP, **({"users": users} if users else {})})  # type: ignore[arg-type]  # STEP's values are RunConfig's step fields, each of its own type (the dict is typed by their union)
    return run(config, live=(lines.append if lines is not None else None))


def _built(url: str, tmp_path: Path) -> tuple[str, str]:
    """The URL with sysbench built in its database, and a results store of the test's own."""
    build("sysbench", 1, url)
    return url, f"sqlite:///{tmp_path / 'results.db'}"


def _hit_pct(store: ResultsStore, run_id: int, step: int = 1, interval: int | None = 0) -> float:
    return store.load_run(run_id).readings(step, interval)["database"]["buffer_hit_pct"]


@pytest.mark.slow
@pytest.mark.parametrize("server", ["private_pg", "private_mariadb"])
def test_cold_steps_start_with_an_empty_buffer_pool(server: str, request: pytest.FixtureRequest,
                                                    tmp_path: Path) -> None:
    url, results = _built(request.getfixturevalue(server), tmp_path)
    warm = _run(url, results, "warm", users=[2, 2])  # its first step warms the pool for its second
    lines: list[str] = []
    cold = _run(url, results, "cold", lines, users=[2, 2])
    store = warm.store
    said = [line for line in lines if line.startswith("cache cold:")]
    assert [line.endswith(f"before step {n}") for n, line in enumerate(said, start=1)] == [True, True], lines
    assert all("page cache dropped, server restarted in " in line for line in said), said
    assert not any("fits in" in line for line in lines)  # cold: the line is not for this run
    for step in (1, 2):
        assert _hit_pct(store, cold.run_id, step) < _hit_pct(store, warm.run_id, 2), (server, step)
        data = store.load_run(cold.run_id)
        before = data.readings(step, BEFORE_STEP)["outage"]
        assert before["down_s"] > 0 and before["outages"] == 1
        assert data.readings(step)["outage"]["down_s"] == 0.0  # not in the steady window
        first = min(i.t_start for i in data.intervals if i.step == step)
        assert before["first_at"] + before["down_s"] <= first  # before the step's first interval
    # no connection of the driver survived a restart: none was lost, none failed
    assert [(i.errors, i.reconnects) for i in data.intervals if (i.errors, i.reconnects) != (0, 0)] == []
    assert cold.status == "completed" and cold.honesty["match"] is True, cold.honesty
    assert store.load_run(cold.run_id).run.config["cache"] == "cold"


@pytest.mark.slow
@pytest.mark.parametrize("server", ["pg_url", "mysql_url"])
def test_fits_in_memory_line_unless_a_cached_run_is_the_point(server: str, request: pytest.FixtureRequest,
                                                              tmp_path: Path) -> None:
    url, results = _built(request.getfixturevalue(server), tmp_path)
    lines: list[str] = []
    warm = _run(url, results, "warm", lines)
    fits = [line for line in lines if "fits in" in line]
    assert len(fits) == 1 and fits[0].startswith("the whole database, ") and \
        fits[0].endswith("buffer pool: reads will not reach the storage"), lines
    memory = warm.store.load_run(warm.run_id).run.config["memory"]
    assert memory["fits"] == "buffer_pool" and 0 < memory["database_bytes"] <= memory["buffer_pool_bytes"]
    assert memory["mem_total_bytes"] > 0 and memory["mem_available_bytes"] > 0  # a server on this host
    assert human_size(memory["database_bytes"]) in fits[0]
    quiet: list[str] = []
    cached = _run(url, results, "cached", quiet)
    assert not any("fits in" in line for line in quiet), quiet
    assert cached.store.load_run(cached.run_id).run.config["cache"] == "cached"


def test_fit_wording_for_each_place() -> None:
    gib = 1 << 30
    assert MemoryFit(int(1.1 * gib), 128 << 20, 24 * gib, 23 * gib, None, "page_cache").line() == (
        "the whole database, 1.1 GiB, fits in the 23 GiB of this host's page cache: reads will not reach the storage")
    assert "fits in the 2.0 GiB memory limit (cgroup) of the server's processes" in \
        MemoryFit(gib, 0, 24 * gib, 23 * gib, 2 * gib, "cgroup").line()
    assert MemoryFit(5 * gib, gib, 24 * gib, 23 * gib, 2 * gib, "").line() == ""
    assert cgroup_memory_limit(os.getpid(), root="/nonexistent") is None


def _cli(args: list[str], cwd: Path, prefix: list[str] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, "python", "-m", "tpsbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.slow  # a run: the quick lane keeps the remote server's
def test_cold_without_root_runs_warm_and_says_so_once(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    """A real non-root process: ``unshare --user`` runs the CLI as the overflow user
    (nobody, 65534) in a user namespace of its own. (setpriv --reuid=nobody cannot run
    the interpreter here: it lives under /root, which is 0700.)"""
    probe = subprocess.run(["unshare", "--user", "id", "-u"], capture_output=True, text=True, check=False)
    if probe.returncode or probe.stdout.strip() == "0":
        unavailable("a user namespace (unshare --user)", probe.stderr or "it runs as root")
    url = copy_of(built_tpcc_sqlite, tmp_path)
    done = _cli(["run", "tpcc", "--db", url, "--users", "1", "--rampup", "1s", "--duration", "2s", "--interval",
                 "1s", "--results", f"sqlite:///{tmp_path / 'r.db'}", "--cache", "cold"], tmp_path,
                ["unshare", "--user"])
    said = [line for line in done.stderr.splitlines() if "--cache cold" in line]
    assert said == ["--cache cold: not root, so the page cache and the server's buffer pool stay warm"], done.stderr
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert not any(line.startswith("cache cold:") for line in done.stderr.splitlines())  # nothing emptied
    (stored,) = ResultsStore(f"sqlite:///{tmp_path / 'r.db'}").list_runs()
    assert stored.status == "completed" and stored.config["cache"] == "warm"


def test_cold_on_a_remote_server_runs_warm_and_says_so_once(pg_url: str, tmp_path: Path) -> None:
    """127.1 is this host's loopback to the resolver but not to tpsbench, which takes it for
    another host: what a server elsewhere gets. Nothing is restarted or dropped."""
    remote = pg_url.replace("@127.0.0.1:", "@127.1:")
    assert remote != pg_url
    build("sysbench", 1, remote)
    lines: list[str] = []
    record = _run(remote, f"sqlite:///{tmp_path / 'r.db'}", "cold", lines)
    said = [line for line in lines if "cache cold" in line]
    assert said == ["--cache cold: the server is not on this host, so the page cache and the server's buffer pool"
                    " stay warm"], lines
    assert record.status == "completed" and record.honesty["match"] is True
    assert record.store.load_run(record.run_id).run.config["cache"] == "warm"


def test_an_unknown_cache_mode_is_refused(tmp_path: Path) -> None:
    done = _cli(["run", "sysbench", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--cache", "tepid"], tmp_path)
    assert done.returncode == 2 and "'tepid' is not one of 'cold', 'warm', 'cached'" in done.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_campaign_passes_its_cache_mode_on(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    body = 'workload = "tpcc"\nscale = 1\n{}[[target]]\ndb = "sqlite:///a.db"\n'
    path.write_text(body.format('cache = "cold"\n'))
    assert load_campaign(path).cache == "cold"
    path.write_text(body.format(""))
    assert load_campaign(path).cache == "warm"
    path.write_text(body.format('cache = "frozen"\n'))
    with pytest.raises(TpsbenchError, match=r"c.toml: cache must be one of cold, warm, cached, not 'frozen'$"):
        load_campaign(path)
