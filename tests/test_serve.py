"""``tpsbench serve`` through the real CLI: a campaign started by another process is
followed live in Chromium (its chart gains points, its step marker moves from the warm-up,
named as such, to each step, its end shows the report's figures), with every request off
127.0.0.1 stopped; what users typed shows as text; the store is never written (every page
read after the run leaves its file as it was); and the refusals are one line each.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from conftest import cli_in_process, copy_of, unavailable
from test_html_report import CHROMIUM, _browser  # Debian's chromium, or skip (fail under CI=true)

from tpsbench.results.store import ResultsStore

EVIL = "<script>alert(1)</script>"
ENV = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tpsbench", "serve", *args], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.status, answer.read().decode()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """An empty results store and ``tpsbench serve`` on it: (store URL, base address)."""
    results = f"sqlite:///{tmp_path / 'results.db'}"
    ResultsStore(results)  # the tables, so that the viewer starts before the first run
    port = _free_port()
    server = _serve("--results", results, "--port", str(port), cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(base + "/")
                break
            except OSError:
                assert server.poll() is None, server.communicate()
                assert time.monotonic() < deadline, "tpsbench serve did not answer in 60 s"
                time.sleep(0.2)
        yield results, base
    finally:
        server.terminate()
        server.communicate(timeout=30)


def _watch(tab: Any) -> dict[str, Any]:
    """What the run's page shows now."""
    return tab.evaluate("""() => {
        const current = document.querySelector('#chart-tps .marker.current');
        return {points: Number(document.getElementById('chart-tps').dataset.points),
                step: document.getElementById('step').dataset.step || null,
                where: document.getElementById('step').textContent,
                labels: [...document.querySelectorAll('#chart-tps text.tick')].map((t) => t.textContent),
                marker: current ? Number(current.getAttribute('x1')) : null,
                status: document.getElementById('status').textContent,
                left: document.getElementById('left').textContent,
                ended: document.body.dataset.ended === '1'};
    }""")


@pytest.mark.slow
def test_a_campaign_from_another_process_is_followed_live(served: tuple[str, str], tmp_path: Path,
                                                     built_tpcc_sqlite: Path) -> None:
    results, base = served
    sync_playwright = _browser(unavailable)
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
        except Exception as exc:  # noqa: BLE001 - whatever keeps the browser from starting here
            unavailable("Chromium under Playwright", exc)
        run = None
        try:
            tab = browser.new_page()
            blocked: list[str] = []
            problems: list[str] = []
            dialogs: list[str] = []

            def only_local(route: Any) -> None:
                if urlparse(route.request.url).hostname == "127.0.0.1":
                    route.continue_()
                else:
                    blocked.append(route.request.url)
                    route.abort()

            tab.route("**/*", only_local)
            tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.goto(base + "/")
            (tmp_path / "live.toml").write_text(
                'name = "live"\nworkload = "tpcc"\nscale = 1\nusers = [1, 2]\nrampup = "1s"\nduration = "3s"\n'
                f'interval = "1s"\n[options]\nwarmup = "2s"\n'
                f'[[target]]\ndb = "{copy_of(built_tpcc_sqlite, tmp_path)}"\n'
                f'storage = {json.dumps(EVIL)}\n')
            run = subprocess.Popen([sys.executable, "-m", "tpsbench", "campaign", "live.toml", "--results", results],
                                   cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            tab.wait_for_selector("#campaigns tbody tr.running", timeout=120_000)
            row = tab.wait_for_selector("#runs tbody tr.running", timeout=120_000)
            run_id = int(row.get_attribute("data-run"))
            assert row.query_selector("td:nth-child(3)").text_content() == EVIL
            assert row.query_selector("td:nth-child(8)").text_content() == "1"  # the campaign's
            tab.goto(f"{base}/run/{run_id}")
            seen = []
            deadline = time.monotonic() + 180
            while not (now := _watch(tab))["ended"]:
                seen.append(now)
                assert time.monotonic() < deadline, seen[-3:]
                tab.wait_for_timeout(250)
            _, err = run.communicate(timeout=120)
            assert run.returncode == 0, err
            steps = {int(r.get_attribute("data-step")): (float(r.get_attribute("data-tps")),
                                                         r.query_selector("td:nth-child(3)").text_content())
                     for r in tab.query_selector_all("#steps tbody tr")}
            storage_shown = tab.text_content("#storage")
            final = _watch(tab)
            tab.goto(f"{base}/report/run/{run_id}")
            report_title = tab.title()
        finally:
            if run is not None and run.poll() is None:
                run.kill()
                run.communicate()
            browser.close()
    live = [s for s in seen if s["status"] == "running"]
    growing = [s["points"] for s in live if s["points"]]
    assert len(set(growing)) >= 3 and growing == sorted(growing), seen  # points came as intervals were stored
    markers = {s["step"]: s["marker"] for s in live if s["step"]}
    assert set(markers) == {"0", "1", "2"} and markers["2"] > markers["1"] > markers["0"], seen  # it moved on
    # the warm-up (step 0) is named as the warm-up, never as a step
    assert any(s["where"].startswith("the warm-up (1 user)") for s in live if s["step"] == "0"), seen
    assert "warm-up: 1 user" in final["labels"] and not any(label.startswith("step 0") for label in final["labels"])
    assert any(s["left"] not in ("?", "0 s") for s in live), seen
    assert final["status"] == "completed" and final["points"] >= growing[-1]
    assert dialogs == [] and problems == [] and blocked == []
    assert storage_shown == EVIL
    assert report_title == f"tpsbench run {run_id}"
    report = cli_in_process("report", str(run_id), "--results", results, "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    expected = {s["step"]: s["summary"]["tps"] for s in json.loads(report.stdout)["runs"][0]["steps"]}
    assert set(steps) == set(expected) == {1, 2}
    for step, tps in expected.items():
        assert steps[step][0] == pytest.approx(tps, rel=1e-12) and steps[step][1] == f"{tps:.1f}"
    _read_only_pages(tmp_path / "results.db", base, run_id)


def _read_only_pages(store: Path, base: str, run_id: int) -> None:
    """Every page and a finished run's events answer, and the store is unchanged after."""
    before = store.read_bytes()
    for path in ("/", f"/run/{run_id}", f"/report/run/{run_id}", f"/compare?a={run_id}&b={run_id}"):
        assert _get(base + path)[0] == 200, path
    with urllib.request.urlopen(f"{base}/events/run/{run_id}", timeout=30) as events:
        text = events.read().decode()  # a finished run's stream ends by itself
    assert "event: end" in text and '"tps"' in text
    with pytest.raises(urllib.error.HTTPError) as missing:
        _get(base + "/report/run/99")
    assert missing.value.code == 404 and "has no run 99" in missing.value.read().decode()
    assert store.read_bytes() == before


def _refused(args: list[str], cwd: Path) -> str:
    proc = _serve(*args, cwd=cwd)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and out == "" and len(err.splitlines()) == 1, (proc.returncode, out, err)
    return err


def test_refusals_are_one_line(tmp_path: Path, sqlite_url: str) -> None:
    ResultsStore(sqlite_url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert "the port is in use" in _refused(["--results", sqlite_url, "--port", str(port)], tmp_path)
    assert "--allow-remote" in _refused(["--results", sqlite_url, "--host", "0.0.0.0"], tmp_path)
    # a label past DNS's 63 characters fails as a UnicodeError, which has no strerror
    assert "no such address" in _refused(["--results", sqlite_url, "--host", "a" * 70], tmp_path)
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database\n" * 100)
    assert "cannot open" in _refused(["--results", f"sqlite:///{garbage}"], tmp_path)
    assert "has no runs yet" in _refused(["--results", f"sqlite:///{tmp_path / 'none.db'}"], tmp_path)
    assert not (tmp_path / "none.db").exists()


def test_without_the_live_extra_it_says_how_to_get_it(sqlite_url: str, tmp_path: Path) -> None:
    ResultsStore(sqlite_url)
    hidden = "import sys; sys.modules.update(uvicorn=None, sse_starlette=None); from tpsbench.cli.main import main; "
    proc = subprocess.run([sys.executable, "-c", hidden + f"main(['serve', '--results', {sqlite_url!r}])"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr == ("tpsbench: error: tpsbench serve needs the live extra: pip install 'tpsbench[live]' "
                           "(uvicorn, sse_starlette missing)\n")


def test_the_viewers_connection_cannot_write(sqlite_url: str) -> None:
    import sqlalchemy as sa

    from tpsbench.results.live import ReadOnlyStore

    ResultsStore(sqlite_url)
    viewer = ReadOnlyStore(sqlite_url)
    assert viewer.list_runs() == []
    with pytest.raises(sa.exc.OperationalError, match="readonly"), viewer.engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE written (a INTEGER)")


def test_a_campaign_is_listed_and_has_its_page(served: tuple[str, str]) -> None:
    results, base = served
    campaign = ResultsStore(results).start_campaign(EVIL, {"workload": "tpcc"})
    status, page = _get(f"{base}/campaign/{campaign}")
    assert status == 200 and EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    with urllib.request.urlopen(f"{base}/events/listing", timeout=30) as events:
        line = ""
        while not line.startswith("data:"):
            line = events.readline().decode()
    listed = json.loads(line.removeprefix("data:"))["campaigns"]
    assert [(c["id"], c["name"], c["status"], c["runs"]) for c in listed] == [(campaign, EVIL, "running", [])]
