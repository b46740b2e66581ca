"""A toy TPC-C transaction, Warehouse-YTD: what adding a transaction to a workload takes.

One module like this (its inputs, its statement, how it runs, its call and answer) and
one entry in the workload's table (test_toy_transaction.py) are all: the generic session
deals it, draws its inputs, runs it on the statement path or as one call, and the
engine measures it as any other. It reads the terminal's warehouse's W_YTD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from tpsbench.core.sql import marked, to_decimal
from tpsbench.workloads.tpcc.session import TpccSession

SQL = "SELECT w_ytd FROM warehouse WHERE w_id = ?"


@dataclass(slots=True)
class WarehouseYtdInputs:
    w_id: int


@cache
def statement(mark: str) -> str:
    """The statement with the driver's parameter marker, made once per marker."""
    return str(marked(SQL, mark))


def user_inputs(session: TpccSession) -> WarehouseYtdInputs:
    return WarehouseYtdInputs(session.pick_warehouse())


def execute(session: TpccSession, inp: WarehouseYtdInputs) -> Decimal:
    """The statement path: the session commits what this returns (None would roll back)."""
    cur = session.cur
    cur.execute(statement(session.target.placeholder()), (inp.w_id,))
    return to_decimal(cur.fetchone()[0])


def call(session: TpccSession, inp: WarehouseYtdInputs) -> tuple[str, tuple]:
    """Where the run sends calls (procedures on): the same one statement, in autocommit."""
    return statement(session.target.placeholder()), (inp.w_id,)


def answer(session: TpccSession, inp: WarehouseYtdInputs, error: Exception | None) -> bool:
    if error is not None:
        raise error
    session.answer_later(decode, session.cur.fetchall(), inp)
    return True


def decode(rows: Sequence[tuple], inp: WarehouseYtdInputs) -> Decimal:
    return to_decimal(rows[0][0])
