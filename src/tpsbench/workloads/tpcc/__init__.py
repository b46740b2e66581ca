"""TPC-C-like workload: nine tables, warehouses as the scale, five transactions.

Loading follows TPC-C clause 4.3 (see loader.py), checking clause 3.3.2 (checks.py).
The module-level ``WORKLOAD`` makes the package discoverable by name ("tpcc").
"""

from __future__ import annotations

from collections.abc import Iterator

from tpsbench.api.batch import Batch
from tpsbench.api.workload import Check, LoadParams, LoadTask, Workload
from tpsbench.workloads.tpcc import loader
from tpsbench.workloads.tpcc.checks import CHECKS


class TpccWorkload(Workload):
    name = "tpcc"
    tables = ("warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock")
    scale_unit = "warehouses"

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


WORKLOAD = TpccWorkload
