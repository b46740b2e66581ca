"""TPC-C-like workload: nine tables, warehouses as the scale, five transactions.

Loading follows TPC-C clause 4.3 (see loader.py), checking clause 3.3.2 (checks.py).
The module-level ``WORKLOAD`` makes the package discoverable by name ("tpcc").

Each transaction's inputs and output are slotted dataclasses that nothing mutates, and
not frozen ones: two are made per transaction on the driver's hot path, and a frozen
dataclass's ``__init__`` (``object.__setattr__`` per field) costs four times as much.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.schema import install_routines
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.workload import Check, LoadParams, LoadTask, Workload
from tpsbench.workloads.tpcc import counts, loader, mix
from tpsbench.workloads.tpcc.checks import CHECKS
from tpsbench.workloads.tpcc.session import RUN_OPTIONS, TpccSession, uses_procedures
from tpsbench.workloads.tpcc.sql import statements

#: users one worker hosts with stored procedures before a step spreads over another (users_per_worker)
USERS_PER_WORKER = 100


class TpccWorkload(Workload):
    """TPC-C-like: New-Order, Payment, Order-Status, Delivery and Stock-Level, 45/43/4/4/4.

    Each user keeps a home warehouse (user number modulo warehouses) unless
    --warehouses all. The 1% New-Order rollback counts as an expected rollback, not an
    error; tpmC counts committed New-Orders per minute of the steady state.
    """

    name = "tpcc"
    tables = ("warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock")
    scale_unit = "warehouses"
    run_options = RUN_OPTIONS
    transaction_names = mix.TRANSACTIONS
    main_metric = ("tpmC", "new_order", 60.0)

    def constants(self, seed: int) -> dict[str, int]:
        return loader.constants(seed)

    def tasks(self, scale: int) -> list[LoadTask]:
        # ITEM first: it is one task the size of a fraction of a warehouse, and the
        # warehouses then spread evenly over the workers.
        return [LoadTask("item")] + [LoadTask("warehouse", (w,)) for w in range(1, scale + 1)]

    def generate(self, task: LoadTask, params: LoadParams) -> Iterator[Batch]:
        return loader.generate(task, params)

    def expected_rows(self, scale: int, seed: int) -> dict[str, int]:
        return loader.expected_rows(scale, seed)

    def checks(self) -> list[Check]:
        return CHECKS

    # -- running ------------------------------------------------------------------------
    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        return TpccSession(ctx, user_id, users, conn, target)

    def prepare_run(self, target: Target, options: Mapping[str, str]) -> str | None:
        """Install the stored procedures when the run calls them (procedures=on/auto)."""
        if not uses_procedures(dict(options), statements(target.sql)):
            return None
        try:
            names = install_routines(self, target)
        except TpsbenchError as exc:
            raise TpsbenchError(f"{exc} (run with --procedures off to send statements instead)") from exc
        return f"tpcc: one stored-procedure call per transaction ({', '.join(names)}; --procedures off: statements)"

    def users_per_worker(self, target: Target, options: Mapping[str, str]) -> int:
        """100 with stored procedures: a call keeps the server busy for some 400 us and
        the client for about a tenth of that, and users sharing one worker's thread cost
        the client less each (more results per wake-up). Measured with 8, 50 and 100
        users on 2 cores: one worker spent 18-27% less driver CPU per transaction than
        two, at the same TPS (bench/results/engine_tpcc.txt). The statement path, a
        thread per user and several round trips per transaction, spreads as before."""
        return USERS_PER_WORKER if uses_procedures(dict(options), statements(target.sql)) else 1

    def database_counts(self, conn: Any) -> dict[str, int]:
        return counts.database_counts(conn)

    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        return counts.expected_counts(commits)


WORKLOAD = TpccWorkload
