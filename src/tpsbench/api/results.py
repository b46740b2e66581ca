"""The results store: every run, step, interval, histogram and error sample, in SQL.

Why SQL and SQLAlchemy Core: users compare storage configurations over weeks, often from
several load hosts; one SQLite file next to the runs is enough for most, and a shared
PostgreSQL or MySQL database for the rest, with the same code. Reports are queries.

Why one short transaction per write: a run may be stopped (Ctrl-C, a crashed server,
a killed host) at any time; every interval that was finished must still be there and
the run must say how it ended (``running`` means it never finished).

Why the scrubbing: results get shared; database URLs and connection settings carry
passwords. No password reaches the store: URLs lose theirs, ``password=...`` settings
lose their values, keys that name secrets are hidden, and a password seen in any URL is
also blanked out of every later text (error messages quote connection strings).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any

import sqlalchemy as sa

from tpsbench.api.histogram import LatencyHistogram
from tpsbench.api.metrics import ALL, IntervalReport, StepSummary
from tpsbench.errors import TpsbenchError, first_line

DEFAULT_URL = "sqlite:///tpsbench-results.db"
ENV_VAR = "TPSBENCH_RESULTS"
STATUSES = ("running", "completed", "interrupted", "failed")
#: SQLAlchemy drivers we install, for URLs that name none (SQLAlchemy's own defaults may be missing)
DEFAULT_DRIVERS = {"postgresql": "psycopg", "postgres": "psycopg", "mysql": "pymysql", "mariadb": "pymysql"}
SECRET_KEYS = frozenset({"password", "passwd", "pwd", "pass", "secret", "token", "api_key", "apikey"})
HIDDEN = "***"

metadata = sa.MetaData()
runs_table = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("workload", sa.String(64), nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=False),
    sa.Column("ended_at", sa.DateTime),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("storage", sa.String(200), nullable=False),
    sa.Column("config", sa.JSON),
    sa.Column("seed", sa.BigInteger),
    sa.Column("tool_version", sa.String(40)),
    sa.Column("db_url", sa.String(1000)),
    sa.Column("server", sa.JSON),
    sa.Column("honesty", sa.JSON),
    sa.Column("notes", sa.Text),
)
_FIGURES = ("avg_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")
_COUNTS = ("commits", "rollbacks", "retries", "errors", "reconnects")
steps_table = sa.Table(
    "steps", metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("users", sa.Integer, nullable=False),
    sa.Column("rampup_s", sa.Float),
    sa.Column("duration_s", sa.Float),
    sa.Column("seconds", sa.Float),
    sa.Column("tps", sa.Float),
    sa.Column("tpm", sa.JSON),
    *(sa.Column(name, sa.Float) for name in _FIGURES),
    *(sa.Column(name, sa.BigInteger) for name in _COUNTS),
    sa.Column("detail", sa.JSON),  # StepSummary.to_dict(): per-transaction figures
)
intervals_table = sa.Table(
    "intervals", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("interval", sa.Integer, nullable=False),
    sa.Column("t_start", sa.Float, nullable=False),
    sa.Column("t_end", sa.Float, nullable=False),
    sa.Column("steady", sa.Boolean, nullable=False),
    sa.Column("users", sa.Integer),
    sa.Column("tps", sa.Float),
    sa.Column("p95_ms", sa.Float),
    *(sa.Column(name, sa.BigInteger) for name in _COUNTS),
    sa.Index("ix_intervals_run_step", "run_id", "step", "interval"),
)
histograms_table = sa.Table(
    "histograms", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("interval", sa.Integer),  # NULL: the step's steady state merged
    sa.Column("txn", sa.String(64), nullable=False),  # "*": all transactions
    sa.Column("data", sa.Text, nullable=False),  # HdrHistogram V2 base64
    sa.Index("ix_histograms_run_step", "run_id", "step", "interval", "txn"),
)
#: the ``txn`` of a step's problem (StepResult.problems: a worker lost, a user that sat the
#: step out), kept with the errors so that a report shows the step ran short of its plan
PROBLEM = "(step)"
#: error samples of every interval of a step, ramp-up included (steps.errors: steady state
#: only), and the step's problems
errors_table = sa.Table(
    "errors", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("txn", sa.String(64), nullable=False),
    sa.Column("count", sa.BigInteger, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Index("ix_errors_run_step", "run_id", "step"),
)


# -- records returned to reports ---------------------------------------------------------
@dataclass
class Run:
    id: int
    workload: str
    started_at: datetime
    ended_at: datetime | None
    status: str
    storage: str
    config: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    tool_version: str | None = None
    db_url: str | None = None
    server: dict[str, Any] = field(default_factory=dict)
    honesty: dict[str, Any] | None = None
    notes: str = ""


@dataclass
class StepRecord:
    step: int
    users: int
    rampup_s: float | None
    duration_s: float | None
    #: None while the step runs, or if the run stopped before the step ended
    summary: StepSummary | None


@dataclass
class IntervalRecord:
    step: int
    interval: int
    t_start: float
    t_end: float
    steady: bool
    users: int | None
    tps: float
    p95_ms: float
    commits: int
    rollbacks: int
    retries: int
    errors: int
    reconnects: int


@dataclass
class ErrorRecord:
    step: int
    txn: str
    count: int
    message: str


@dataclass
class RunData:
    """A run as loaded from the store: all a report needs, no database access left."""

    run: Run
    steps: list[StepRecord] = field(default_factory=list)
    intervals: list[IntervalRecord] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)


# -- scrubbing ------------------------------------------------------------------------------
_URL_USERINFO = re.compile(r"(\b[A-Za-z][\w+.-]*://[^\s/:@'\"]*):[^\s/@'\"]*@")
_WHOLE_URL = re.compile(r"^[A-Za-z][\w+.-]*://\S*$")
_KEYWORD_SECRET = re.compile(r"(?i)\b(password|passwd|pwd)(\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s;&,'\"]*)")


def safe_url(url: str | sa.engine.URL) -> str:
    """``url`` without its password: neither the password nor a placeholder is kept."""
    try:
        parsed = sa.engine.make_url(url)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy reads: scrub it as text
        return scrub_text(str(url))
    query = {k: v for k, v in parsed.query.items() if k.lower() not in SECRET_KEYS}
    if isinstance(query.get("odbc_connect"), str):
        query["odbc_connect"] = scrub_text(query["odbc_connect"])
    # URL.set(password=None) would keep the password: None there means "unchanged"
    clean = sa.engine.URL.create(parsed.drivername, username=parsed.username, host=parsed.host,
                                 port=parsed.port, database=parsed.database, query=query)
    return clean.render_as_string(hide_password=False)


def scrub_text(text: str, secrets: frozenset[str] | set[str] = frozenset()) -> str:
    """Blank passwords out of free text: URL user info, ``password=`` settings, known secrets."""
    text = _URL_USERINFO.sub(r"\1@", text)
    text = _KEYWORD_SECRET.sub(lambda m: m.group(1) + m.group(2) + HIDDEN, text)
    for secret in secrets:
        if len(secret) >= 4:  # shorter ones would blank out ordinary words; URLs lose them anyway
            text = text.replace(secret, HIDDEN)
    return text


def scrub(value: Any, secrets: frozenset[str] | set[str] = frozenset()) -> Any:
    """A JSON-able copy of ``value`` with every password removed (see the module docstring)."""
    if isinstance(value, Mapping):
        return {str(k): (HIDDEN if str(k).lower() in SECRET_KEYS and v else scrub(v, secrets))
                for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [scrub(v, secrets) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, sa.engine.URL) or (isinstance(value, str) and _WHOLE_URL.match(value)):
        return scrub_text(safe_url(value), secrets)
    return scrub_text(str(value), secrets)


def _password(url: str | sa.engine.URL) -> str | None:
    try:
        return sa.engine.make_url(url).password
    except Exception:  # noqa: BLE001 - not a URL: no password to learn
        return None


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _aware(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


class ResultsStore:
    """Runs, steps, intervals, histograms and errors in any SQLAlchemy database."""

    def __init__(self, url: str | None = None) -> None:
        text = url or os.environ.get(ENV_VAR) or DEFAULT_URL
        self._secrets: set[str] = set()
        self._learn(text)
        self.url = safe_url(text)
        try:
            parsed = sa.engine.make_url(text)
            backend, _, driver = parsed.drivername.partition("+")
            if not driver and backend in DEFAULT_DRIVERS:
                parsed = parsed.set(drivername=f"{backend}+{DEFAULT_DRIVERS[backend]}")
            self.engine = sa.create_engine(parsed, poolclass=sa.NullPool)
            metadata.create_all(self.engine, checkfirst=True)
        except Exception as exc:  # noqa: BLE001 - any reason the store cannot be used
            reason = first_line(getattr(exc, "orig", None) or exc)
            raise TpsbenchError(f"results store {self.url}: cannot open: {self._clean(reason)}") from exc

    def _learn(self, url: str | sa.engine.URL) -> None:
        password = _password(url)
        if password:
            self._secrets.add(password)

    def _clean(self, text: str) -> str:
        return scrub_text(text, self._secrets)

    @contextlib.contextmanager
    def _transaction(self, doing: str) -> Iterator[sa.Connection]:
        """One short transaction; any database failure becomes a one-line TpsbenchError."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except sa.exc.SQLAlchemyError as exc:
            reason = first_line(getattr(exc, "orig", None) or exc)
            raise TpsbenchError(f"results store {self.url}: {doing} failed: {self._clean(reason)}") from exc

    def _write(self, doing: str, *statements: Any) -> list[Any]:
        with self._transaction(doing) as conn:
            return [conn.execute(s) for s in statements]

    # -- writing ---------------------------------------------------------------------------
    def start_run(self, workload: str, *, db_url: str, storage: str = "", config: Mapping[str, Any] | None = None,
                  seed: int | None = None, server: Mapping[str, Any] | None = None, notes: str = "",
                  tool_version: str | None = None, started_at: datetime | None = None) -> int:
        """Record a new run as ``running``; returns its id."""
        if tool_version is None:
            from tpsbench import __version__ as tool_version
        self._learn(db_url)
        s = self._secrets
        started = started_at.astimezone(UTC).replace(tzinfo=None) if started_at else _now()
        row = {"workload": workload, "started_at": started, "status": "running", "storage": scrub(storage, s),
               "config": scrub(dict(config or {}), s), "seed": seed, "tool_version": tool_version,
               "db_url": safe_url(db_url), "server": scrub(dict(server or {}), s), "notes": scrub(notes, s)}
        (result,) = self._write("starting a run", runs_table.insert().values(**row))
        return int(result.inserted_primary_key[0])

    def start_step(self, run_id: int, step: int, users: int, rampup_s: float | None = None,
                   duration_s: float | None = None) -> None:
        """Record the plan of a step before it runs (optional; finish_step works without)."""
        self._write("starting a step", self._delete(steps_table, run_id, step),
                    steps_table.insert().values(run_id=run_id, step=step, users=users,
                                                rampup_s=rampup_s, duration_s=duration_s))

    def add_interval(self, run_id: int, report: IntervalReport, users: int) -> None:
        """Store one (merged) interval: figures, histograms, error samples."""
        hist = {name: txn.decoded() for name, txn in report.txns.items()}
        total = LatencyHistogram()
        for h in hist.values():
            total.merge(h)
        counts = {kind: report.total(kind) for kind in _COUNTS if kind != "reconnects"}
        row = dict(run_id=run_id, step=report.step, interval=report.interval, t_start=report.t_start,
                   t_end=report.t_end, steady=report.steady, users=users, tps=report.tps,
                   p95_ms=total.percentile(95) / 1000.0, reconnects=report.reconnects, **counts)
        rows = [dict(run_id=run_id, step=report.step, interval=report.interval, txn=name, data=h.encode().decode())
                for name, h in [*hist.items(), (ALL, total)] if h.count()]
        with self._transaction(f"storing interval {report.interval} of step {report.step}") as conn:
            conn.execute(intervals_table.insert().values(**row))
            if rows:
                conn.execute(histograms_table.insert().values(rows))
            if report.errors:
                self._add_errors(conn, run_id, report)

    def _add_errors(self, conn: sa.Connection, run_id: int, report: IntervalReport) -> None:
        """Add the report's samples to the step's per-message counts."""
        counts: dict[tuple[str, str], int] = {}
        for txn, message in report.errors:
            key = (txn, self._clean(message))
            counts[key] = counts.get(key, 0) + report.error_counts.get((txn, message), 1)
        e = errors_table.c
        existing = {(r.txn, r.message): r.id for r in conn.execute(
            sa.select(e.id, e.txn, e.message).where(e.run_id == run_id, e.step == report.step))}
        for (txn, text), n in counts.items():
            if (txn, text) in existing:
                conn.execute(errors_table.update().where(e.id == existing[(txn, text)]).values(count=e.count + n))
            else:
                conn.execute(errors_table.insert().values(run_id=run_id, step=report.step, txn=txn, count=n,
                                                          message=text))

    def add_problems(self, run_id: int, step: int, problems: list[str]) -> None:
        """Keep a step's problems (the engine's, not a transaction's) beside its errors."""
        if problems:
            self._write("storing a step's problems", *(errors_table.insert().values(
                run_id=run_id, step=step, txn=PROBLEM, count=1, message=self._clean(text)) for text in problems))

    def finish_step(self, run_id: int, step: int, summary: StepSummary,
                    histograms: Mapping[str, LatencyHistogram | bytes] | None = None) -> None:
        """Store a step's steady-state figures and merged histograms (default: the summary's)."""
        histograms = summary.histograms if histograms is None else histograms
        lat = summary.latency
        figures = dict(users=summary.users, seconds=summary.seconds, tps=summary.tps, tpm=summary.tpm_by_txn,
                       avg_ms=lat.mean, p50_ms=lat.p50, p90_ms=lat.p90, p95_ms=lat.p95, p99_ms=lat.p99,
                       p999_ms=lat.p999, max_ms=lat.max, reconnects=summary.reconnects,
                       detail=scrub(summary.to_dict()),
                       **{kind: summary.total(kind) for kind in _COUNTS if kind != "reconnects"})
        rows = [dict(run_id=run_id, step=step, interval=None, txn=name,
                     data=(h.encode() if isinstance(h, LatencyHistogram) else bytes(h)).decode())
                for name, h in histograms.items()]
        s, h = steps_table.c, histograms_table.c
        with self._transaction(f"storing step {step}") as conn:
            if conn.execute(sa.select(s.step).where(s.run_id == run_id, s.step == step)).first():
                conn.execute(steps_table.update().where(s.run_id == run_id, s.step == step).values(**figures))
            else:
                conn.execute(steps_table.insert().values(run_id=run_id, step=step, **figures))
            conn.execute(histograms_table.delete().where(h.run_id == run_id, h.step == step, h.interval.is_(None)))
            if rows:
                conn.execute(histograms_table.insert().values(rows))

    def finish_run(self, run_id: int, status: str, honesty: Mapping[str, Any] | None = None,
                   notes: str | None = None) -> None:
        """Record how the run ended (completed, interrupted or failed) and the honesty check."""
        if status not in STATUSES[1:]:
            raise ValueError(f"status must be one of {', '.join(STATUSES[1:])}, not {status!r}")
        values: dict[str, Any] = {"status": status, "ended_at": _now(),
                                  "honesty": scrub(dict(honesty), self._secrets) if honesty is not None else None}
        if notes is not None:
            values["notes"] = scrub(notes, self._secrets)
        self._write("finishing the run", runs_table.update().where(runs_table.c.id == run_id).values(**values))

    @staticmethod
    def _delete(table: sa.Table, run_id: int, step: int) -> Any:
        return table.delete().where(table.c.run_id == run_id, table.c.step == step)

    # -- reading -----------------------------------------------------------------------------
    def _read(self, doing: str, statement: Any) -> list[Any]:
        try:
            with self.engine.connect() as conn:
                return list(conn.execute(statement))
        except sa.exc.SQLAlchemyError as exc:
            reason = first_line(getattr(exc, "orig", None) or exc)
            raise TpsbenchError(f"results store {self.url}: {doing} failed: {self._clean(reason)}") from exc

    def list_runs(self) -> list[Run]:
        """Every run, oldest first."""
        return [_run(r) for r in self._read("listing runs", sa.select(runs_table).order_by(runs_table.c.id))]

    def load_run(self, run_id: int) -> RunData:
        """A run with its steps, intervals and error samples (histograms: load_histogram)."""
        found = self._read("reading a run", sa.select(runs_table).where(runs_table.c.id == run_id))
        if not found:
            raise TpsbenchError(f"results store {self.url} has no run {run_id}")
        steps = [StepRecord(step=r.step, users=r.users, rampup_s=r.rampup_s, duration_s=r.duration_s,
                            summary=StepSummary.from_dict(r.detail) if r.detail else None)
                 for r in self._read("reading steps", sa.select(steps_table).where(
                     steps_table.c.run_id == run_id).order_by(steps_table.c.step))]
        c = intervals_table.c
        intervals = [IntervalRecord(step=r.step, interval=r.interval, t_start=r.t_start, t_end=r.t_end,
                                    steady=bool(r.steady), users=r.users, tps=r.tps or 0.0, p95_ms=r.p95_ms or 0.0,
                                    **{k: getattr(r, k) or 0 for k in _COUNTS})
                     for r in self._read("reading intervals", sa.select(intervals_table).where(
                         c.run_id == run_id).order_by(c.step, c.interval, c.id))]
        e = errors_table.c
        errors = [ErrorRecord(step=r.step, txn=r.txn, count=r.count, message=r.message)
                  for r in self._read("reading errors", sa.select(errors_table).where(
                      e.run_id == run_id).order_by(e.step, e.txn, e.id))]
        return RunData(run=_run(found[0]), steps=steps, intervals=intervals, errors=errors)

    def load_histogram(self, run_id: int, step: int, txn: str = ALL,
                       interval: int | None = None) -> LatencyHistogram | None:
        """A stored histogram: the step's merged one (interval None) or one interval's."""
        c = histograms_table.c
        where = [c.run_id == run_id, c.step == step, c.txn == txn,
                 c.interval.is_(None) if interval is None else c.interval == interval]
        rows = self._read("reading a histogram", sa.select(c.data).where(*where).order_by(c.id))
        return LatencyHistogram.decode(rows[-1].data) if rows else None


def _run(r: Any) -> Run:
    return Run(id=r.id, workload=r.workload, started_at=_aware(r.started_at), ended_at=_aware(r.ended_at),
               status=r.status, storage=r.storage, config=r.config or {}, seed=r.seed,
               tool_version=r.tool_version, db_url=r.db_url, server=r.server or {}, honesty=r.honesty,
               notes=r.notes or "")
