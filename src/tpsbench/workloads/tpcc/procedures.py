"""TPC-C as stored procedures: one call, one round trip, per transaction.

This is how HammerDB drives TPC-C on PostgreSQL and MySQL, and why its client costs
little: the transaction's logic runs inside the server (``schemas/tpcc/<db>.sql``, after
``-- procedures``), and the driver only draws the inputs, sends one call and reads one
row. With the statement path (the other modules) a New-Order costs the driver eight
round trips and a COMMIT; on a 2-core machine every one of them takes CPU from the
database (bench/results/engine_tpcc.txt).

The connection is in autocommit mode, so that the call is the whole transaction:

- PostgreSQL runs the function as one implicit transaction. The 1% New-Order rollback
  raises SQLSTATE ``TPCC1`` inside the function; the server then rolls the whole
  transaction back, and the driver counts it as the expected rollback it is.
- MySQL/MariaDB procedures open and commit their own transaction (in autocommit each of
  their statements would otherwise commit on its own), roll back on any error before
  passing it on, and roll back the 1% New-Order themselves, answering with a NULL O_ID.

Inputs are drawn by the driver exactly as for the statement path (new_order.inputs
and friends), so the same seed gives the same transactions either way; the outputs are
the same dataclasses. Order-Status and Stock-Level are one statement each already and
run as such, in autocommit. Each transaction is split in two (:data:`CALLS`): the
statement to send, and its result read back (or :func:`failed`), so that the engine can
send one user's call and wait on many users' sockets at once (tpsbench.engine.multiplex).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tpsbench.core.procedures import requested_rollback
from tpsbench.core.sql import to_decimal
from tpsbench.workloads.tpcc import order_status, stock_level
from tpsbench.workloads.tpcc.delivery import DeliveryInputs, DeliveryOutput
from tpsbench.workloads.tpcc.new_order import NewOrderInputs, NewOrderOutput
from tpsbench.workloads.tpcc.payment import PaymentInputs, PaymentOutput
from tpsbench.workloads.tpcc.sql import Statements

#: the SQLSTATE of PostgreSQL's tpcc_new_order for an unused item (§2.4.2.3)
ROLLBACK_SQLSTATE = "TPCC1"


def available(s: Statements) -> bool:
    """True where the dialect calls routines (PostgreSQL, MySQL/MariaDB); the DDL file
    of the database then has the procedures."""
    return s.call_new_order is not None


def failed(name: str, error: Exception) -> None:
    """A call of ``name`` raised ``error``: return if it is New-Order's expected rollback
    (which the procedure or its server has done), raise it otherwise."""
    if name != "new_order" or not requested_rollback(error, ROLLBACK_SQLSTATE):
        raise error


def _new_order_request(s: Statements, inp: NewOrderInputs) -> tuple[str, tuple]:
    """The lines go as three lists of numbers in the dialect's ``int_list`` form
    (PostgreSQL array literals, comma-separated text for MySQL, which has no array
    parameters); every driver sends text alike.

    Numbers by str(), not looked up in a table of their texts: the table (6 MB for every
    item id) saved instructions, but each lookup of a random item missed the caches the
    database had just filled (perf: a twentieth of the worker's CPU in tuple lookups)."""
    supply = ",".join([str(inp.w_id)] * len(inp.supply) if inp.all_local else map(str, inp.supply))
    items, quantities = ",".join(map(str, inp.items)), ",".join(map(str, inp.quantities))
    form = s.dialect.int_list
    if form != "%s":
        items, supply, quantities = form % items, form % supply, form % quantities
    return s.call_new_order, (inp.w_id, inp.d_id, inp.c_id, inp.all_local, items, supply, quantities)


def _new_order_answer(rows: Sequence[tuple], inp: NewOrderInputs) -> NewOrderOutput | None:
    row = rows[0]
    if row[0] is None:  # MySQL's procedure rolled back the unused item itself
        return None
    o_id, c_last, c_credit, brands, amount, discount, w_tax, d_tax = row
    return NewOrderOutput(int(o_id), c_last, c_credit, inp.all_local, brands, amount, discount, w_tax, d_tax)


def _payment_request(s: Statements, inp: PaymentInputs) -> tuple[str, tuple]:
    """By C_ID, or by C_LAST when c_id is None."""
    return s.call_payment, (inp.w_id, inp.d_id, inp.c_w_id, inp.c_d_id, inp.c_id, inp.c_last,
                            s.bind_money(inp.h_amount))


def _payment_answer(rows: Sequence[tuple], inp: PaymentInputs) -> PaymentOutput:
    c_id, c_credit, c_balance = rows[0]
    return PaymentOutput(int(c_id), c_credit, to_decimal(c_balance))


def _delivery_request(s: Statements, inp: DeliveryInputs) -> tuple[str, tuple]:
    return s.call_delivery, (inp.w_id, inp.o_carrier_id)


def _delivery_answer(rows: Sequence[tuple], inp: DeliveryInputs) -> DeliveryOutput:
    """The procedure's text answer lists the O_ID delivered per district, 0 for none."""
    (text,) = rows[0]
    o_ids = [int(value) for value in text.split(",")]
    delivered = tuple((d_id, o_id) for d_id, o_id in enumerate(o_ids, 1) if o_id)
    skipped = tuple(d_id for d_id, o_id in enumerate(o_ids, 1) if not o_id)
    return DeliveryOutput(delivered, skipped)


def result(cur: Any, name: str) -> Sequence[tuple]:
    """The rows of ``name``'s call, not yet converted where the cursor keeps them so
    (LazyRows: its answer is decoded when someone reads it, TpccSession.last_output);
    then any further results (MySQL's CALL status) are drained. Every call answers
    with a row: none is an error."""
    rows = cur.fetchall()
    nextset = getattr(cur, "nextset", None)
    while nextset is not None and nextset():
        pass
    if not rows:
        raise LookupError(f"{name}: the database returned no row")
    return rows


def answers_rollback(s: Statements) -> bool:
    """Whether a New-Order call's answer can say it rolled back: where routines end their
    own transactions (MySQL) the procedure rolls the unused item back itself and answers
    with a NULL O_ID. Elsewhere (a PostgreSQL function) it raises instead (:func:`failed`),
    so its answers need no look at all."""
    return s.dialect.routines_end_transactions


#: per transaction: (the one statement and its parameters, from the inputs; the output,
#: from the call's rows), looked up once per transaction
CALLS: dict[str, tuple[Callable[[Statements, Any], tuple[str, tuple]], Callable[[Sequence[tuple], Any], Any]]] = {
    "new_order": (_new_order_request, _new_order_answer),
    "payment": (_payment_request, _payment_answer),
    "delivery": (_delivery_request, _delivery_answer),
    "order_status": (order_status.request, order_status.answer),
    "stock_level": (stock_level.request, stock_level.answer),
}
