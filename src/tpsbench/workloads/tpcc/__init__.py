"""TPC-C-like workload: nine tables, warehouses as the scale, five transactions.

Loading follows TPC-C clause 4.3 (see loader.py), checking clause 3.3.2 (checks.py).
The module-level ``WORKLOAD`` makes the package discoverable by name ("tpcc").

Each transaction's inputs and output are slotted dataclasses that nothing mutates, and
not frozen ones: two are made per transaction on the driver's hot path, and a frozen
dataclass's ``__init__`` (``object.__setattr__`` per field) costs four times as much.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tpsbench.core.batch import Batch
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.procedures import install_for_run
from tpsbench.core.session import Background, RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.transactions import TransactionTable
from tpsbench.core.workload import Check, LoadParams, LoadTask, Workload
from tpsbench.workloads.tpcc import counts, deferred, loader
from tpsbench.workloads.tpcc.checks import CHECKS
from tpsbench.workloads.tpcc.session import DELIVERY_MODES, RUN_OPTIONS, TpccSession, uses_procedures
from tpsbench.workloads.tpcc.statements import statements
from tpsbench.workloads.tpcc.table import TABLE

#: users one worker hosts with stored procedures before a step spreads over another (users_per_worker)
USERS_PER_WORKER = 100


class TpccWorkload(Workload):
    """TPC-C-like: New-Order, Payment, Order-Status, Delivery and Stock-Level, 45/43/4/4/4.

    Each user keeps a home warehouse (user number modulo warehouses) unless
    --warehouses all. The 1% New-Order rollback counts as an expected rollback, not an
    error; tpmC counts committed New-Orders per minute of the steady state.

    With --delivery deferred a terminal queues its Delivery and goes on, and executors
    beside the users run it (clause 2.7.2); the report then shows its time in the queue
    and its execution apart (delivery_queue, delivery_execution).

    The transactions are :attr:`table` (table.py); a workload derived from this one adds
    a transaction by naming an extended table and its names (docs/extending.md).
    """

    name = "tpcc"
    tables = ("warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock")
    scale_unit = "warehouses"
    run_options = RUN_OPTIONS
    spec_waits = True
    #: the transactions its sessions run (TpccSession gets it)
    table: TransactionTable[Any] = TABLE
    transaction_names = TABLE.names
    main_metric = ("tpmC", "new_order", 60.0)
    #: delivery=deferred (configure); then, in a worker, this step's executors' queues
    deferred_delivery = False
    delivery_queues: tuple[deferred.DeliveryQueue, ...] = ()

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
    def configure(self, options: Mapping[str, str]) -> None:
        """Refuse unknown options and unknown delivery modes; deferred mode adds
        the timings its executors record (set on the instance, which travels to the workers)."""
        super().configure(options)
        mode = options.get("delivery", "inline")
        if mode not in DELIVERY_MODES:
            raise TpsbenchError(f"TPC-C option delivery={mode!r}: use one of {', '.join(DELIVERY_MODES)}")
        self.deferred_delivery = mode == "deferred"
        self.table.shares(options.get("mix", ""))  # refused now, not in every worker
        self.timing_names = deferred.TIMINGS if self.deferred_delivery else ()

    def background(self, ctx: RunContext, worker: int, workers: int) -> Sequence[Background]:
        """Deferred mode: this worker's Delivery executors for the step (deferred.executors
        says how many), whose queues the step's terminals then get (open_session)."""
        if not self.deferred_delivery:
            return ()
        executors = deferred.components(ctx, self.table)
        self.delivery_queues = tuple(executor.queue for executor in executors)
        return executors

    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        if not self.deferred_delivery:
            return TpccSession(ctx, user_id, users, conn, target, self.table)
        if not self.delivery_queues:
            raise TpsbenchError("TPC-C delivery=deferred: the terminals need the worker's executors (background())")
        return deferred.DeferringTerminal(ctx, user_id, users, conn, target, self.delivery_queues, self.table)

    def __getstate__(self) -> dict[str, Any]:
        """Without a step's queues (locks), which belong to the worker process that made them."""
        return {k: v for k, v in vars(self).items() if k != "delivery_queues"}

    def prepare_run(self, target: Target, options: Mapping[str, str], users: int) -> str | None:
        """Install the stored procedures when the run calls them (procedures=on/auto)."""
        if not uses_procedures(dict(options), statements(target.sql)):
            return None
        names, note = install_for_run(self, target, users)
        return (f"tpcc: one stored-procedure call per transaction ({', '.join(names)}; --procedures off: statements)"
                + (f"\n{note}" if note else ""))

    def users_per_worker(self, target: Target, options: Mapping[str, str]) -> int:
        """100 with stored procedures: a call keeps the server busy far longer than the
        client, and users sharing one worker's thread cost the client less each (more
        results per wake-up): one worker spent less driver CPU per transaction than two,
        at the same TPS (bench/results/engine_tpcc.txt). The statement path, a thread
        per user and several round trips per transaction, spreads as before."""
        return USERS_PER_WORKER if uses_procedures(dict(options), statements(target.sql)) else 1

    def database_counts(self, conn: Any) -> dict[str, int]:
        return counts.database_counts(conn)

    def expected_counts(self, commits: dict[str, int]) -> dict[str, int]:
        return counts.expected_counts(commits)


WORKLOAD = TpccWorkload
