"""Stock-Level (TPC-C §2.8), read-only: distinct items of the district's last 20 orders
whose home stock is below a threshold.

One statement (then COMMIT): district JOIN order_line on the 20 order ids below
D_NEXT_O_ID JOIN stock, ``COUNT(DISTINCT s_i_id)`` with ``s_quantity < threshold``. The
spec's two SELECTs read D_NEXT_O_ID first and then the lines; joining the district row
in gives the same answer from one consistent read (§2.8.2.3 even allows read committed
between them). The warehouse and district are the terminal's fixed pair (§2.8.1.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tpsbench.workloads.tpcc.mix import Draws
from tpsbench.workloads.tpcc.sql import Statements

#: §2.8.1.2 threshold range
THRESHOLD_MIN, THRESHOLD_MAX = 10, 20


@dataclass(slots=True)
class StockLevelInputs:
    w_id: int
    d_id: int
    threshold: int


def inputs(draw: Draws, w_id: int, d_id: int) -> StockLevelInputs:
    """§2.8.1: the terminal's own (warehouse, district) and a threshold in 10..20."""
    return StockLevelInputs(w_id, d_id, draw.uniform(THRESHOLD_MIN, THRESHOLD_MAX))


def request(s: Statements, inp: StockLevelInputs) -> tuple[str, tuple]:
    """The statement and its parameters."""
    return s.sl_count, (inp.w_id, inp.d_id, inp.threshold)


def answer(rows: Sequence[tuple], inp: StockLevelInputs) -> int:
    """The number of low-stock items, from the statement's row."""
    return int(rows[0][0])


def execute(cur: Any, s: Statements, inp: StockLevelInputs) -> int:
    """Count the low-stock items on ``cur``; the caller commits (ends the read transaction)."""
    cur.execute(*request(s, inp))
    return answer(cur.fetchall(), inp)
