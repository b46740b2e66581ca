"""A run's figures as a Prometheus/OpenMetrics endpoint while it lasts (``--metrics-addr``).

Fed by the coordinator's merged intervals, never by the virtual users: each interval is
rendered once into metric families, and a scrape hands out what is rendered, costing the
hot path nothing. Every sample carries the time its interval ended, and each interval's
figures are served to at least one scrape before the next one's (a step's last steady
interval is followed within milliseconds by the stop's short tail), so Prometheus holds a
sample at both ends of every steady window: PromQL ``@`` them gives the results store's
figures. prometheus-client is optional (the ``live`` extra).
"""

from __future__ import annotations

import http.server
import ipaddress
import socket
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.redact import scrub_text
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.reports import ALL, IntervalReport

#: latency bucket bounds in seconds, from 100 us to 60 s: a database's range
BUCKETS_S = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
             1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: the labels every series carries, in this order
RUN_LABELS = ("run", "campaign", "target", "storage")
OUTCOMES = ("commits", "rollbacks", "errors", "in_doubt")
INSTALL = "pip install 'tpsbench[live]'"
#: at the run's end, how long the endpoint waits for a scraper that has come before to
#: read the last figures (one scrape interval of a scraper set for runs)
LINGER_S = 10.0
#: how long a campaign's scrape waits for each of its runs' endpoints
RELAY_TIMEOUT_S = 2.0
#: rendered intervals waiting for a scrape, at most (a scraper that stopped coming would
#: otherwise keep every interval of a long run)
PENDING_MOST = 60


def _prometheus() -> Any:
    try:
        import prometheus_client
        import prometheus_client.core  # the metric families, reached as prometheus_client.core
        import prometheus_client.parser  # a campaign reads its runs' endpoints
    except ImportError:
        raise TpsbenchError(f"--metrics-addr needs prometheus-client, which is not installed: {INSTALL}") from None
    return prometheus_client


def parse_address(text: str, allow_remote: bool = False) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` as (host, port), 127.0.0.1 when only a port
    is given; an address that is not this host's loopback is refused unless ``allow_remote``."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise TpsbenchError(f"--metrics-addr {text!r}: give PORT or HOST:PORT with a port of 1-65535")
    if not host:
        raise TpsbenchError(f"--metrics-addr {text!r}: the host is empty (give HOST:PORT or just PORT)")
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, int(port_text), proto=socket.IPPROTO_TCP)}
    except (socket.gaierror, UnicodeError):
        raise TpsbenchError(f"--metrics-addr {text!r}: no such host {host!r}") from None
    local = all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)
    if not local and not allow_remote:
        raise TpsbenchError(f"--metrics-addr {text!r}: {host} is reachable from other hosts; the endpoint "
                            "binds 127.0.0.1 unless --allow-remote is given")
    return host, int(port_text)


@dataclass
class _Txn:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    retries: int = 0
    histogram: LatencyHistogram = field(default_factory=LatencyHistogram)
    #: cumulative counts at BUCKETS_S, the count and the sum in seconds, as of the last interval
    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS_S))
    total: int = 0
    sum_s: float = 0.0


class RunMetrics:
    """One run's series: counters and histograms since its start, the latest step's gauges."""

    def __init__(self, labels: Mapping[str, str]) -> None:
        self.labels = [str(labels.get(name, "")) for name in RUN_LABELS]
        self._lock = threading.Lock()
        self._txns: dict[str, _Txn] = {}
        self._reconnects = 0
        self._gauges: dict[str, float] = {}
        self._observations: dict[tuple[str, str], float] = {}
        self._verdicts: dict[int, tuple[str, str]] = {}
        self._at: float | None = None
        self._pending: deque[list[Any]] = deque(maxlen=PENDING_MOST)
        self._shown: list[Any] = []
        #: how often a scrape got new figures: the endpoint formats its text again only then
        self.version = 0
        self._prometheus = _prometheus()

    def interval(self, report: IntervalReport, users: int, offered: float | None = None) -> None:
        """Add one merged interval (the coordinator's thread; a scrape waits for the lock)."""
        seconds = max(report.t_end - report.t_start, 1e-9)
        with self._lock:
            for name, txn in report.txns.items():
                mine = self._txns.setdefault(name, _Txn())
                for outcome in OUTCOMES:
                    mine.counts[outcome] += getattr(txn, outcome)
                mine.retries += txn.retries
                if txn.histogram:
                    mine.histogram.merge(txn.decoded())
                    mine.buckets = mine.histogram.counts_at_most([b * 1e6 for b in BUCKETS_S])
                    mine.total = mine.histogram.count()
                    mine.sum_s = mine.histogram.mean() * mine.total / 1e6
            self._reconnects += report.reconnects
            self._gauges = {"step": report.step, "users": users, "steady": float(report.steady),
                            "achieved_tps": report.tps}
            if offered is not None:
                self._gauges["offered_rate"] = offered
                self._gauges["arrivals_per_second"] = report.arrivals / seconds
                self._gauges["queue"] = report.queue
            self._observations = {(observer, figure): value for observer, figures in report.observations.items()
                                  for figure, value in figures.items()}
            self._at = report.t_end
            self._pending.append(self._render())

    def step_ended(self, step: int, kind: str, subject: str) -> None:
        """What limited a finished step (its verdict)."""
        with self._lock:
            self._verdicts[step] = (kind, subject)
            if self._at is not None:
                self._pending.append(self._render())

    def scrape(self) -> list[Any]:
        """The oldest interval no scrape has had yet, else the latest again."""
        with self._lock:
            if self._pending:
                self._shown = self._pending.popleft()
                self.version += 1
            return self._shown

    @property
    def unscraped(self) -> bool:
        return bool(self._pending)

    def _render(self) -> list[Any]:
        """The series now as prometheus-client metric families, each sample at the interval's end."""
        core, at, names = self._prometheus.core, self._at, [*RUN_LABELS, "transaction"]
        txns = core.CounterMetricFamily("tpsbench_transactions", "Transactions by type and outcome "
                                        "(commits, expected rollbacks, errors, in doubt)",
                                        labels=[*names, "outcome"])
        retries = core.CounterMetricFamily("tpsbench_retries", "Retried attempts by transaction type",
                                           labels=names)
        latency = core.HistogramMetricFamily("tpsbench_latency_seconds", "Response time of committed and "
                                             "rolled-back transactions", labels=names)
        for name, txn in self._txns.items():
            if name == ALL:
                continue
            for outcome in OUTCOMES:
                txns.add_metric([*self.labels, name, outcome], txn.counts[outcome], timestamp=at)
            retries.add_metric([*self.labels, name], txn.retries, timestamp=at)
            buckets = [(_le(bound), count) for bound, count in zip(BUCKETS_S, txn.buckets)]
            latency.add_metric([*self.labels, name], [*buckets, ("+Inf", txn.total)], txn.sum_s, timestamp=at)
        families = [txns, retries, latency]
        reconnects = core.CounterMetricFamily("tpsbench_reconnects", "Connections opened again after a "
                                              "loss", labels=list(RUN_LABELS))
        reconnects.add_metric(self.labels, self._reconnects, timestamp=at)
        families.append(reconnects)
        for gauge, value in self._gauges.items():
            family = core.GaugeMetricFamily(f"tpsbench_{gauge}", GAUGES[gauge], labels=list(RUN_LABELS))
            family.add_metric(self.labels, value, timestamp=at)
            families.append(family)
        observed = core.GaugeMetricFamily("tpsbench_observation", "The step observers' latest readings "
                                          "(device I/O, host CPU, database counters and waits)",
                                          labels=[*RUN_LABELS, "observer", "figure"])
        for (observer, figure), value in self._observations.items():
            observed.add_metric([*self.labels, observer, figure], value, timestamp=at)
        families.append(observed)
        limited = core.GaugeMetricFamily("tpsbench_limited_by", "1 for what limited each finished step",
                                         labels=[*RUN_LABELS, "step", "kind", "subject"])
        for step, (kind, subject) in self._verdicts.items():
            limited.add_metric([*self.labels, str(step), kind, subject], 1.0, timestamp=at)
        families.append(limited)
        return families




GAUGES = {
    "step": "The step running now (1, 2, ...)",
    "users": "Virtual users of the step running now",
    "steady": "1 while the step's measured (steady) window runs, 0 in its ramp-up",
    "achieved_tps": "Committed transactions per second over the last interval",
    "offered_rate": "Paced steps: the arrivals per second asked for",
    "arrivals_per_second": "Paced steps: the arrivals scheduled per second over the last interval",
    "queue": "Paced steps: arrivals due but not yet started at the last interval's end",
}


class RelayedRun:
    """A campaign's run, serving its own endpoint on a loopback port: fetched at each scrape
    of the campaign's endpoint (so each of its intervals still reaches a scrape), its last
    figures kept once it has ended."""

    def __init__(self, port: int, prometheus: Any) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"
        self._parse = prometheus.parser.text_string_to_metric_families
        self._last: list[Any] = []
        self.unscraped = False
        self.version = 0

    def scrape(self) -> list[Any]:
        try:
            with urllib.request.urlopen(self.url, timeout=RELAY_TIMEOUT_S) as answer:
                self._last = list(self._parse(answer.read().decode()))
                self.version += 1
        except OSError:  # not started yet, or ended: what it served last
            pass
        return self._last


def loopback_port() -> int:
    """A free port on 127.0.0.1, for a campaign's run's own endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _le(bound: float) -> str:
    return f"{bound:g}"


def metrics_endpoint(address: str | None, allow_remote: bool = False) -> MetricsEndpoint | None:
    """The endpoint asked for, checked but not yet listening (None when not asked), so that a
    bad address is refused before anything is touched; --allow-remote alone is refused."""
    if address is None:
        if allow_remote:
            raise TpsbenchError("--allow-remote lets --metrics-addr bind another address than 127.0.0.1: "
                                "give --metrics-addr too, or leave it out")
        return None
    return MetricsEndpoint(address, allow_remote)


class MetricsEndpoint:
    """The HTTP endpoint: one per process, serving every run fed to it (a campaign's too)."""

    def __init__(self, address: str, allow_remote: bool = False) -> None:
        self._prometheus = _prometheus()
        self.host, self.port = parse_address(address, allow_remote)
        self._runs: list[RunMetrics | RelayedRun] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._scraped = False
        self._text: tuple[tuple[int, ...], bytes] = ((), b"")

    def start(self) -> MetricsEndpoint:
        """Bind and serve in a thread; a port in use is refused in one line."""
        try:
            self._server = _Server(self)
        except OSError as exc:
            raise TpsbenchError(f"--metrics-addr {self.host}:{self.port}: cannot listen there "
                                f"({exc.strerror or exc}): is the port in use?") from None
        return self

    def add(self, run: int, campaign: int | None, target: str, storage: str) -> RunMetrics:
        """A run's series, labelled by its id, campaign, database (as stored: no password)
        and storage configuration."""
        metrics = RunMetrics({"run": str(run), "campaign": "" if campaign is None else str(campaign),
                              "target": scrub_text(target), "storage": storage})
        with self._lock:
            self._runs.append(metrics)
        return metrics

    def relay(self, port: int) -> None:
        """Serve a campaign's run's endpoint at ``port`` from this one too."""
        with self._lock:
            self._runs.append(RelayedRun(port, self._prometheus))

    def exposition(self) -> bytes:
        """What a scrape gets, in Prometheus' text format: formatted again only when a run
        has new figures for it (a scrape between two intervals costs next to nothing)."""
        with self._lock:
            self._scraped = True
            shown = [run.scrape() for run in self._runs]
            versions = tuple(run.version for run in self._runs)
            if versions != self._text[0]:
                self._text = (versions, self._prometheus.generate_latest(_Families(self._merged(shown))))
            return self._text[1]

    def collect(self) -> Iterator[Any]:
        """prometheus-client's collector protocol: every run's families, merged by name."""
        with self._lock:
            self._scraped = True
            shown = [run.scrape() for run in self._runs]
        yield from self._merged(shown)

    def _merged(self, shown: list[list[Any]]) -> list[Any]:
        merged: dict[str, Any] = {}
        for families in shown:
            for family in families:  # copied: a run's rendered families are served again
                into = merged.get(family.name)
                if into is None:
                    into = merged[family.name] = self._prometheus.core.Metric(family.name, family.documentation,
                                                                              family.type)
                into.samples.extend(family.samples)
        return list(merged.values())

    def __enter__(self) -> MetricsEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving, once a scraper that came before has had every interval (at most
        LINGER_S)."""
        deadline = time.monotonic() + LINGER_S
        while self._scraped and any(r.unscraped for r in self._runs) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _Families:
    """Merged families, as generate_latest takes them (it asks a registry to collect)."""

    def __init__(self, families: list[Any]) -> None:
        self.families = families

    def collect(self) -> list[Any]:
        return self.families


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # http.server's name
        if self.path.partition("?")[0] not in ("/", "/metrics"):
            self.send_error(404, "the metrics are at /metrics")
            return
        body = self.server.endpoint.exposition()
        self.send_response(200)
        self.send_header("Content-Type", self.server.endpoint._prometheus.CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # http.server's signature
        """Quiet: a scrape a second would otherwise print a line a second."""


class _Server(http.server.ThreadingHTTPServer):
    """The endpoint's HTTP server, on a thread of its own (prometheus-client formats the text,
    this serves it, formatted once per interval)."""

    daemon_threads = True

    def __init__(self, endpoint: MetricsEndpoint) -> None:
        self.endpoint = endpoint
        self.address_family = socket.AF_INET6 if ":" in endpoint.host else socket.AF_INET
        super().__init__((endpoint.host, endpoint.port), _Handler)
        threading.Thread(target=self.serve_forever, name="tpsbench-metrics", daemon=True).start()
