"""--metrics-addr: a real Prometheus scrapes a PostgreSQL TPC-C run, and PromQL over what it
stored gives the results store's per-step TPS and p95; bad addresses are refused in one line."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_in_process, copy_of, unavailable
from private_servers import free_port

from tpsbench.report.metrics import BUCKETS_S
from tpsbench.results.store import ResultsStore

PROMETHEUS = shutil.which("prometheus")


def tpsbench(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpsbench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, check=False)


def query(api: str, promql: str, at: float) -> list[dict[str, Any]]:
    url = f"{api}/api/v1/query?" + urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]["result"]


def scalar(api: str, promql: str, at: float) -> float:
    result = query(api, promql, at)
    assert len(result) == 1, (promql, result)
    return float(result[0]["value"][1])


def start_prometheus(folder: Path, target_port: int) -> tuple[subprocess.Popen[bytes], str]:
    if PROMETHEUS is None:
        unavailable("Prometheus (Debian's prometheus package)")
    pytest.importorskip("prometheus_client") if os.environ.get("CI") != "true" else __import__("prometheus_client")
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
                      f"  - job_name: tpsbench\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n")
    port = free_port()
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={folder / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    api = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"{api}/-/ready", timeout=1):
                return proc, api
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail("Prometheus did not become ready within 20 s")


def assert_steps_as_stored(api: str, run: Any) -> None:
    """PromQL at each steady window's two ends gives the store's TPS and, within its bucket, p95."""
    number = str(run.run.id)
    for step in run.steps:
        steady = [i for i in run.intervals if i.step == step.step and i.steady]
        t0, t1 = min(i.t_start for i in steady) + 0.001, max(i.t_end for i in steady) + 0.001
        commits = f'sum(tpsbench_transactions_total{{outcome="commits",run="{number}"}})'
        tps = (scalar(api, commits, t1) - scalar(api, commits, t0)) / (t1 - t0)
        assert tps == pytest.approx(step.summary.tps, rel=0.02), (number, step.step, tps, step.summary.tps)
        buckets = f'tpsbench_latency_seconds_bucket{{run="{number}"}}'
        p95 = scalar(api, f"histogram_quantile(0.95, sum by (le) ({buckets} @ {t1:.3f} - {buckets} @ {t0:.3f}))", t1)
        stored = step.summary.latency.p95 / 1000.0
        # the store's histogram keeps 3 significant digits: a p95 within 0.1 % of a bucket's
        # bound (4.999 ms stored for latencies just over 5 ms) may lie in the bucket beyond it
        upper = next(b for b in BUCKETS_S if b >= stored * 1.001)
        lower = max([0.0, *(b for b in BUCKETS_S if b < stored / 1.001)])
        assert lower <= p95 <= upper, (number, step.step, p95, stored, lower, upper)


@pytest.mark.slow
@pytest.mark.postgresql
def test_prometheus_scrapes_per_step_tps_and_p95_as_the_store_has_them(tpcc_pg_url: str, tmp_path: Path) -> None:
    pg_url = tpcc_pg_url  # TPC-C scale 1, the session's build copied
    endpoint = free_port()
    prometheus, api = start_prometheus(tmp_path, endpoint)
    try:
        done = tpsbench("run", "tpcc", "--db", pg_url, "--users", "1,4", "--rampup", "1s", "--duration", "3s",
                        "--interval", "1s", "--metrics-addr", str(endpoint), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert_steps_as_stored(api, ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}").load_run(1))
        limited = query(api, 'tpsbench_limited_by{run="1"}', time.time())
        assert {r["metric"]["step"] for r in limited} == {"1", "2"}
        assert all("password" not in json.dumps(r["metric"]) for r in limited)
    finally:
        prometheus.terminate()
        prometheus.wait(10)


@pytest.mark.slow
def test_a_concurrent_campaign_serves_every_run_from_one_endpoint(tmp_path: Path, built_tpcc_sqlite: Path) -> None:
    targets = "".join(f'[[target]]\ndb = "{copy_of(built_tpcc_sqlite, tmp_path, f"{name}.db")}"\nstorage = "{name}"\n'
                      for name in ("hdd", "ssd"))
    (tmp_path / "c.toml").write_text('name = "pools"\nworkload = "tpcc"\nscale = 1\nusers = [1, 2]\n'
                                     'rampup = "1s"\nduration = "2s"\ninterval = "1s"\n' + targets)
    endpoint = free_port()
    prometheus, api = start_prometheus(tmp_path, endpoint)
    try:
        done = tpsbench("campaign", "c.toml", "--concurrent", "--metrics-addr", f"127.0.0.1:{endpoint}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        store = ResultsStore(f"sqlite:///{tmp_path / 'tpsbench-results.db'}")
        runs = store.campaign_runs(1)
        assert len(runs) == 2
        for run in runs:
            assert_steps_as_stored(api, store.load_run(run.id))
        labels = query(api, 'count by (run, storage, campaign) (tpsbench_transactions_total)', time.time())
        assert {(r["metric"]["storage"], r["metric"]["campaign"]) for r in labels} == {("hdd", "1"), ("ssd", "1")}
    finally:
        prometheus.terminate()
        prometheus.wait(10)


def test_an_address_in_use_another_host_or_a_lone_allow_remote_is_refused(tmp_path: Path,
                                                                           built_tpcc_sqlite: Path) -> None:
    pytest.importorskip("prometheus_client") if os.environ.get("CI") != "true" else __import__("prometheus_client")
    results = tmp_path / "tpsbench-results.db"
    base = ("run", "tpcc", "--db", copy_of(built_tpcc_sqlite, tmp_path), "--users", "1", "--duration", "1s")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = {
            f"127.0.0.1:{port}": "is the port in use",
            "0.0.0.0:9999": "--allow-remote",
            "127.0.0.1:70000": "port of 1-65535",
            "nosuchhost.invalid:9999": "no such host",
        }
        for address, said in cases.items():
            done = cli_in_process(*base, "--metrics-addr", address, cwd=tmp_path)  # refused before a process starts
            assert done.returncode != 0
            assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    lone = cli_in_process(*base, "--allow-remote", cwd=tmp_path)
    assert lone.returncode != 0 and "give --metrics-addr too" in lone.stderr, lone.stderr
    assert not results.exists()


def interval(step: int, number: int, commits: int, latencies_us: list[int]) -> Any:
    from tpsbench.measure.histogram import LatencyHistogram
    from tpsbench.measure.reports import IntervalReport, TxnReport

    hist = LatencyHistogram()
    hist.record_many(latencies_us)
    return IntervalReport(step=step, interval=number, t_start=1.0e9 + number, t_end=1.0e9 + number + 1,
                          steady=True, txns={"pay": TxnReport(commits=commits, histogram=hist.encode())})


def test_every_interval_reaches_a_scrape_in_order_with_its_own_end_as_its_time() -> None:
    pytest.importorskip("prometheus_client") if os.environ.get("CI") != "true" else __import__("prometheus_client")
    from tpsbench.report.metrics import MetricsEndpoint

    endpoint = MetricsEndpoint("127.0.0.1:9")  # checked, never listening
    run = endpoint.add(7, None, "postgresql://u:secret@h/db", "ssd")
    run.interval(interval(1, 1, 2, [150, 900]), users=1)
    run.interval(interval(1, 2, 1, [30_000]), users=1)
    run.step_ended(1, "storage", "sda")

    def commits_and_buckets() -> tuple[float, float, dict[str, float]]:
        families = {f.name: f for f in endpoint.collect()}
        sample = next(s for s in families["tpsbench_transactions"].samples if s.labels["outcome"] == "commits")
        assert "secret" not in str(families)
        buckets = {s.labels["le"]: s.value for s in families["tpsbench_latency_seconds"].samples
                   if s.name.endswith("_bucket")}
        return sample.value, sample.timestamp, buckets

    first = commits_and_buckets()
    assert first[:2] == (2, 1.0e9 + 2) and first[2]["0.00025"] == 1 and first[2]["0.001"] == 2
    second = commits_and_buckets()
    assert second[:2] == (3, 1.0e9 + 3) and second[2]["0.025"] == 2 and second[2]["0.05"] == 3
    families = {f.name: f for f in endpoint.collect()}  # the verdict, then the same again
    assert [s.labels["kind"] for s in families["tpsbench_limited_by"].samples] == ["storage"]
    assert commits_and_buckets()[:2] == (3, 1.0e9 + 3)


def test_the_grafana_dashboard_asks_only_for_what_the_endpoint_serves() -> None:
    import re

    pytest.importorskip("prometheus_client") if os.environ.get("CI") != "true" else __import__("prometheus_client")
    from tpsbench.report.metrics import MetricsEndpoint

    endpoint = MetricsEndpoint("127.0.0.1:9")
    run = endpoint.add(1, 2, "sqlite:///x.db", "ssd")
    report = interval(1, 1, 3, [500])
    report.observations = {"disk_io": {"sda.util_pct": 50.0, "sda.r_s": 10.0, "sda.w_s": 5.0},
                           "host_cpu": {"user": 20.0, "driver": 3.0}}
    run.interval(report, users=4, offered=100.0)
    run.step_ended(1, "storage", "sda")
    for _ in range(2):
        families = list(endpoint.collect())
    served = {sample.name for family in families for sample in family.samples}
    dashboard = json.loads((Path(__file__).parent.parent / "docs" / "grafana" / "tpsbench-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    asked = {name for expr in exprs for name in re.findall(r"\btpsbench_[a-z_]+", expr)}
    assert asked and asked <= served, asked - served
    assert {"tpsbench_transactions_total", "tpsbench_latency_seconds_bucket", "tpsbench_limited_by"} <= asked


def test_without_the_live_extra_metrics_addr_says_how_to_get_it(tmp_path: Path) -> None:
    hidden = "import sys; sys.modules.update(prometheus_client=None); from tpsbench.cli.main import main; "
    proc = subprocess.run([sys.executable, "-c", hidden + "main(['run', 'tpcc', '--metrics-addr', '9464'])"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == ["tpsbench: error: --metrics-addr needs prometheus-client, which is "
                                                "not installed: pip install 'tpsbench[live]'"]
    assert not (tmp_path / "tpsbench-results.db").exists()
