"""New-Order (TPC-C §2.4): one order of 5-15 lines, 1% of them rolled back.

Statements, the same count on every dialect (then COMMIT, or ROLLBACK for the 1%):

1. ``UPDATE district SET d_next_o_id = d_next_o_id + 1 ... RETURNING d_next_o_id`` (SQL
   Server: OUTPUT). MySQL has no RETURNING: it sets ``LAST_INSERT_ID(d_next_o_id + 1)``,
   whose value comes back in the statement's OK packet (``cursor.lastrowid``); only a
   driver without lastrowid (ODBC) pays one more ``SELECT LAST_INSERT_ID()``. Taking the
   district row lock first is the spec's order and makes it the one hot lock.
2. One SELECT of customer x warehouse x district (three primary-key rows: c_discount,
   c_last, c_credit, w_tax, d_tax). None of these columns is ever updated, so reading
   them without a lock is what the spec's separate SELECTs would read.
3. INSERT orders; 4. INSERT new_order.
5. One ``SELECT ... FROM stock WHERE (s_w_id = ? AND s_i_id = ?) OR ... FOR UPDATE`` for
   the distinct (supply warehouse, item) pairs, with S_DIST_xx picked by a CASE on D_ID.
6. One UPDATE of those stock rows joined to a derived table of their new values. The new
   S_QUANTITY is computed here in Python, line by line in line order, so an item that
   appears on two lines gets the quantity rule applied twice, exactly as two separate
   UPDATEs would; the UPDATE then writes one final row per pair. (One UPDATE that
   subtracts each line's quantity would not be equivalent for repeated items.)
7. One ``SELECT ... FROM item WHERE i_id IN (...)``. This is where the 1% rollback is
   discovered: the unused item id (ITEMS + 1) returns no row, *after* every other line's
   stock row has been locked and updated, and the caller rolls back (§2.4.2.3). Nothing
   pre-validates the id.
8. One multi-row INSERT of all order lines (OL_AMOUNT = quantity x I_PRICE as Decimal).

So 8 statements + COMMIT, against 4 + 4 x ol_cnt (about 44) in the spec's line-by-line
form. Locking all stock rows in one statement also makes concurrent New-Orders take
their stock locks in index order, which avoids most of the line-order deadlocks.

With stored procedures (procedures.py) the order is one call of ``tpcc_new_order``, its
lines sent as three lists of numbers (:func:`call`), its answer one row (:func:`answer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

from tpsbench.core.procedures import call_statement, requested_rollback
from tpsbench.core.sql import SqlDialect, counted, marked, to_decimal
from tpsbench.workloads.tpcc import procedures
from tpsbench.workloads.tpcc.draws import Draws, take
from tpsbench.workloads.tpcc.loader import DISTRICTS_PER_WAREHOUSE, ITEMS, OL_CNT_MAX
from tpsbench.workloads.tpcc.sql import pair_keys, returning, update_from

if TYPE_CHECKING:
    from tpsbench.workloads.tpcc.session import TpccSession

#: an item id that no ITEM row has: the 1% rollback's "unused value" (§2.4.1.5)
UNUSED_ITEM = ITEMS + 1
CENT = Decimal("0.01")
#: the most order lines, hence distinct stock rows and items, one New-Order can touch
MAX_LINES = OL_CNT_MAX
#: the procedure's parameter types, in order (call_statement casts to them where it must)
PROCEDURE_PARAMS = ("INTEGER",) * 4 + ("INTEGER[]",) * 3


@dataclass(frozen=True, slots=True)
class NewOrderSql:
    """New-Order's statements for one dialect and marker; ``*_k`` are indexed by a count
    (index 0 unused); ``call`` is "" where the dialect calls no routines."""

    district: str
    #: MySQL through a driver without lastrowid (ODBC)
    last_insert_id: str
    head: str
    order: str
    new_order: str
    stock_k: tuple[str, ...]
    stock_update_k: tuple[str, ...]
    items_k: tuple[str, ...]
    lines_k: tuple[str, ...]
    call: str


def statements(d: SqlDialect, mark: str) -> NewOrderSql:
    """The statements of the module docstring in ``d``'s SQL with the driver's ``mark``."""
    m = partial(marked, mark=mark)
    if d.returning:
        district = returning(d, "UPDATE district SET d_next_o_id = d_next_o_id + 1",
                             "WHERE d_w_id = ? AND d_id = ?", "d_next_o_id")
    else:  # MySQL: the new value comes back as the connection's LAST_INSERT_ID
        district = "UPDATE district SET d_next_o_id = LAST_INSERT_ID(d_next_o_id + 1) WHERE d_w_id = ? AND d_id = ?"
    dist = " ".join(f"WHEN {i} THEN s_dist_{i:02d}" for i in range(1, DISTRICTS_PER_WAREHOUSE + 1))
    first = "SELECT " + ", ".join(f"{d.int_param} AS {name}" for name in ("w", "i", "q", "ytd", "cnt", "rmt"))
    more = "SELECT " + ", ".join([d.int_param] * 6)
    return NewOrderSql(
        district=m(district),
        last_insert_id=m("SELECT LAST_INSERT_ID()"),
        head=m("SELECT c_discount, c_last, c_credit, w_tax, d_tax FROM customer, warehouse, district"
               " WHERE w_id = ? AND d_w_id = w_id AND d_id = ? AND c_w_id = w_id AND c_d_id = d_id AND c_id = ?"),
        order=m("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)"
                " VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)"),
        new_order=m("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)"),
        stock_k=m(counted(lambda k: (
            f"SELECT s_w_id, s_i_id, s_quantity, s_data, CASE {d.int_param} {dist} END FROM stock{d.table_lock}"
            f" WHERE {pair_keys('s_w_id', 's_i_id', k)}{d.row_lock}"
        ), MAX_LINES)),
        stock_update_k=m(counted(lambda k: update_from(
            d, "stock",
            "s_quantity = v.q, s_ytd = s_ytd + v.ytd, s_order_cnt = s_order_cnt + v.cnt,"
            " s_remote_cnt = s_remote_cnt + v.rmt",
            "(" + " UNION ALL ".join([first] + [more] * (k - 1)) + ") v",
            "s_w_id = v.w AND s_i_id = v.i",
        ), MAX_LINES)),
        items_k=m(counted(lambda k: (
            f"SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({', '.join(['?'] * k)})"
        ), MAX_LINES)),
        lines_k=m(counted(lambda k: (
            "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,"
            " ol_quantity, ol_amount, ol_dist_info) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)"] * k)
        ), MAX_LINES)),
        call=m(call_statement(d, "tpcc_new_order", PROCEDURE_PARAMS)) if d.call else "",
    )


@dataclass(slots=True)
class NewOrderInputs:
    """An order's inputs. The lines are kept as three columns, as the stored procedure
    takes them and as they are drawn (a stream each), rather than as rows; ``lines`` gives
    the rows. Build one from rows with :meth:`from_lines`."""

    w_id: int
    d_id: int
    c_id: int
    #: OL_I_ID, OL_SUPPLY_W_ID and OL_QUANTITY of each line, in line order
    items: list[int]
    supply: list[int]
    quantities: list[int]
    #: True when the last line carries UNUSED_ITEM
    rollback: bool
    #: O_ALL_LOCAL: 1 when the home warehouse supplies every line
    all_local: int

    @classmethod
    def from_lines(cls, w_id: int, d_id: int, c_id: int, lines: Sequence[tuple[int, int, int]],
                   rollback: bool) -> NewOrderInputs:
        """From (OL_I_ID, OL_SUPPLY_W_ID, OL_QUANTITY) rows, in line order."""
        items, supply, quantities = ([line[k] for line in lines] for k in range(3))
        return cls(w_id, d_id, c_id, items, supply, quantities, rollback, int(supply.count(w_id) == len(supply)))

    @property
    def lines(self) -> list[tuple[int, int, int]]:
        """(OL_I_ID, OL_SUPPLY_W_ID, OL_QUANTITY) per line, in line order."""
        return list(zip(self.items, self.supply, self.quantities))


@dataclass(slots=True)
class NewOrderOutput:
    o_id: int
    c_last: str
    c_credit: str
    all_local: int
    #: "B" or "G" per line (§2.4.2.2: both I_DATA and S_DATA contain "ORIGINAL")
    brand_generic: str
    #: sum(OL_AMOUNT), C_DISCOUNT, W_TAX and D_TAX as read (Decimal, or float on SQLite)
    amount: object
    discount: object
    w_tax: object
    d_tax: object

    @property
    def total(self) -> Decimal:
        """The order's total, sum(OL_AMOUNT) x (1 - C_DISCOUNT) x (1 + W_TAX + D_TAX), in
        cents: worked out when shown, not on the driver's hot path, where Decimal
        arithmetic costs several microseconds a New-Order."""
        total = to_decimal(self.amount) * (1 - to_decimal(self.discount))
        return (total * (1 + to_decimal(self.w_tax) + to_decimal(self.d_tax))).quantize(CENT)


def inputs(draw: Draws, w_id: int) -> NewOrderInputs:
    """§2.4.1: district, NURand customer, 5-15 lines, 1% remote lines, 1% rollback."""
    d_id = next(draw.districts)
    c_id = next(draw.c_id)
    ol_cnt = next(draw.line_counts)
    rollback = next(draw.percents) == 1
    items = take(draw.ol_i_id, ol_cnt)
    if rollback:
        items[-1] = UNUSED_ITEM
    # §2.4.1.5: each line's supplier is remote 1% of the time, found by one scan in C;
    # the per-line loop runs only for the one order in ten that has a remote line
    supply = [w_id] * ol_cnt
    all_local = 1
    remote = take(draw.percents, ol_cnt)
    if 1 in remote:
        for number, value in enumerate(remote):
            if value == 1:
                supply[number] = draw.other_warehouse(w_id)  # home itself when W = 1
        all_local = int(supply.count(w_id) == ol_cnt)
    return NewOrderInputs(w_id, d_id, c_id, items, supply, take(draw.quantities, ol_cnt), rollback, all_local)


def user_inputs(session: TpccSession) -> NewOrderInputs:
    """A terminal's order: :func:`inputs` for its warehouse (the table's entry)."""
    return inputs(session.draw, session.pick_warehouse())


def execute(session: TpccSession, inp: NewOrderInputs) -> NewOrderOutput | None:
    """Run the order on the session's cursor; None when an item id is unused (the
    session rolls back). Leaves the transaction open: the session commits on a result."""
    cur, s = session.cur, session.stmts.new_order
    bind, returns = session.stmts.bind_money, session.stmts.returning
    w_id, d_id, lines = inp.w_id, inp.d_id, inp.lines
    cur.execute(s.district, (w_id, d_id))
    o_id = _next_order_id(cur, s, returns) - 1
    cur.execute(s.head, (w_id, d_id, inp.c_id))
    head = cur.fetchone()
    if head is None:
        raise LookupError(f"New-Order: no customer {inp.c_id} in district ({w_id}, {d_id})")
    c_discount, c_last, c_credit, w_tax, d_tax = head
    all_local = inp.all_local
    cur.execute(s.order, (o_id, d_id, w_id, inp.c_id, len(lines), all_local))
    cur.execute(s.new_order, (o_id, d_id, w_id))

    # stock: lock every distinct row at once, apply the lines in order, write back at once
    pairs = list(dict.fromkeys((sw, i_id) for i_id, sw, _ in lines))
    params: list[Any] = [d_id]
    for pair in pairs:
        params += pair
    cur.execute(s.stock_k[len(pairs)], params)
    stock = {(row[0], row[1]): row for row in cur.fetchall()}
    state: dict[tuple[int, int], list[int]] = {}
    for i_id, sw, qty in lines:
        row = stock.get((sw, i_id))
        if row is None:
            continue  # the unused item has no stock row; the ITEM select below decides
        st = state.get((sw, i_id))
        if st is None:
            st = state[(sw, i_id)] = [row[2], 0, 0, 0]
        q = st[0] - qty
        st[0] = q if q >= 10 else q + 91  # §2.4.2.2 quantity rule
        st[1] += qty
        st[2] += 1
        st[3] += sw != w_id
    if state:
        params = []
        for (sw, i_id), (q, ytd, cnt, remote) in state.items():
            params += (sw, i_id, q, ytd, cnt, remote)
        cur.execute(s.stock_update_k[len(state)], params)

    ids = list(dict.fromkeys(i_id for i_id, _, _ in lines))
    cur.execute(s.items_k[len(ids)], ids)
    items = {row[0]: row for row in cur.fetchall()}
    if len(items) < len(ids):
        return None  # §2.4.2.3 "Item number is not valid": roll back
    if len(state) < len(pairs):
        missing = next(p for p in pairs if p not in state)
        raise LookupError(f"New-Order: no stock row for item {missing[1]} in warehouse {missing[0]}")

    params, amounts, brands = [], [], []
    for number, (i_id, sw, qty) in enumerate(lines, 1):
        item, st_row = items[i_id], stock[(sw, i_id)]
        amount = qty * to_decimal(item[1])
        amounts.append(amount)
        brands.append("B" if "ORIGINAL" in item[3] and "ORIGINAL" in st_row[3] else "G")
        params += (o_id, d_id, w_id, number, i_id, sw, qty, bind(amount), st_row[4])
    cur.execute(s.lines_k[len(lines)], params)
    return NewOrderOutput(o_id, c_last, c_credit, all_local, "".join(brands), sum(amounts), c_discount, w_tax, d_tax)


def _next_order_id(cur: Any, s: NewOrderSql, returns: bool) -> int:
    """D_NEXT_O_ID after the increment: from RETURNING, else MySQL's LAST_INSERT_ID."""
    if returns:
        row = cur.fetchone()
        if row is None:
            raise LookupError("New-Order: no such district")
        return int(row[0])
    if cur.rowcount != 1:
        raise LookupError("New-Order: no such district")
    value = getattr(cur, "lastrowid", None)
    if not value:  # drivers without lastrowid (ODBC) ask the server
        cur.execute(s.last_insert_id)
        value = cur.fetchone()[0]
    return int(value)


def call(session: TpccSession, inp: NewOrderInputs) -> tuple[str, tuple]:
    """The procedure's call. The lines go as three lists of numbers in the dialect's
    ``int_list`` form (PostgreSQL array literals, comma-separated text for MySQL, which
    has no array parameters); every driver sends text alike.

    Numbers by str(), not looked up in a table of their texts: the table (6 MB for every
    item id) saved instructions, but each lookup of a random item missed the caches the
    database had just filled, which perf showed as the worker's CPU in tuple lookups."""
    s = session.stmts
    supply = ",".join([str(inp.w_id)] * len(inp.supply) if inp.all_local else map(str, inp.supply))
    items, quantities = ",".join(map(str, inp.items)), ",".join(map(str, inp.quantities))
    form = s.dialect.int_list
    if form != "%s":
        items, supply, quantities = form % items, form % supply, form % quantities
    return s.new_order.call, (inp.w_id, inp.d_id, inp.c_id, inp.all_local, items, supply, quantities)


def answer(session: TpccSession, inp: NewOrderInputs, error: Exception | None) -> bool:
    """The call's row, kept for :func:`decode`; False for the expected rollback of the
    unused item: PostgreSQL's function raises ROLLBACK_SQLSTATE (the server has undone
    it), MySQL's procedure rolls back itself and answers with a NULL O_ID."""
    if error is not None:
        if requested_rollback(error, procedures.ROLLBACK_SQLSTATE):
            return False
        raise error
    rows = procedures.result(session.cur, "new_order")
    if session.answers_rollback and rows[0][0] is None:
        return False
    session.answer_later(decode, rows, inp)
    return True


def decode(rows: Sequence[tuple], inp: NewOrderInputs) -> NewOrderOutput | None:
    """The output, from the call's row."""
    row = rows[0]
    if row[0] is None:  # MySQL's procedure rolled back the unused item itself
        return None
    o_id, c_last, c_credit, brands, amount, discount, w_tax, d_tax = row
    return NewOrderOutput(int(o_id), c_last, c_credit, inp.all_local, brands, amount, discount, w_tax, d_tax)
