"""Order-Status (TPC-C §2.6), read-only: a customer's balance and last order with its lines.

One statement (then COMMIT, which ends the read transaction): the customer, by C_ID
(40%) or as the §2.5.2.2 middle row of its last name (60%, the same ROW_NUMBER subquery
as Payment), LEFT JOIN its last order (``o_id = (SELECT MAX(o_id) ...)``, one backward
probe of the orders-by-customer index, the spec's ``ORDER BY o_id DESC`` first row) LEFT
JOIN that order's lines. The customer and order columns repeat on each line row; a
customer with no order yet would come back with NULL order columns.

Against the spec's three or four SELECTs this is one round trip; each SELECT of the
spec is a primary-key or index probe here too, so the server does the same work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tpsbench.core.sql import to_decimal
from tpsbench.workloads.tpcc.mix import Draws
from tpsbench.workloads.tpcc.payment import customer_key
from tpsbench.workloads.tpcc.sql import Statements


@dataclass(slots=True)
class OrderStatusInputs:
    w_id: int
    d_id: int
    #: exactly one of c_id and c_last is set
    c_id: int | None
    c_last: str | None


@dataclass(slots=True)
class OrderStatusOutput:
    c_id: int
    c_balance: Decimal
    o_id: int | None
    o_carrier_id: int | None
    #: (OL_I_ID, OL_SUPPLY_W_ID, OL_QUANTITY, OL_AMOUNT, OL_DELIVERY_D) per line
    lines: tuple[tuple, ...]


def inputs(draw: Draws, w_id: int) -> OrderStatusInputs:
    """§2.6.1: a random district of the home warehouse; 60% by last name."""
    d_id = next(draw.districts)
    c_id, c_last = draw.customer()
    return OrderStatusInputs(w_id, d_id, c_id, c_last)


def request(s: Statements, inp: OrderStatusInputs) -> tuple[str, tuple]:
    """The statement and its parameters."""
    by, key = customer_key(inp.w_id, inp.d_id, inp.c_id, inp.c_last)
    return s.os_query[by], (inp.w_id, inp.d_id, *key)


def answer(rows: Sequence[tuple], inp: OrderStatusInputs) -> OrderStatusOutput:
    """The output, from the statement's rows."""
    if not rows:
        raise LookupError(f"Order-Status: no customer {inp.c_id or inp.c_last} in district ({inp.w_id}, {inp.d_id})")
    first = rows[0]
    lines = tuple(tuple(row[8:]) for row in rows if row[8] is not None)
    return OrderStatusOutput(first[0], to_decimal(first[1]), first[5], first[7], lines)


def execute(cur: Any, s: Statements, inp: OrderStatusInputs) -> OrderStatusOutput:
    """Read the customer's last order on ``cur``; the caller commits."""
    cur.execute(*request(s, inp))
    return answer(cur.fetchall(), inp)
