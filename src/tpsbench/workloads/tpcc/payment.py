"""Payment (TPC-C §2.5): a customer pays; warehouse, district and customer totals move.

Statements on PostgreSQL, SQLite and SQL Server (then COMMIT):

1. ``UPDATE warehouse SET w_ytd = w_ytd + :h ... RETURNING`` its name and address;
2. ``UPDATE district SET d_ytd = d_ytd + :h ... RETURNING`` its name and address;
3. ``UPDATE customer ... RETURNING`` the customer's columns. By last name (60%), the row
   is picked inside the same statement: ``c_id = (SELECT .. ROW_NUMBER() OVER (ORDER BY
   c_first) .. WHERE 2*rn - n IN (0, 1))`` is the §2.5.2.2 middle row, 1-based
   ceil(n/2), 0-based (n-1)//2 of the rows ordered by C_FIRST. For a bad-credit
   customer (C_CREDIT = 'BC') the statement itself prepends
   "C_ID C_D_ID C_W_ID D_ID W_ID H_AMOUNT" to C_DATA and keeps 500 characters, so the
   old C_DATA never travels to the client and back;
4. ``INSERT INTO history`` with H_DATA = W_NAME + 4 spaces + D_NAME.

4 statements + COMMIT, against 7-8 in the spec's select-then-update form. Every
update is relative (``x = x + :h``), so no row needs a read lock first.

MySQL has no UPDATE ... RETURNING: one SELECT reads the three rows (the customer chosen
the same way), then one multi-table ``UPDATE warehouse, district, customer`` does the
three updates, then the INSERT: 3 statements + COMMIT. Its C_BALANCE shown is the one
read minus H_AMOUNT.

Remote customers (15%) are in another warehouse and a random district; with one
warehouse, the home warehouse and a random district.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tpsbench.core.sql import to_decimal
from tpsbench.workloads.tpcc.mix import Draws
from tpsbench.workloads.tpcc.sql import Statements

#: §2.5.1.3 H_AMOUNT range, in cents
AMOUNT_MIN_CENTS, AMOUNT_MAX_CENTS = 100, 500_000


@dataclass(slots=True)
class PaymentInputs:
    w_id: int
    d_id: int
    c_w_id: int
    c_d_id: int
    #: exactly one of c_id and c_last is set
    c_id: int | None
    c_last: str | None
    h_amount: Decimal


@dataclass(slots=True)
class PaymentOutput:
    c_id: int
    c_credit: str
    #: C_BALANCE after the payment
    c_balance: Decimal


def inputs(draw: Draws, w_id: int) -> PaymentInputs:
    """§2.5.1: 85% home customer, 15% remote; 60% by last name; H_AMOUNT 1.00-5000.00."""
    d_id = next(draw.districts)
    if next(draw.percents) <= 85:
        c_w_id, c_d_id = w_id, d_id
    else:
        c_w_id, c_d_id = draw.other_warehouse(w_id), next(draw.districts)
    c_id, c_last = draw.customer()
    return PaymentInputs(w_id, d_id, c_w_id, c_d_id, c_id, c_last, draw.money(AMOUNT_MIN_CENTS, AMOUNT_MAX_CENTS))


def customer_key(c_w_id: int, c_d_id: int, c_id: int | None, c_last: str | None) -> tuple[str, tuple]:
    """Which CUSTOMER_KEY statement variant to run and its parameters after C_W_ID, C_D_ID."""
    if c_last is None:
        return "id", (c_id,)
    return "name", (c_w_id, c_d_id, c_last)


def execute(cur: Any, s: Statements, inp: PaymentInputs) -> PaymentOutput:
    """Run the payment on ``cur``, leaving the transaction open for the caller to commit."""
    w_id, d_id, c_w_id, c_d_id = inp.w_id, inp.d_id, inp.c_w_id, inp.c_d_id
    h = s.bind_money(inp.h_amount)
    by, key = customer_key(c_w_id, c_d_id, inp.c_id, inp.c_last)
    # C_DATA prefix after C_ID, which the statement prepends itself (by name it is not known yet)
    prefix = f" {c_d_id} {c_w_id} {d_id} {w_id} {inp.h_amount} "
    if s.returning:
        cur.execute(s.pay_warehouse, (h, w_id))
        warehouse = _one(cur, "warehouse", w_id)
        cur.execute(s.pay_district, (h, w_id, d_id))
        district = _one(cur, "district", (w_id, d_id))
        cur.execute(s.pay_customer[by], (h, h, prefix, c_w_id, c_d_id, *key))
        customer = _one(cur, "customer", (c_w_id, c_d_id, inp.c_id or inp.c_last))
        balance = to_decimal(customer[14])
    else:
        cur.execute(s.pay_select[by], (w_id, d_id, c_w_id, c_d_id, *key))
        row = _one(cur, "warehouse/district/customer", (w_id, d_id, c_w_id, c_d_id, inp.c_id or inp.c_last))
        warehouse, district, customer = row[:6], row[6:12], row[12:]
        cur.execute(s.pay_update, (h, h, h, h, prefix, w_id, w_id, d_id, c_w_id, c_d_id, customer[0]))
        if cur.rowcount != 3:
            raise LookupError(f"Payment: the update changed {cur.rowcount} rows, not 3")
        balance = to_decimal(customer[14]) - inp.h_amount
    c_id = customer[0]
    cur.execute(s.pay_history, (c_id, c_d_id, c_w_id, d_id, w_id, h, f"{warehouse[0]}    {district[0]}"))
    return PaymentOutput(c_id, customer[11], balance)


def _one(cur: Any, what: str, key: object) -> tuple:
    row = cur.fetchone()
    if row is None:
        raise LookupError(f"Payment: no {what} {key}")
    return row
