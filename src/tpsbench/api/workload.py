"""The workload interface: what a benchmark folder under ``tpsbench.workloads`` provides.

A workload is one package (schema DDL under ``schemas/<name>/``, loader, transactions,
mix, checks). The framework drives it through this small interface, in the spirit of
go-tpc's prepare/run/check/cleanup, and never reaches into its modules.

Loading is split into picklable :class:`LoadTask` objects so that worker processes can
take any of them in any order; each task derives its random stream from the build seed
and its own key alone, which is what makes a build identical for any number of workers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from tpsbench.api.batch import Batch
from tpsbench.api.meta import require_complete
from tpsbench.errors import TpsbenchError

if TYPE_CHECKING:
    from tpsbench.targets.base import Target


@dataclass(frozen=True)
class LoadTask:
    """One independent unit of loading, e.g. ("warehouse", 7) or ("item",)."""

    kind: str
    key: tuple[int, ...] = ()


@dataclass(frozen=True)
class LoadParams:
    """Everything a worker process needs besides the task: same for every task of a build."""

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


@dataclass(frozen=True)
class Check:
    """A consistency condition: ``sql`` selects the violating rows (none means pass)."""

    number: int
    title: str
    sql: str
    #: False for conditions that hold only until the first run (TPC-C condition 11)
    holds_after_run: bool = True


class Workload(ABC):
    """A benchmark: its tables, how to load them, and how to check them."""

    name: ClassVar[str]
    #: the workload's own tables, in the order they are listed and dropped
    tables: ClassVar[tuple[str, ...]]
    #: what the scale counts, for messages ("warehouses")
    scale_unit: ClassVar[str] = "units"
    #: options of ``tpsbench run <name>`` beyond the common ones
    run_options: ClassVar[tuple[Option, ...]] = ()
    #: options of ``tpsbench build <name>`` (``-o NAME=VALUE``) beyond the scale
    build_options: ClassVar[tuple[Option, ...]] = ()

    def configure(self, options: Mapping[str, str]) -> None:
        """Take build or run options; the default knows none and says so in one line."""
        unknown = sorted(set(options) - {o.name for o in (*self.build_options, *self.run_options)})
        if unknown:
            raise TpsbenchError(f"{self.name} has no option {', '.join(unknown)}")

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
        """The metadata of a complete build here, or a one-line error saying what is wrong."""
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
