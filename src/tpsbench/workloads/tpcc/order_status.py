"""Order-Status (TPC-C §2.6), read-only: a customer's balance and last order with its lines.

One statement (then COMMIT, which ends the read transaction): the customer, by C_ID
(40%) or as the §2.5.2.2 middle row of its last name (60%, the same ROW_NUMBER subquery
as Payment), LEFT JOIN its last order (``o_id = (SELECT MAX(o_id) ...)``, one backward
probe of the orders-by-customer index, the spec's ``ORDER BY o_id DESC`` first row) LEFT
JOIN that order's lines. The customer and order columns repeat on each line row; a
customer with no order yet would come back with NULL order columns.

Against the spec's three or four SELECTs this is one round trip; each SELECT of the
spec is a primary-key or index probe here too, so the server does the same work.

With stored procedures on, the one statement goes as it is, in autocommit (:func:`call`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect, marked, to_decimal
from tpsbench.workloads.tpcc import procedures
from tpsbench.workloads.tpcc.draws import Draws
from tpsbench.workloads.tpcc.sql import CUSTOMER_KEY, customer_key

if TYPE_CHECKING:
    from tpsbench.workloads.tpcc.session import TpccSession


@dataclass(frozen=True, slots=True)
class OrderStatusSql:
    """Order-Status's one statement for one dialect and marker, by "id" or "name"."""

    query: dict[str, str]


def statements(d: SqlDialect, mark: str) -> OrderStatusSql:
    """The statement of the module docstring in ``d``'s SQL with the driver's ``mark``."""
    return OrderStatusSql(marked({
        by: "SELECT c_id, c_balance, c_first, c_middle, c_last, o_id, o_entry_d, o_carrier_id,"
        " ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d"
        " FROM customer"
        " LEFT JOIN orders ON o_w_id = c_w_id AND o_d_id = c_d_id AND o_c_id = c_id AND o_id ="
        " (SELECT MAX(o2.o_id) FROM orders o2 WHERE o2.o_w_id = c_w_id AND o2.o_d_id = c_d_id AND o2.o_c_id = c_id)"
        " LEFT JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id"
        f" WHERE c_w_id = ? AND c_d_id = ? AND {key}"
        for by, key in CUSTOMER_KEY.items()
    }, mark))


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


def user_inputs(session: TpccSession) -> OrderStatusInputs:
    """A terminal's look-up: :func:`inputs` for its warehouse (the table's entry)."""
    return inputs(session.draw, session.pick_warehouse())


def call(session: TpccSession, inp: OrderStatusInputs) -> tuple[str, tuple]:
    """The statement and its parameters."""
    by, key = customer_key(inp.w_id, inp.d_id, inp.c_id, inp.c_last)
    return session.stmts.order_status.query[by], (inp.w_id, inp.d_id, *key)


def answer(session: TpccSession, inp: OrderStatusInputs, error: Exception | None) -> bool:
    """The statement's rows, kept for :func:`decode`; an error is raised as it is."""
    return procedures.answered(session, "order_status", decode, inp, error)


def decode(rows: Sequence[tuple], inp: OrderStatusInputs) -> OrderStatusOutput:
    """The output, from the statement's rows."""
    if not rows:
        raise LookupError(f"Order-Status: no customer {inp.c_id or inp.c_last} in district ({inp.w_id}, {inp.d_id})")
    first = rows[0]
    lines = tuple(tuple(row[8:]) for row in rows if row[8] is not None)
    return OrderStatusOutput(first[0], to_decimal(first[1]), first[5], first[7], lines)


def execute(session: TpccSession, inp: OrderStatusInputs) -> OrderStatusOutput:
    """Read the customer's last order on the session's cursor; the session commits."""
    cur = session.cur
    cur.execute(*call(session, inp))
    return decode(cur.fetchall(), inp)
