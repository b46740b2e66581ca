"""The HTML report: one page that opens with no network, from two real runs on SQLite.

Two short TPC-C runs are recorded once for the module (five user loads each, the two at
once, each `tpsbench run` on a copy of one database), one of them labelled
``<script>alert(1)</script>``; the page is checked as text (self-contained,
escaped, the store's figures in it) and then opened in headless Chromium with every
request but the page's own aborted: no console or page error, and each chart's box on
a screenshot has to be drawn, in the configurations' colours.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_of, unavailable

from tpsbench.measure.disk_io import DiskIo
from tpsbench.report import charts
from tpsbench.report.html import compare_table, devices_table, to_html
from tpsbench.results.records import RunData
from tpsbench.results.store import ResultsStore

pytestmark = pytest.mark.slow

EVIL = "<script>alert(1)</script>"
LABELS = ["nvme-ext4", EVIL]
USERS = [1, 2, 4, 6, 8]
STORAGE_FILE = f"""
[storage."nvme-ext4"]
drive_model = "Example NVMe 1TB"
interface = "NVMe PCIe 4.0 x4"

[storage."{EVIL}"]
notes = "<img src=x onerror=alert(2)>"
"""
CHROMIUM = "/usr/bin/chromium"


@dataclass
class Recorded:
    store: ResultsStore
    runs: list[RunData]
    page: str = field(repr=False)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, built_tpcc_sqlite: Path) -> Recorded:
    """Two real runs at once, a storage label each, and their page: together they take
    the time of one (each step's length is wall-clock time, whatever the CPU does)."""
    tmp = tmp_path_factory.mktemp("html")
    results = f"sqlite:///{tmp / 'results.db'}"
    (tmp / "storage.toml").write_text(STORAGE_FILE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    runs = [subprocess.Popen([sys.executable, "-m", "tpsbench", "run", "tpcc", "--db", copy_of(built_tpcc_sqlite, tmp,
                              f"tpcc{i}.db"), "--results", results, "--users", ",".join(map(str, USERS)),
                              "--rampup", "0.5s", "--duration", "1.5s", "--interval", "0.5s", "--think", "off",
                              "--storage", label, "--storage-file", str(tmp / "storage.toml")], cwd=tmp, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i, label in enumerate(LABELS)]
    for proc in runs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "completed; honesty check matches" in out, err
    store = ResultsStore(results)
    by_label = {r.storage: r.id for r in store.list_runs()}
    data = [store.load_run(by_label[label]) for label in LABELS]
    return Recorded(store, data, to_html(data, histograms=store.load_histogram, title="Two pools"))


def chart_keys(page: str) -> list[str]:
    return re.findall(r'<figure class="chart" id="chart-([^"]+)"', page)


def chart_of(page: str, key: str) -> str:
    found = re.search(rf'id="chart-{key}">.*?</figure>', page, flags=re.DOTALL)
    assert found is not None, key
    return found.group(0)


def test_the_page_fetches_nothing_and_runs_no_script(recorded: Recorded) -> None:
    page = recorded.page
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    remote = re.findall(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//[^"'\s>]*""", page, flags=re.IGNORECASE)
    assert remote == []
    assert not re.search(r"url\(\s*[\"']?\s*(?:https?:)?//|@import", page, flags=re.IGNORECASE)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    # several SVGs share one document: their ids (clip paths, markers) must not collide
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    for ref in set(re.findall(r'(?:href="#|url\(#)([^")]+)', page)):
        assert ref in ids, ref


def test_what_users_typed_shows_as_text(recorded: Recorded) -> None:
    page = recorded.page
    assert EVIL not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page  # the storage file's notes
    # the review table's block and the charts' legends carry the label, both escaped
    assert '<th scope="rowgroup" rowspan="' in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5


def test_the_store_figures_are_in_the_page(recorded: Recorded) -> None:
    page = recorded.page
    for data in recorded.runs:
        assert [s.users for s in data.steps] == USERS
        for step in data.steps:
            assert step.summary is not None
            assert f"<td>{step.summary.tps:.1f}</td>" in page  # formatted as the table formats it
        device = data.run.config["storage"]["detected"]["paths"][0]["devices"][0]["name"]
        assert f"<td>{device}</td>" in page
        for key, value in data.run.server.items():
            assert f'<th scope="row" class="text">{key}</th><td>{value}</td>' in page
    assert "<td>Example NVMe 1TB</td>" in page and "<td>NVMe PCIe 4.0 x4</td>" in page
    assert "<title>Two pools</title>" in page


def test_every_chart_is_in_the_page(recorded: Recorded) -> None:
    keys = chart_keys(recorded.page)
    expected = ["tps", "latency", "time-0", "time-1", "dist-0", "dist-1"]
    if any(o.observer == DiskIo.name for data in recorded.runs for o in data.observations):
        expected.append("io")
    assert set(expected) <= set(keys)
    for key in keys:
        assert chart_of(recorded.page, key).count("<svg") == 1
    # the percentile curves have every transaction type and all of them together
    dist = chart_of(recorded.page, "dist-0")
    for name in ["all transactions", "new_order", "payment", "order_status", "delivery", "stock_level"]:
        assert f">{name}</text>" in dist


def _stub_usl(monkeypatch: pytest.MonkeyPatch, fit_usl: Callable[..., Any] | None) -> None:
    """Stand in for tpsbench.report.usl: a module with ``fit_usl``, or none (None)."""
    module = None
    if fit_usl is not None:
        module = types.ModuleType("tpsbench.report.usl")
        module.fit_usl = fit_usl  # type: ignore[attr-defined]  # a module made here to stand in for report.usl: mypy sees a bare ModuleType
    monkeypatch.setitem(sys.modules, "tpsbench.report.usl", module)


@dataclass
class FakeFit:
    lam: float
    sigma: float = 0.0321
    kappa: float = 0.00456
    r2: float = 0.987
    n_max: float | None = 14.0
    peak_tps: float | None = 4321.5
    warnings: list[str] = field(default_factory=lambda: ["only 5 loads <few>"])

    def predict(self, users: float) -> float:
        return self.lam * users / (1 + self.sigma * (users - 1) + self.kappa * users * (users - 1))


def test_the_usl_fit_is_drawn_with_its_parameters(recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[float], list[float]]] = []

    def fit_usl(users: list[float], tps: list[float]) -> FakeFit:
        seen.append((list(users), list(tps)))
        return FakeFit(lam=tps[0])

    _stub_usl(monkeypatch, fit_usl)
    page = to_html(recorded.runs)
    assert seen == [(USERS, [s.summary.tps for s in data.steps]) for data in recorded.runs]  # type: ignore[union-attr]  # every step of a completed run has its summary
    assert "usl" in chart_keys(page)
    for cell in ["0.0321", "0.00456", "0.987", "14", "4321.5", "only 5 loads &lt;few&gt;"]:
        assert f"<td>{cell}</td>" in page
    assert not any(key.startswith("dist-") for key in chart_keys(page))  # no histograms given


def test_a_fit_that_fails_or_no_usl_module_leaves_the_rest(recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(users: list[float], tps: list[float]) -> FakeFit:
        raise ValueError("too few points")

    _stub_usl(monkeypatch, fails)
    page = to_html(recorded.runs)
    assert "usl" not in chart_keys(page) and "no fit (too few points)" in page
    assert {"tps", "latency", "time-0"} <= set(chart_keys(page))
    _stub_usl(monkeypatch, None)
    page = to_html(recorded.runs)
    assert 'id="usl"' not in page and 'href="#usl"' not in page
    assert {"tps", "latency", "time-0"} <= set(chart_keys(page))


def test_the_real_usl_module_fits_the_runs(recorded: Recorded) -> None:
    try:
        import tpsbench.report.usl  # noqa: F401 - needs scipy
    except ImportError as exc:
        unavailable("tpsbench.report.usl (needs scipy)", exc)
    assert "usl" in chart_keys(recorded.page)


def test_labels_are_drawn_as_typed(recorded: Recorded) -> None:
    """matplotlib reads "$...$" as math and leaves out legend labels that start with "_"."""
    labels = ["$5 drives $ pool", "_raid0"]
    (tps, *_) = charts.user_charts(recorded.runs, labels)
    assert ">$5 drives $ pool</text>" in tps.svg and ">_raid0</text>" in tps.svg


def test_settings_line_up_and_differences_are_marked() -> None:
    text = compare_table(["a", "b"], [{"x": 1, "y": {"z": [1, 2]}, "on": True}, {"x": 2, "y": {"z": [1, 2]}}])
    assert '<tr class="differs"><th scope="row" class="text">x</th><td>1</td><td>2</td></tr>' in text
    assert '<tr><th scope="row" class="text">y.z</th><td>1, 2</td><td>1, 2</td></tr>' in text
    assert '<tr class="differs"><th scope="row" class="text">on</th><td>yes</td><td></td></tr>' in text


def test_devices_show_what_they_are_made_of() -> None:
    disk = {"name": "sdb", "kind": "disk", "size_bytes": 2**40, "rotational": False, "below": []}
    md = {"name": "md0", "kind": "raid", "raid_level": "raid10", "chunk_bytes": 524288,
          "below": [disk, dict(disk, name="sdc")]}
    placement = {"path": "/data", "mount_point": "/data", "fs_type": "xfs", "source": "/dev/md0", "devices": [md]}
    text = devices_table(["pool", "far"], [{"paths": [placement]}, {"remote": True, "host": "db2"}])
    assert "<td>md0</td><td>raid</td>" in text and "<td>  └ sdc</td><td>disk</td><td>1,024.0 GiB</td>" in text
    assert "<td>raid10</td><td>512 KiB</td>" in text
    assert "model" not in text  # a column no device has is left out
    assert "far: the database is on another host (db2)" in text


# -- in a real browser --------------------------------------------------------------------
def _browser(require: Callable[[str, object], Any]) -> Any:
    if not Path(CHROMIUM).exists():
        require("Chromium", f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        require("Playwright", f"{exc} (pip install playwright)")
    return sync_playwright


def _pixels(png: bytes, box: dict[str, float]) -> tuple[float, float, int, set[tuple[int, int, int]]]:
    """In a box of a screenshot: the shares of pixels that are not white and that are
    coloured (not grey: axes and text are grey, lines are not), how many colours there are,
    and which."""
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(png)).convert("RGB")
    crop = image.crop((int(box["x"]), int(box["y"]), int(box["x"] + box["width"]), int(box["y"] + box["height"])))
    colours: list[tuple[int, tuple[int, int, int]]] = crop.getcolors(maxcolors=1 << 20) or []  # type: ignore[assignment]  # Pillow types getcolors() for every mode; an RGB image's pixels are 3-tuples
    total = crop.width * crop.height
    white = sum(n for n, c in colours if min(c) >= 250)
    coloured = sum(n for n, c in colours if max(c) - min(c) > 60)
    return 1 - white / total, coloured / total, len(colours), {c for _, c in colours}


def _near(colours: set[tuple[int, int, int]], hex_colour: str, tolerance: int = 12) -> bool:
    want = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return any(all(abs(a - b) <= tolerance for a, b in zip(c, want)) for c in colours)


def test_the_page_renders_offline_in_chromium(recorded: Recorded, tmp_path: Path,
                                             require: Callable[[str, object], Any]) -> None:
    sync_playwright = _browser(require)
    page_file = tmp_path / "report.html"
    page_file.write_text(recorded.page, encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text('<img src="http://192.0.2.1/x.png"><p>probe</p>', encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            problems: list[str] = []
            blocked: list[str] = []
            tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            allowed = {page_file.as_uri(), probe.as_uri()}

            def only_local(route: Any) -> None:
                if route.request.url in allowed:
                    route.continue_()
                else:
                    blocked.append(route.request.url)
                    route.abort()

            tab.route("**/*", only_local)
            tab.goto(probe.as_uri())  # the guard itself: a remote image is stopped and seen
            assert blocked == ["http://192.0.2.1/x.png"]
            blocked.clear()
            problems.clear()
            tab.goto(page_file.as_uri(), wait_until="load")
            png = tab.screenshot(full_page=True)
            boxes = {el.get_attribute("id"): el.query_selector("svg").bounding_box()
                     for el in tab.query_selector_all("figure.chart")}
            title = tab.title()
        finally:
            browser.close()
    assert problems == [] and blocked == []
    assert title == "Two pools"
    assert set(boxes) == {f"chart-{key}" for key in chart_keys(recorded.page)}
    for key, box in boxes.items():
        assert box is not None and box["width"] > 300 and box["height"] > 200, key
        drawn, coloured, distinct, colours = _pixels(png, box)
        assert drawn > 0.04 and coloured > 0.004 and distinct > 200, (key, drawn, coloured, distinct)
        if key.startswith("chart-time-"):  # one configuration, in its colour
            assert _near(colours, charts.colour(int(key.rsplit("-", 1)[1]))), key
        elif not key.startswith("chart-dist-"):  # a line in each configuration's colour
            assert _near(colours, charts.colour(0)) and _near(colours, charts.colour(1)), key
