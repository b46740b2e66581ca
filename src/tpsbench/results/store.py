"""The results store: every run, step, interval, histogram, error sample and observer
reading, in SQL (the tables: tpsbench.results.schema).

Why SQL and SQLAlchemy Core: users compare storage configurations over weeks, often from
several load hosts; one SQLite file next to the runs is enough for most, and a shared
PostgreSQL or MySQL database for the rest, with the same code. Reports are queries.

Why one short transaction per write: a run may be stopped (Ctrl-C, a crashed server,
a killed host) at any time; every interval that was finished must still be there and
the run must say how it ended (``running`` means it never finished). Short transactions
also let two runs (and readers) share one store; run ids come from the database in the
write that records the run, so two writers never get the same one.

Why a failed write is :class:`StoreUnwritable` and no retry: a store whose disk is full
or read-only keeps nothing more of a run, so the run stops at once and says so; a retry
would hide the loss. What was written before stays readable: readers write nothing.

Why the scrubbing: results get shared; database URLs and connection settings carry
passwords. No password reaches the store: URLs lose theirs, ``password=...`` settings
lose their values, keys that name secrets are hidden, and a password seen in any URL is
also blanked out of every later text (error messages quote connection strings). The
rules are tpsbench.core.redact's, the same as for everything printed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from tpsbench.core.errors import TpsbenchError, first_line, kept_said
from tpsbench.core.redact import safe_url, scrub, scrub_text, secrets_of
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.observers import Readings
from tpsbench.measure.reports import ALL, IntervalReport
from tpsbench.measure.summary import SteadySummary
from tpsbench.results.opening import SQLITE_BUSY_TIMEOUT_S, opened, store_url
from tpsbench.results.records import (RAW_COLUMNS, Run, RunData, StoredError, StoredInterval, StoredObservation,
                                      StoredStep, run_from_row)
from tpsbench.results.schema import (COUNTS, PROBLEM, RUNS_COLUMNS_SINCE_1, SCHEMA_VERSION, STATUSES,
                                     campaigns_table, errors_table, histograms_table, intervals_table, marker_table,
                                     metadata, observations_table, runs_table, steps_table, store_info_table)

DEFAULT_URL = "sqlite:///tpsbench-results.db"
ENV_VAR = "TPSBENCH_RESULTS"
#: SQLAlchemy drivers we install, for URLs that name none (SQLAlchemy's own defaults may be missing)
DEFAULT_DRIVERS = {"postgresql": "psycopg", "postgres": "psycopg", "mysql": "pymysql", "mariadb": "pymysql"}
#: the largest run id a store holds (a 64-bit signed integer); readers refuse a larger one
RUN_ID_MOST = 2**63 - 1

#: the causes a failed write's line names, by words of SQLite's, PostgreSQL's and MySQL's
#: messages; any other cause is the driver's own first line
CAUSES = (("disk is full", "disk full"), ("no space left", "disk full"), ("readonly database", "read-only"),
          ("read-only", "read-only"))


class StoreUnwritable(TpsbenchError):
    """A write to the results store failed (its disk is full or read-only, its server is
    gone, a lock was held too long): the run stops, since nothing more of it would be kept.

    ``cause`` is short ("disk full", "read-only" or the driver's line); :meth:`run_ended`
    says the same failure as a run's last word, with what the store kept."""

    exit_code = 1

    def __init__(self, store: str, cause: str, what: str) -> None:
        self.store, self.cause = store, cause
        super().__init__(f"the results store {store} cannot be written ({cause}): {what}")

    def run_ended(self, run_id: int, kept: Sequence[int], *, during: int | None,
                  end_written: bool) -> StoreUnwritable:
        """This failure as run ``run_id``'s end: the step it stopped in (``during``; None:
        it failed writing the run's end), the steps the store holds in full (``kept``), and,
        when the end could not be written, that the store still shows the run as running."""
        said = [f"run {run_id} stopped during step {during}" if during is not None else f"run {run_id} ended",
                kept_said(kept)]
        if not end_written:
            said.append("the store still shows the run as running")
        return StoreUnwritable(self.store, self.cause, "; ".join(said))


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class ResultsStore:
    """Runs, steps, intervals, histograms and errors in any SQLAlchemy database."""

    def __init__(self, url: str | None = None, *, create: bool = True) -> None:
        """The store at ``url`` (default ``$TPSBENCH_RESULTS``, else a SQLite file here),
        its tables created where missing. ``create=False`` is for readers (runs, report,
        compare), which must leave no file or table behind: a store with no runs yet is
        then a one-line error."""
        text = store_url(url or os.environ.get(ENV_VAR) or DEFAULT_URL)
        self._secrets: set[str] = set()
        #: the runs the last list_runs left out, one line each (a malformed stored row)
        self.unreadable: list[str] = []
        self._learn(text)
        self.url = safe_url(text)
        try:
            parsed = sa.engine.make_url(text)
            backend, _, driver = parsed.drivername.partition("+")
            if not driver and backend in DEFAULT_DRIVERS:
                parsed = parsed.set(drivername=f"{backend}+{DEFAULT_DRIVERS[backend]}")
            empty = TpsbenchError(f"results store {self.url} has no runs yet: run one with `tpsbench run tpcc`")
            self._sqlite = backend == "sqlite"
            if not create and self._sqlite and not os.path.exists(parsed.database or ""):
                raise empty
            connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_S} if self._sqlite else {}
            self.engine = sa.create_engine(parsed, poolclass=sa.NullPool, connect_args=connect_args)
            version = self._version()
            self.engine = opened(self.engine, self.url, writing=create)
            if not create and version == 0:
                raise empty
            if version > SCHEMA_VERSION:
                raise TpsbenchError(f"results store {self.url} was written by a newer tpsbench (layout {version}; "
                                    f"this one knows up to {SCHEMA_VERSION}): upgrade tpsbench to read it")
            if version < SCHEMA_VERSION and create:  # new or older; readers read older layouts as they are
                with self._transaction("creating its tables") as conn:
                    # the marker first (MySQL commits each CREATE): a second writer never sees a store without it
                    marker_table.create(conn, checkfirst=True)
                    conn.execute(marker_table.delete())
                    conn.execute(marker_table.insert().values(made_by="tpsbench"))
                    metadata.create_all(conn, checkfirst=True)  # in the write: a second writer waits, then sees them
                    conn.execute(store_info_table.delete().where(store_info_table.c.name == "schema_version"))
                    conn.execute(store_info_table.insert().values(name="schema_version", value=str(SCHEMA_VERSION)))
        except TpsbenchError:
            raise
        except Exception as exc:  # any reason the store cannot be used
            reason = first_line(getattr(exc, "orig", None) or exc)
            raise TpsbenchError(f"results store {self.url}: cannot open: {self._clean(reason)}") from exc

    def _version(self) -> int:
        """The layout version of the store: 0 if it has none of the store's tables, 1 if
        written before versions were kept. A database with tables named like the store's
        that is not one (no marker, and not an older store's layout) is refused untouched."""
        inspector = sa.inspect(self.engine)
        tables = set(inspector.get_table_names())
        if marker_table.name not in tables:
            named = sorted(tables & set(metadata.tables))
            if not named:
                return 0
            if runs_table.name not in tables or not RUNS_COLUMNS_SINCE_1 <= {
                    c["name"] for c in inspector.get_columns(runs_table.name)}:
                raise TpsbenchError(f"results store {self.url}: this database has tables named like a results "
                                    f"store's ({', '.join(named)}) but is not one (no {marker_table.name} table): "
                                    "tpsbench will not touch them; name another --results")
        if store_info_table.name not in tables:  # before versions were kept, or a writer is creating it
            return 0 if marker_table.name in tables else 1
        with self.engine.connect() as conn:
            value = conn.execute(sa.select(store_info_table.c.value).where(
                store_info_table.c.name == "schema_version")).scalar()
        return int(value) if value is not None else 1

    def _learn(self, url: str | sa.engine.URL) -> None:
        self._secrets |= secrets_of(url)

    def _clean(self, text: str) -> str:
        return scrub_text(text, self._secrets)

    @contextlib.contextmanager
    def _transaction(self, doing: str) -> Iterator[sa.Connection]:
        """One short write transaction; any database failure becomes :class:`StoreUnwritable`.

        On SQLite it takes the write lock first (BEGIN IMMEDIATE), waiting for another
        writer's: a transaction that read first and then found the lock taken would fail
        at once, busy timeout or not (SQLite's deadlock rule), and a check-then-write
        (the tables of a new store, a step's row) is atomic only under the lock."""
        try:
            with self.engine.begin() as conn:
                if self._sqlite:
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                yield conn
        except sa.exc.SQLAlchemyError as exc:
            reason = first_line(getattr(exc, "orig", None) or exc)
            cause = next((said for words, said in CAUSES if words in reason.lower()), self._clean(reason))
            raise StoreUnwritable(self.url, cause, f"{doing} failed") from exc

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

    def start_campaign(self, name: str, config: Mapping[str, Any]) -> int:
        """Record a new campaign as ``running``; returns its id, which its runs keep."""
        row = {"name": scrub(name, self._secrets), "started_at": _now(), "status": "running",
               "config": scrub(dict(config), self._secrets)}
        (result,) = self._write("starting a campaign", campaigns_table.insert().values(**row))
        return int(result.inserted_primary_key[0])

    def finish_campaign(self, campaign_id: int, status: str) -> None:
        self._write("finishing a campaign", campaigns_table.update().where(campaigns_table.c.id == campaign_id)
                    .values(status=status, ended_at=_now()))

    def campaign_runs(self, campaign_id: int) -> list[Run]:
        """The runs of a campaign, in the order of its targets; one line if it has none."""
        found = [r for r in self.list_runs() if r.config.get("campaign") == campaign_id]
        if not found:
            raise TpsbenchError(f"results store {self.url} has no runs of campaign {campaign_id}")
        return sorted(found, key=lambda r: (r.config.get("campaign_target", 0), r.id))

    def start_step(self, run_id: int, step: int, users: int, rampup_s: float | None = None,
                   duration_s: float | None = None) -> None:
        """Record the plan of a step before it runs (optional; finish_step works without)."""
        self._write("starting a step", self._delete(steps_table, run_id, step),
                    steps_table.insert().values(run_id=run_id, step=step, users=users,
                                                rampup_s=rampup_s, duration_s=duration_s))

    def add_interval(self, run_id: int, report: IntervalReport, users: int) -> None:
        """Store one (merged) interval: figures, histograms, error samples, observer readings."""
        hist = {name: txn.decoded() for name, txn in report.txns.items()}
        total = LatencyHistogram()
        for h in hist.values():
            total.merge(h)
        counts = {kind: report.total(kind) for kind in COUNTS if kind != "reconnects"}
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
            self._add_observations(conn, run_id, report.step, report.interval, report.observations)

    def add_readings(self, run_id: int, step: int, interval: int | None, readings: Readings) -> None:
        """Store readings of an interval of no report of its own (BEFORE_STEP: a restart),
        or (``interval`` None) of a phase with no step row (the warm-up's --until-steady outcome)."""
        with self._transaction(f"storing readings of step {step}") as conn:
            self._add_observations(conn, run_id, step, interval, readings)

    @staticmethod
    def _add_observations(conn: sa.Connection, run_id: int, step: int, interval: int | None,
                          readings: Readings) -> None:
        rows = [dict(run_id=run_id, step=step, interval=interval, observer=observer, name=name, value=float(value))
                for observer, figures in readings.items() for name, value in figures.items()]
        if rows:
            conn.execute(observations_table.insert().values(rows))

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

    def finish_step(self, run_id: int, step: int, summary: SteadySummary,
                    histograms: Mapping[str, LatencyHistogram | bytes] | None = None,
                    observations: Readings | None = None) -> None:
        """Store a step's steady-state figures, merged histograms (default: the summary's)
        and the step observers' readings over its steady window."""
        histograms = summary.histograms if histograms is None else histograms
        lat = summary.latency
        figures = dict(users=summary.users, seconds=summary.seconds, tps=summary.tps, tpm=summary.tpm_by_txn,
                       avg_ms=lat.mean, p50_ms=lat.p50, p90_ms=lat.p90, p95_ms=lat.p95, p99_ms=lat.p99,
                       p999_ms=lat.p999, max_ms=lat.max, reconnects=summary.reconnects,
                       detail=scrub(summary.to_dict()),
                       **{kind: summary.total(kind) for kind in COUNTS if kind != "reconnects"})
        rows = [dict(run_id=run_id, step=step, interval=None, txn=name,
                     data=(h.encode() if isinstance(h, LatencyHistogram) else bytes(h)).decode())
                for name, h in histograms.items()]
        s, h, o = steps_table.c, histograms_table.c, observations_table.c
        with self._transaction(f"storing step {step}") as conn:
            if conn.execute(sa.select(s.step).where(s.run_id == run_id, s.step == step)).first():
                conn.execute(steps_table.update().where(s.run_id == run_id, s.step == step).values(**figures))
            else:
                conn.execute(steps_table.insert().values(run_id=run_id, step=step, **figures))
            conn.execute(histograms_table.delete().where(h.run_id == run_id, h.step == step, h.interval.is_(None)))
            if rows:
                conn.execute(histograms_table.insert().values(rows))
            conn.execute(observations_table.delete().where(o.run_id == run_id, o.step == step, o.interval.is_(None)))
            self._add_observations(conn, run_id, step, None, observations or {})

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

    def _run_rows(self, doing: str, *where: Any) -> list[Any]:
        """Rows of ``runs`` with their JSON and time columns as the database holds them
        (parsed by :func:`run_from_row`), so that one malformed row cannot stop a whole listing."""
        raw = [sa.type_coerce(c, sa.Text).label(c.name) if c.name in RAW_COLUMNS else c for c in runs_table.c]
        return self._read(doing, sa.select(*raw).where(*where).order_by(runs_table.c.id))

    def list_runs(self) -> list[Run]:
        """Every run that can be read, oldest first; a malformed row (edited by hand, half
        written by a foreign tool) is left out and said in :attr:`unreadable`."""
        self.unreadable = []
        runs = []
        for row in self._run_rows("listing runs"):
            try:
                runs.append(run_from_row(row))
            except ValueError as exc:
                self.unreadable.append(f"run {row.id} cannot be read, left out: {exc}")
        return runs

    def load_run(self, run_id: int) -> RunData:
        """A run with its steps, intervals and error samples (histograms: load_histogram)."""
        if not 1 <= run_id <= RUN_ID_MOST:
            raise TpsbenchError(f"run id {run_id} is not one a results store holds (1 to {RUN_ID_MOST:,})")
        found = self._run_rows("reading a run", runs_table.c.id == run_id)
        if not found:
            raise TpsbenchError(f"results store {self.url} has no run {run_id}")
        try:
            run = run_from_row(found[0])
        except ValueError as exc:
            raise TpsbenchError(f"results store {self.url}: run {run_id} cannot be read: {exc}") from None
        steps = [StoredStep(step=r.step, users=r.users, rampup_s=r.rampup_s, duration_s=r.duration_s,
                            summary=SteadySummary.from_dict(r.detail) if r.detail else None)
                 for r in self._read("reading steps", sa.select(steps_table).where(
                     steps_table.c.run_id == run_id).order_by(steps_table.c.step))]
        c = intervals_table.c
        intervals = [StoredInterval(step=r.step, interval=r.interval, t_start=r.t_start, t_end=r.t_end,
                                    steady=bool(r.steady), users=r.users, tps=r.tps or 0.0, p95_ms=r.p95_ms or 0.0,
                                    **{k: getattr(r, k) or 0 for k in COUNTS})
                     for r in self._read("reading intervals", sa.select(intervals_table).where(
                         c.run_id == run_id).order_by(c.step, c.interval, c.id))]
        e = errors_table.c
        errors = [StoredError(step=r.step, txn=r.txn, count=r.count, message=r.message)
                  for r in self._read("reading errors", sa.select(errors_table).where(
                      e.run_id == run_id).order_by(e.step, e.txn, e.id))]
        o = observations_table.c
        observations = [StoredObservation(step=r.step, interval=r.interval, observer=r.observer, name=r.name,
                                          value=r.value)
                        for r in self._read("reading observations", sa.select(observations_table).where(
                            o.run_id == run_id).order_by(o.step, o.interval, o.id))]
        return RunData(run=run, steps=steps, intervals=intervals, errors=errors,
                       observations=observations)

    def load_histogram(self, run_id: int, step: int, txn: str = ALL,
                       interval: int | None = None) -> LatencyHistogram | None:
        """A stored histogram: the step's merged one (interval None) or one interval's."""
        c = histograms_table.c
        where = [c.run_id == run_id, c.step == step, c.txn == txn,
                 c.interval.is_(None) if interval is None else c.interval == interval]
        rows = self._read("reading a histogram", sa.select(c.data).where(*where).order_by(c.id))
        return LatencyHistogram.decode(rows[-1].data) if rows else None
