"""TPC-E-like workload: 33 tables, customers in load units of 1,000 as the scale.

The build side: the schema of TPC-E's tables and columns (schemas/), the initial data
(loader.py: per load unit the customers, the market and the initial trades, plus the
fixed tables; layout.py says how ids and streams are laid out) and the exact row counts
(expected.py). The scale is a number of customers, a positive multiple of 1,000
(``--customers 5000`` is five load units, TPC-E's minimum for a compliant run); the
build options ``--trade-days`` (the rule's 300 eight-hour days of initial trades,
57,600 trades per load unit and day) and ``--market-days`` (DAILY_MARKET's history,
the rule's 1,305 business days) size the two large parts, and are kept in tpsbench_meta.

The run side (sessions, the mix, the market exchange emulator, the transactions and the
checks) lives in its own modules and in the section at the end of the class. The
module-level ``WORKLOAD`` makes the package discoverable by name ("tpce").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import read_meta, write_meta
from tpsbench.core.procedures import PROCEDURE_MODES, install_for_run
from tpsbench.core.session import Background, RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.workload import Check, LoadParams, LoadTask, Option, SizeEstimate, Workload
from tpsbench.workloads.tpce import checks, counts, expected, loader, mee, procedures, trade_cleanup
from tpsbench.workloads.tpce.layout import (
    DEFAULT_MARKET_DAYS,
    DEFAULT_TRADE_DAYS,
    MAX_MARKET_DAYS,
    MAX_TRADE_DAYS,
    TABLES,
    day_count,
    first_trade_id,
    load_units,
)
from tpsbench.workloads.tpce.maintenance import Maintenance
from tpsbench.workloads.tpce.session import TpceSession
from tpsbench.workloads.tpce.table import TABLE

BUILD_OPTIONS = (
    Option("trade_days", str(DEFAULT_TRADE_DAYS),
           "Eight-hour days of initial trades: 57,600 trades per 1,000 customers a day (TPC-E: 300)."),
    Option("market_days", str(DEFAULT_MARKET_DAYS),
           "Business days of DAILY_MARKET history per security (TPC-E: 1305, five years)."),
)


class TpceWorkload(Workload):
    """TPC-E-like: a brokerage's customers, accounts, trades and market.

    The users run the customer emulator's eight transactions at TPC-E's mix; a market
    exchange emulator beside them (mee.py) turns submitted orders into Trade-Results and
    their ticker into Market-Feeds; tpsE counts committed Trade-Results per second.
    Trade-Cleanup runs before the first step, Data-Maintenance once a minute.
    """

    name = "tpce"
    tables = TABLES
    scale_unit = "customers"
    build_options = BUILD_OPTIONS
    main_metric = ("tpsE", "trade_result", 1.0)

    def __init__(self) -> None:
        self.trade_days = DEFAULT_TRADE_DAYS
        self.market_days = DEFAULT_MARKET_DAYS

    # -- build --------------------------------------------------------------------------
    def configure(self, options: Mapping[str, str]) -> None:
        """Refuse unknown options; take the days of initial trades and of market history."""
        super().configure(options)
        self.trade_days = day_count("--trade-days", str(options.get("trade_days", DEFAULT_TRADE_DAYS)),
                                    MAX_TRADE_DAYS)
        self.market_days = day_count("--market-days", str(options.get("market_days", DEFAULT_MARKET_DAYS)),
                                     MAX_MARKET_DAYS)
        TABLE.shares(str(options.get("mix", "")))  # refused now, not in every worker

    def constants(self, seed: int) -> dict[str, int]:
        return loader.constants(self.trade_days, self.market_days)

    def tasks(self, scale: int) -> list[LoadTask]:
        return loader.tasks(scale, self.trade_days, self.market_days)

    def generate(self, task: LoadTask, params: LoadParams) -> Iterator[Batch]:
        return loader.generate(task, params)

    def expected_rows(self, scale: int, seed: int) -> dict[str, int]:
        return expected.expected_rows(load_units(scale), seed, self.trade_days, self.market_days)

    def describe_scale(self, scale: int) -> str:
        units = load_units(scale)
        return f"{scale:,} customers ({units} load unit{'s' if units != 1 else ''})"

    def estimate_size(self, scale: int, dialect: str) -> SizeEstimate | None:
        """From the sizes measured on ``dialect``'s engine (scale_factors.toml): a fixed
        part, and per load unit a part of its own, one per day of trades and one per day
        of market history. A build asks this first, so a scale that is no whole number
        of load units is refused here before anything is written."""
        units = load_units(scale)
        entry = self.measured_size(dialect)
        if entry is None:
            return None
        per_unit = (entry["per_lu_mb"] + self.trade_days * entry["per_lu_trade_day_mb"]
                    + self.market_days * entry["per_lu_market_day_mb"])
        return SizeEstimate(scale, dialect, entry["fixed_mb"] + units * per_unit, entry.get("measured", ""))

    # -- run (the run side: session.py, mee.py, maintenance.py, checks.py, counts.py) ----
    run_options = (
        Option("mee_connections", str(mee.EXECUTORS),
               "Connections per driver process that send the market exchange emulator's Trade-Results and"
               f" Market-Feeds, beside the users' own; work they leave waiting for more than {mee.LATE_S:g} s is"
               " taken by the users. The report's mee_delay rows show how late work was sent after it was due."),
        Option("procedures", "auto", "'on': Trade-Order, Trade-Result, Market-Feed, Trade-Update, Trade-Lookup,"
               " Security-Detail and Customer-Position are each one call of a stored procedure (installed at the"
               " start of the run): one round trip where the statements take several, so the driver takes less"
               " CPU from the database; Broker-Volume, Market-Watch and Trade-Status, one or two statements, stay"
               " statements. 'off': the driver sends every transaction's statements itself. 'auto': 'on' where"
               " tpsbench has procedures for the database (PostgreSQL, MySQL, MariaDB; not through ODBC).",
               PROCEDURE_MODES),
        Option("mix", "", "The users' weights, e.g. trade_order=200,trade_status=300,market_watch=500 (normalised;"
               " a transaction left out does not run; Trade-Result and Market-Feed follow from the Trade-Orders)."
               " Default: TPC-E's, 49/130/180/140/80/101/190/20 per 1,000 for broker_volume, customer_position,"
               " market_watch, security_detail, trade_lookup, trade_order, trade_status, trade_update."),
    )
    transaction_names = TABLE.names
    timing_names = mee.TIMINGS
    #: in a worker: this step's market exchange emulator (background()), and the
    #: Data-Maintenance component of worker 0, which carries its turn to the next step
    exchange: mee.MarketExchange | None = None
    maintenance: Maintenance | None = None

    def background(self, ctx: RunContext, worker: int, workers: int) -> Sequence[Background]:
        """This worker's market exchange emulator for the step and the connections that
        send its transactions; on worker 0 alone, Data-Maintenance as well."""
        self.exchange, executors = mee.components(ctx, worker, mee_connections(ctx.options))
        parts: list[Background] = list(executors)
        if worker == 0:
            last = self.maintenance
            self.maintenance = Maintenance() if last is None else Maintenance(last.turn, last.due)
            parts.append(self.maintenance)
        return parts

    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        if self.exchange is None:
            raise TpsbenchError("tpce: the users need their worker's market exchange emulator (background())")
        return TpceSession(ctx, user_id, users, conn, target, self.exchange)

    def __getstate__(self) -> dict[str, Any]:
        """Without a step's exchange and Data-Maintenance (locks), which belong to the
        worker process that made them."""
        return {k: v for k, v in vars(self).items() if k not in ("exchange", "maintenance")}

    def prepare_run(self, target: Target, options: Mapping[str, str], users: int) -> str | None:
        """Trade-Cleanup (trade_cleanup.py), once before the first step; before the first
        run ever, keep LAST_TRADE's total volume for check 9; install the stored
        procedures when the run calls them (procedures=on/auto), so that the routines it
        calls are this tpsbench's."""
        mee_connections(options)
        calls = procedures.uses_procedures(dict(options), target)
        if checks.LT_VOL_KEY not in read_meta(target, self.name):
            (volume,), = target.fetch_all(checks.LT_VOL_SQL, "reading LAST_TRADE's volumes")
            write_meta(target, self.name, {checks.LT_VOL_KEY: int(volume or 0)})
        note = install_for_run(self, target, users)[1] if calls else None
        with target.translate_errors("running Trade-Cleanup"):
            cancelled = trade_cleanup.run(target, first_trade_id(0, self.trade_days))
        sent = (f"one stored-procedure call each for {', '.join(procedures.CALLS)}; statements for the others"
                " (--procedures off: statements throughout)" if calls else "statements for every transaction")
        return (f"tpce: {sent}; Trade-Cleanup cancelled {cancelled['pending']:,} pending and"
                f" {cancelled['submitted']:,} submitted order(s) left open" + (f"\n{note}" if note else ""))

    def checks(self) -> list[Check]:
        return checks.CHECKS

    def database_counts(self, conn: Any) -> dict[str, int]:
        return counts.database_counts(conn)

    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        return counts.expected_counts(commits)


def mee_connections(options: Mapping[str, str]) -> int:
    """The run option mee_connections: a whole number 1..64, or a one-line error."""
    text = str(options.get("mee_connections", mee.EXECUTORS))
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise TpsbenchError(f"tpce option mee_connections must be a whole number from 1 to 64, got {text!r}")
    return int(text)

WORKLOAD = TpceWorkload
