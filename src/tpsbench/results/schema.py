"""The results store's tables, and the version of their layout.

Why a version: results stores are shared and outlive the tpsbench that wrote them. A
store records the layout version it was written with (``store_info``); a tpsbench that
finds a newer one refuses it in one line instead of misreading it, and one that finds
an older one adds what is missing (new tables only: nothing stored is ever rewritten).

Version history:
1. runs, steps, intervals, histograms, errors (no ``store_info`` table);
2. observations: what step observers read beside every interval and step (host CPU ...);
3. campaigns: a set of runs made together (``tpsbench campaign``); its runs name it in
   their config (``campaign``);
4. tpsbench_results_store: the store's own marker. A database with tables named like the
   store's (an application's ``runs``) but without it is someone else's and is refused,
   untouched; a store of layouts 1-3 is recognised by its ``runs`` columns (and
   ``store_info``) and gains the marker when a run next writes to it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

#: the layout this tpsbench writes and reads (see the module docstring)
SCHEMA_VERSION = 5
STATUSES = ("running", "completed", "interrupted", "failed")
#: the longest storage label the runs table keeps
STORAGE_LABEL_MOST = 200

#: a float and a time as stored: MySQL's and MariaDB's FLOAT is single precision (an
#: interval's start, seconds since the epoch, would lose whole minutes) and their DATETIME
#: whole seconds, so stores created there get DOUBLE and DATETIME(6), keeping what every
#: other backend keeps (a store created before keeps its columns: nothing is rewritten)
FLOAT = sa.Float().with_variant(mysql.DOUBLE(asdecimal=False), "mysql", "mariadb")
TIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
metadata = sa.MetaData()
#: the marker: a table only a results store has (layout 4 on), one row naming its maker
marker_table = sa.Table(
    "tpsbench_results_store", metadata,
    sa.Column("made_by", sa.String(64), primary_key=True),
)
#: the columns every layout's ``runs`` table has: how a store older than the marker is known
RUNS_COLUMNS_SINCE_1 = frozenset({"id", "workload", "started_at", "ended_at", "status", "storage", "config"})
runs_table = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("workload", sa.String(64), nullable=False),
    sa.Column("started_at", TIME, nullable=False),
    sa.Column("ended_at", TIME),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("storage", sa.String(STORAGE_LABEL_MOST), nullable=False),
    sa.Column("config", sa.JSON),
    sa.Column("seed", sa.BigInteger),
    sa.Column("tool_version", sa.String(40)),
    sa.Column("db_url", sa.String(1000)),
    sa.Column("server", sa.JSON),
    sa.Column("honesty", sa.JSON),
    sa.Column("notes", sa.Text),
)
FIGURES = ("avg_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")
COUNTS = ("commits", "rollbacks", "retries", "errors", "reconnects")
steps_table = sa.Table(
    "steps", metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("users", sa.Integer, nullable=False),
    sa.Column("rampup_s", FLOAT),
    sa.Column("duration_s", FLOAT),
    sa.Column("seconds", FLOAT),
    sa.Column("tps", FLOAT),
    sa.Column("tpm", sa.JSON),
    *(sa.Column(name, FLOAT) for name in FIGURES),
    *(sa.Column(name, sa.BigInteger) for name in COUNTS),
    sa.Column("detail", sa.JSON),  # SteadySummary.to_dict(): per-transaction figures
)
intervals_table = sa.Table(
    "intervals", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("interval", sa.Integer, nullable=False),
    sa.Column("t_start", FLOAT, nullable=False),
    sa.Column("t_end", FLOAT, nullable=False),
    sa.Column("steady", sa.Boolean, nullable=False),
    sa.Column("users", sa.Integer),
    sa.Column("tps", FLOAT),
    sa.Column("p95_ms", FLOAT),
    *(sa.Column(name, sa.BigInteger) for name in COUNTS),
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
#: the ``txn`` of a step's problem (StepOutcome.problems: a worker lost, a user that sat the
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

#: readings of step observers (tpsbench.measure.observers): one row per value, for each
#: interval (``interval`` set) and each step's steady window (``interval`` NULL)
observations_table = sa.Table(
    "observations", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("interval", sa.Integer),
    sa.Column("observer", sa.String(64), nullable=False),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("value", FLOAT, nullable=False),
    sa.Index("ix_observations_run_step", "run_id", "step", "interval"),
)
#: the ``interval`` of readings taken before a step's first interval, outside every
#: measured window: a server restart of ``--cache cold`` (tpsbench.commands.cache)
BEFORE_STEP = -1
#: the ``step`` of a run's warm-up (``run --warmup``): its intervals, readings and problems,
#: stored before step 1's; it has no ``steps`` row and its intervals are never steady
WARMUP_STEP = 0
#: campaigns (tpsbench.commands.campaign): what was asked for, and how it ended
campaigns_table = sa.Table(
    "campaigns", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(STORAGE_LABEL_MOST), nullable=False),
    sa.Column("started_at", TIME, nullable=False),
    sa.Column("ended_at", TIME),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("config", sa.JSON),
)
#: facts about the store itself: ``schema_version``
store_info_table = sa.Table(
    "store_info", metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)
#: published reference tables (tpsbench.results.references): per NAME, one row per
#: configuration (``label``) and user load, in the file's order (``position``); a figure the
#: table did not publish is NULL
reference_rows_table = sa.Table(
    "reference_rows", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(STORAGE_LABEL_MOST), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("label", sa.String(STORAGE_LABEL_MOST), nullable=False),
    sa.Column("users", sa.Integer, nullable=False),
    sa.Column("tps", FLOAT),
    sa.Column("response_s", FLOAT),
    sa.Column("iops", FLOAT),
    sa.Column("workload", sa.String(64)),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("added_at", TIME, nullable=False),
    sa.Index("ix_reference_rows_name", "name", "position"),
)
#: a result bundle's manifest (tpsbench.results.bundle): in bundles only, never in a store,
#: so no layout version; its format has its own version, in the manifest
BUNDLE_TABLE = "tpsbench_bundle"
bundle_metadata = sa.MetaData()
bundle_table = sa.Table(
    BUNDLE_TABLE, bundle_metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
