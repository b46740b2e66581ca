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

With stored procedures (procedures.py) the payment is one call of ``tpcc_payment``,
answering with the customer's id, credit and new balance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

from tpsbench.core.procedures import call_statement
from tpsbench.core.sql import SqlDialect, concat, marked, money_sql, to_decimal
from tpsbench.workloads.tpcc import procedures
from tpsbench.workloads.tpcc.draws import Draws
from tpsbench.workloads.tpcc.sql import CUSTOMER_KEY, customer_key, returning

if TYPE_CHECKING:
    from tpsbench.workloads.tpcc.session import TpccSession

#: §2.5.1.3 H_AMOUNT range, in cents
AMOUNT_MIN_CENTS, AMOUNT_MAX_CENTS = 100, 500_000
#: Customer columns shown by Payment (§2.5.3.3), in order
PAY_CUSTOMER = (
    "c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, "
    "c_since, c_credit, c_credit_lim, c_discount, c_balance"
)
PAY_WAREHOUSE = "w_name, w_street_1, w_street_2, w_city, w_state, w_zip"
PAY_DISTRICT = "d_name, d_street_1, d_street_2, d_city, d_state, d_zip"
#: the procedure's parameter types, in order (call_statement casts to them where it must)
PROCEDURE_PARAMS = ("INTEGER",) * 5 + ("VARCHAR", "NUMERIC")


@dataclass(frozen=True, slots=True)
class PaymentSql:
    """Payment's statements for one dialect and marker. Where DML returns rows (all but
    MySQL) ``warehouse``, ``district`` and ``customer`` (by "id" or "name") update and
    return; MySQL reads with ``select`` and writes with ``update``. A dialect's unused
    statements are "" (empty mappings), as ``call`` where it calls no routines."""

    warehouse: str
    district: str
    customer: dict[str, str]
    select: dict[str, str]
    update: str
    history: str
    call: str


def statements(d: SqlDialect, mark: str) -> PaymentSql:
    """The statements of the module docstring in ``d``'s SQL with the driver's ``mark``."""
    m = partial(marked, mark=mark)
    money = partial(money_sql, d)
    prepended = concat(d, "c_id", "?", "c_data")
    c_data = f"CASE WHEN c_credit = 'BC' THEN SUBSTRING({prepended}, 1, 500) ELSE c_data END"
    pay_customer = (
        f"c_balance = {money('c_balance - ?')}, c_ytd_payment = {money('c_ytd_payment + ?')},"
        f" c_payment_cnt = c_payment_cnt + 1, c_data = {c_data}"
    )
    warehouse = district = update = ""
    customer: dict[str, str] = {}
    select: dict[str, str] = {}
    if d.returning:
        warehouse = returning(d, f"UPDATE warehouse SET w_ytd = {money('w_ytd + ?')}", "WHERE w_id = ?", PAY_WAREHOUSE)
        district = returning(d, f"UPDATE district SET d_ytd = {money('d_ytd + ?')}", "WHERE d_w_id = ? AND d_id = ?",
                             PAY_DISTRICT)
        customer = {
            by: returning(d, f"UPDATE customer SET {pay_customer}", f"WHERE c_w_id = ? AND c_d_id = ? AND {key}",
                          PAY_CUSTOMER)
            for by, key in CUSTOMER_KEY.items()
        }
    else:  # MySQL: one read of all three rows, then one multi-table UPDATE
        select = {
            by: f"SELECT {PAY_WAREHOUSE}, {PAY_DISTRICT}, {PAY_CUSTOMER} FROM warehouse, district, customer"
            f" WHERE w_id = ? AND d_w_id = w_id AND d_id = ? AND c_w_id = ? AND c_d_id = ? AND {key}"
            for by, key in CUSTOMER_KEY.items()
        }
        update = (
            f"UPDATE warehouse, district, customer SET w_ytd = w_ytd + ?, d_ytd = d_ytd + ?, {pay_customer}"
            " WHERE w_id = ? AND d_w_id = ? AND d_id = ? AND c_w_id = ? AND c_d_id = ? AND c_id = ?"
        )
    return PaymentSql(
        warehouse=m(warehouse), district=m(district), customer=m(customer), select=m(select), update=m(update),
        history=m("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)"
                  " VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)"),
        call=m(call_statement(d, "tpcc_payment", PROCEDURE_PARAMS)) if d.call else "",
    )


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


def user_inputs(session: TpccSession) -> PaymentInputs:
    """A terminal's payment: :func:`inputs` for its warehouse (the table's entry)."""
    return inputs(session.draw, session.pick_warehouse())


def execute(session: TpccSession, inp: PaymentInputs) -> PaymentOutput:
    """Run the payment on the session's cursor, leaving the transaction open for the
    session to commit."""
    cur, s = session.cur, session.stmts.payment
    w_id, d_id, c_w_id, c_d_id = inp.w_id, inp.d_id, inp.c_w_id, inp.c_d_id
    h = session.stmts.bind_money(inp.h_amount)
    by, key = customer_key(c_w_id, c_d_id, inp.c_id, inp.c_last)
    # C_DATA prefix after C_ID, which the statement prepends itself (by name it is not known yet)
    prefix = f" {c_d_id} {c_w_id} {d_id} {w_id} {inp.h_amount} "
    if session.stmts.returning:
        cur.execute(s.warehouse, (h, w_id))
        warehouse = _one(cur, "warehouse", w_id)
        cur.execute(s.district, (h, w_id, d_id))
        district = _one(cur, "district", (w_id, d_id))
        cur.execute(s.customer[by], (h, h, prefix, c_w_id, c_d_id, *key))
        customer = _one(cur, "customer", (c_w_id, c_d_id, inp.c_id or inp.c_last))
        balance = to_decimal(customer[14])
    else:
        cur.execute(s.select[by], (w_id, d_id, c_w_id, c_d_id, *key))
        row = _one(cur, "warehouse/district/customer", (w_id, d_id, c_w_id, c_d_id, inp.c_id or inp.c_last))
        warehouse, district, customer = row[:6], row[6:12], row[12:]
        cur.execute(s.update, (h, h, h, h, prefix, w_id, w_id, d_id, c_w_id, c_d_id, customer[0]))
        if cur.rowcount != 3:
            raise LookupError(f"Payment: the update changed {cur.rowcount} rows, not 3")
        balance = to_decimal(customer[14]) - inp.h_amount
    c_id = customer[0]
    cur.execute(s.history, (c_id, c_d_id, c_w_id, d_id, w_id, h, f"{warehouse[0]}    {district[0]}"))
    return PaymentOutput(c_id, customer[11], balance)


def _one(cur: Any, what: str, key: object) -> tuple:
    row = cur.fetchone()
    if row is None:
        raise LookupError(f"Payment: no {what} {key}")
    return row


def call(session: TpccSession, inp: PaymentInputs) -> tuple[str, tuple]:
    """The procedure's call: by C_ID, or by C_LAST when c_id is None."""
    s = session.stmts
    return s.payment.call, (inp.w_id, inp.d_id, inp.c_w_id, inp.c_d_id, inp.c_id, inp.c_last,
                            s.bind_money(inp.h_amount))


def answer(session: TpccSession, inp: PaymentInputs, error: Exception | None) -> bool:
    """The call's row, kept for :func:`decode`; an error is raised as it is."""
    return procedures.answered(session, "payment", decode, inp, error)


def decode(rows: Sequence[tuple], inp: PaymentInputs) -> PaymentOutput:
    """The output, from the call's row."""
    c_id, c_credit, c_balance = rows[0]
    return PaymentOutput(int(c_id), c_credit, to_decimal(c_balance))
