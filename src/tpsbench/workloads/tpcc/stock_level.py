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
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect, marked
from tpsbench.workloads.tpcc import procedures
from tpsbench.workloads.tpcc.draws import Draws

if TYPE_CHECKING:
    from tpsbench.workloads.tpcc.session import TpccSession

#: §2.8.1.2 threshold range
THRESHOLD_MIN, THRESHOLD_MAX = 10, 20


@dataclass(frozen=True, slots=True)
class StockLevelSql:
    """Stock-Level's one statement for one dialect and marker."""

    count: str


def statements(d: SqlDialect, mark: str) -> StockLevelSql:
    """The statement of the module docstring with the driver's ``mark`` (the same SQL everywhere)."""
    return StockLevelSql(marked(
        "SELECT COUNT(DISTINCT s_i_id) FROM district"
        " JOIN order_line ON ol_w_id = d_w_id AND ol_d_id = d_id"
        " AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20"
        " JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id"
        " WHERE d_w_id = ? AND d_id = ? AND s_quantity < ?", mark))


@dataclass(slots=True)
class StockLevelInputs:
    w_id: int
    d_id: int
    threshold: int


def inputs(draw: Draws, w_id: int, d_id: int) -> StockLevelInputs:
    """§2.8.1: the terminal's own (warehouse, district) and a threshold in 10..20."""
    return StockLevelInputs(w_id, d_id, draw.uniform(THRESHOLD_MIN, THRESHOLD_MAX))


def user_inputs(session: TpccSession) -> StockLevelInputs:
    """A terminal's count: :func:`inputs` for its warehouse and its own district (the table's entry)."""
    return inputs(session.draw, session.pick_warehouse(), session.home_d)


def call(session: TpccSession, inp: StockLevelInputs) -> tuple[str, tuple]:
    """The statement and its parameters."""
    return session.stmts.stock_level.count, (inp.w_id, inp.d_id, inp.threshold)


def answer(session: TpccSession, inp: StockLevelInputs, error: Exception | None) -> bool:
    """The statement's row, kept for :func:`decode`; an error is raised as it is."""
    return procedures.answered(session, "stock_level", decode, inp, error)


def decode(rows: Sequence[tuple], inp: StockLevelInputs) -> int:
    """The number of low-stock items, from the statement's row."""
    return int(rows[0][0])


def execute(session: TpccSession, inp: StockLevelInputs) -> int:
    """Count the low-stock items on the session's cursor; the session commits (ends the
    read transaction)."""
    cur = session.cur
    cur.execute(*call(session, inp))
    return decode(cur.fetchall(), inp)
