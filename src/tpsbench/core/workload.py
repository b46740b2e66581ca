"""The workload interface: what one benchmark folder under ``tpsbench.workloads`` provides.

A workload is one package: its DDL per database under ``schemas/<dialect>.sql``, named
scales in ``scale_factors.toml``, a loader, its transactions and mix, its checks. The
framework drives it through this class alone, in the spirit of go-tpc's
prepare/run/check/cleanup, and never reaches into its modules: building asks for load
tasks and their rows, running asks for one :class:`~tpsbench.core.session.Session` per
virtual user (and for any background components), checking asks for SQL conditions.

Loading is split into picklable :class:`LoadTask` objects so that loader processes can
take any of them in any order; each task derives its random stream from the build seed
and its own key alone, which is what makes a build identical for any number of loaders.
"""

from __future__ import annotations

import sys
import tomllib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa

from tpsbench.core.batch import Batch
from tpsbench.core.delays import ENGINE_OPTIONS, waits_of
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import require_complete
from tpsbench.core.schema import split_ddl

if TYPE_CHECKING:
    from tpsbench.core.session import Background, RunContext, Session
    from tpsbench.core.target import Target


@dataclass(frozen=True)
class LoadTask:
    """One independent unit of loading, e.g. ("warehouse", 7) or ("item",)."""

    kind: str
    key: tuple[int, ...] = ()


@dataclass(frozen=True)
class LoadParams:
    """Everything a loader process needs besides the task: same for every task of a build."""

    scale: int
    seed: int
    #: ISO timestamp used for every "now" column of the initial data (C_SINCE, O_ENTRY_D ...)
    load_time: str
    #: workload-specific constants chosen at build and stored in the metadata table
    constants: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Option:
    """A workload-specific option of ``run`` (or ``build``), shown as ``--NAME`` by the CLI.

    Values travel as strings in ``RunContext.options``, so that a step plan stays a
    plain picklable message; the workload parses them where it uses them.
    """

    name: str
    default: str
    help: str
    choices: tuple[str, ...] = ()
    #: the option it only applies with and the values it applies at, e.g. ("rand_type",
    #: "zipfian"): given without them it would do nothing, so the CLI refuses it
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """A consistency condition: ``sql`` selects the violating rows (none means pass).

    A condition that SQL cannot state the same way on every database (catalogue
    questions: does this table have an index on k?) gives ``violations`` instead, which
    counts the violations through the target (SQLAlchemy's inspector knows every
    dialect's catalogue), so that a new database needs no SQL of its own here.
    """

    number: int
    title: str
    sql: str = ""
    #: False for conditions that hold only until the first run (TPC-C condition 11)
    holds_after_run: bool = True
    violations: Callable[[Target], int] | None = None

    def count(self, target: Target, conn: sa.Connection) -> int:
        """How many violations ``target`` has (``conn``: a SQLAlchemy connection to it)."""
        if self.violations is not None:
            return int(self.violations(target))
        return int(conn.execute(sa.text(f"SELECT COUNT(*) FROM ({self.sql}) v")).scalar_one())


@dataclass(frozen=True)
class SizeEstimate:
    """About how much disk a build takes right after it is done (runs grow it)."""

    scale: int
    dialect: str
    megabytes: float
    #: where the figure comes from (what was measured, when)
    basis: str


class Workload(ABC):
    """A benchmark: its tables, how to load and check them, and how its users run.

    An instance travels to the engine's worker processes by pickling, with whatever
    ``configure`` and ``verify_schema`` set on it.
    """

    name: ClassVar[str]
    #: the workload's own tables, in the order they are listed and dropped
    tables: ClassVar[tuple[str, ...]]
    #: what the scale counts, for messages ("warehouses")
    scale_unit: ClassVar[str] = "units"
    #: the scale ``build`` takes when --scale is not given; None: --scale is required
    default_scale: ClassVar[int | None] = None
    #: options of ``tpsbench run <name>`` beyond the common ones
    run_options: ClassVar[tuple[Option, ...]] = ()
    #: whether the workload's rules set keying and think times of their own (``--think
    #: spec``: its sessions' keying_time and think_time say them)
    spec_waits: ClassVar[bool] = False
    #: options of ``tpsbench build <name>`` beyond the scale
    build_options: ClassVar[tuple[Option, ...]] = ()
    #: every transaction name a session's next_transaction() can return (and background
    #: components record), in report order
    transaction_names: tuple[str, ...] = ()
    #: spans recorded beside the transactions that are not transactions themselves (a
    #: deferred Delivery's time in its queue: tpsbench.core.session.TimingSink), in report order
    timing_names: tuple[str, ...] = ()
    #: the headline metric after TPS, as (label, transaction, per how many seconds):
    #: ("tpmC", "new_order", 60.0) is committed New-Orders per minute; None: TPS alone
    main_metric: ClassVar[tuple[str, str, float] | None] = None

    # -- the folder ---------------------------------------------------------------------
    @classmethod
    def folder(cls) -> Path:
        """The workload's package folder: its DDL files and scale factors live there."""
        return Path(sys.modules[cls.__module__].__file__ or ".").resolve().parent

    @classmethod
    def schema_file(cls, dialect: str) -> Path:
        """The DDL file for a target's dialect: ``<folder>/schemas/<dialect>.sql``."""
        return cls.folder() / "schemas" / f"{dialect}.sql"

    def ddl(self, dialect: str) -> tuple[list[str], list[str]] | None:
        """(table statements, index statements) for ``dialect``: the schema file's, split by
        :func:`~tpsbench.core.schema.split_ddl`; None where there is no file for it. A
        workload whose tables come from elsewhere (custom's, from a file the user wrote)
        answers from there."""
        path = self.schema_file(dialect)
        return split_ddl(path.read_text()) if path.exists() else None

    @classmethod
    def scale_factors(cls) -> dict[str, Any]:
        """``scale_factors.toml`` of the folder (named presets, measured sizes); {} if none."""
        path = cls.folder() / "scale_factors.toml"
        return tomllib.loads(path.read_text()) if path.exists() else {}

    # -- build --------------------------------------------------------------------------
    def configure(self, options: Mapping[str, str]) -> None:
        """Take build or run options; the default knows none besides the engine's waits
        (tpsbench.core.delays), checked here, and says so in one line."""
        known = {o.name for o in (*self.build_options, *self.run_options)} | ENGINE_OPTIONS
        unknown = sorted(set(options) - known)
        if unknown:
            raise TpsbenchError(f"{self.name} has no option {', '.join(unknown)}")
        self.check_waits(options)

    def check_waits(self, options: Mapping[str, str]) -> None:
        """Refuse, in one line, waits that cannot be (a spelling, or spec where the
        workload's rules set none)."""
        waits = waits_of(options)
        if not self.spec_waits and "spec" in (waits.keying.kind, waits.think.kind):
            raise TpsbenchError(f"{self.name} has no keying or think times of its own (spec): give fixed:, "
                                "uniform: or negexp:")

    def table_names(self, scale: int) -> tuple[str, ...]:
        """The tables a build at ``scale`` creates (fixed for most workloads)."""
        return self.tables

    def owned_tables(self, present: set[str]) -> list[str]:
        """Which of the ``present`` tables are this workload's, in drop order."""
        return [t for t in reversed(self.tables) if t in present]

    def expand_ddl(self, statements: list[str], scale: int) -> list[str]:
        """The schema file's statements for ``scale`` (a workload with N alike tables repeats them)."""
        return statements

    def verify_schema(self, target: Target) -> dict[str, str]:
        """The metadata of a complete build here (scale, constants ...), or a one-line error.

        Runs and checks call this first: a run never starts against missing, half-loaded
        or another workload's tables.
        """
        return require_complete(target, self.name, self.tables)

    @abstractmethod
    def constants(self, seed: int) -> dict[str, int]:
        """Constants fixed at build time and kept in the metadata table (e.g. TPC-C C-load)."""

    @abstractmethod
    def tasks(self, scale: int) -> list[LoadTask]:
        """The load tasks of a build at ``scale``, largest first is best for balance."""

    @abstractmethod
    def generate(self, task: LoadTask, params: LoadParams) -> Iterator[Batch]:
        """The rows of one task, in chunks; deterministic in (params.seed, task)."""

    @abstractmethod
    def expected_rows(self, scale: int, seed: int) -> dict[str, int]:
        """Exact row counts per table right after a build with ``seed``, for progress and tests."""

    @abstractmethod
    def checks(self) -> list[Check]:
        """Consistency conditions, numbered as the workload's specification numbers them."""

    def describe_scale(self, scale: int) -> str:
        return f"{scale} {self.scale_unit}"

    def estimate_size(self, scale: int, dialect: str) -> SizeEstimate | None:
        """On-disk size after a build at ``scale``, from the per-scale sizes measured on
        ``dialect``'s engine (scale_factors.toml ``[size.<dialect>]``: fixed_mb and
        per_scale_mb); None where nothing was measured."""
        entry = self.measured_size(dialect)
        if entry is None:
            return None
        return SizeEstimate(scale, dialect, entry.get("fixed_mb", 0.0) + scale * entry["per_scale_mb"],
                            entry.get("measured", ""))

    @classmethod
    def measured_size(cls, dialect: str) -> dict[str, Any] | None:
        """scale_factors.toml's ``[size.<dialect>]``: what was measured on that engine."""
        found: dict[str, Any] | None = cls.scale_factors().get("size", {}).get(dialect)
        return found

    # -- run ----------------------------------------------------------------------------
    @abstractmethod
    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        """A session for user ``user_id`` (0-based) of ``users`` on ``conn``."""

    def background(self, ctx: RunContext, worker: int, workers: int) -> Sequence[Background]:
        """Components that run for a whole step beside the users of worker ``worker`` (of
        ``workers``) and send transactions of their own (TPC-C's deferred Delivery). The
        worker calls this before its users open their sessions, so a session can hand
        work to them (the workload keeps them on itself). None by default."""
        return ()

    def prepare_run(self, target: Target, options: Mapping[str, str], users: int) -> str | None:
        """Make the database ready for this run's sessions (e.g. install stored procedures).

        Called once, after the schema was verified, before the first user connects;
        ``users``: the most of any step, one connection each. Returns what to show the
        user (a line or a few), or None.
        """
        return None

    def users_per_worker(self, target: Target, options: Mapping[str, str]) -> int:
        """How many users one worker process hosts before a step spreads over another.

        The engine's default: a step of ``u`` users runs on ceil(u / this) workers, at most
        one per core. 1 spreads every step over all cores, which suits workloads whose
        transactions are short, where the client's CPU per second is high. A workload
        whose transactions keep the server busy far longer than the client says more:
        users sharing one worker's thread then cost the client less CPU each, because
        each wake-up of that thread finds more results in (see TpccWorkload).
        """
        return 1

    @abstractmethod
    def database_counts(self, conn: Any) -> dict[str, int]:
        """The database's own counters (e.g. order counts), read before and after a run for
        the honesty check."""

    @abstractmethod
    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        """The change of :meth:`database_counts` that the driver's commit counts imply."""
