"""Delivery (TPC-C §2.7): deliver the oldest undelivered order of each of the 10 districts.

All 10 districts are delivered in ONE database transaction (the form of the spec's
§2.7.4 profile and of BenchBase), so a Delivery is one commit and one latency sample.
By default (run option ``delivery=inline``) the terminal runs it in line and waits;
``delivery=deferred`` queues it as §2.7.2 describes, for executors that run it the
same way (deferred.py).

Statements, the same count on every dialect (then COMMIT):

1. Read the oldest NEW-ORDER row of each district: ``SELECT d_id, (SELECT MIN(no_o_id)
   ...) FROM district WHERE d_w_id = ?``, one MIN probe of the primary key per district.
   MySQL instead locks them with a UNION ALL of ten ``(SELECT .. WHERE no_d_id = n ORDER
   BY no_o_id LIMIT 1 FOR UPDATE)``: exactly ten rows, in district order (with
   ``GROUP BY no_d_id`` FOR UPDATE would lock every NEW-ORDER row of the warehouse, and
   MariaDB reads the whole district for a correlated MIN).
2. Claim them: ``DELETE FROM new_order WHERE no_w_id = ? AND ((no_d_id = ? AND no_o_id = ?)
   OR ...) RETURNING no_d_id, no_o_id`` (SQL Server: OUTPUT). Deleting is what claims a
   row: a concurrent Delivery that got there first leaves nothing to delete, so an
   order is never delivered twice, and RETURNING says which districts were won (MySQL
   holds the locks from step 1: every row must go). One DELETE by key rather than a
   DELETE whose subquery finds the oldest rows: PostgreSQL would then lock them in the
   district table's physical order, which updates keep changing, and two concurrent
   Deliveries deadlocked on each other's rows; by key they lock in NEW-ORDER's own
   physical order, the same for both.
3. ``UPDATE orders SET o_carrier_id`` for the k claimed orders;
4. ``UPDATE order_line SET ol_delivery_d = now`` for their lines;
5. ``UPDATE customer SET c_balance = c_balance + (SELECT SUM(ol_amount) ...),
   c_delivery_cnt = c_delivery_cnt + 1`` joined to the k orders (O_C_ID gives the
   customer): the amounts are summed inside the server and never travel.

5 statements + COMMIT, against about 70 for the spec's district-by-district form.

A district missing from the claim (another Delivery had its oldest row, or it has none)
is looked at again on its own with a locking read, ``SELECT .. ORDER BY no_o_id LIMIT 1
FOR UPDATE``: it waits for a Delivery that holds the row and, once that one committed,
takes the next row, so the district is skipped only when it really has no NEW-ORDER row.
That costs nothing in the common case (all 10 claimed) and keeps PostgreSQL's
read-committed behaviour (a lost row is silently left out of the DELETE) from being
counted as an empty district. Skipped districts are returned so the session can count
them (§2.7.2.3 asks that they be reported when they exceed 1%).

With stored procedures (procedures.py) the delivery is one call of ``tpcc_delivery``,
answering with the O_ID delivered per district as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from tpsbench.core.procedures import call_statement
from tpsbench.core.sql import SqlDialect, counted, marked, money_sql
from tpsbench.workloads.tpcc import procedures
from tpsbench.workloads.tpcc.draws import Draws
from tpsbench.workloads.tpcc.loader import DISTRICTS_PER_WAREHOUSE
from tpsbench.workloads.tpcc.sql import pair_keys, returning, update_from

if TYPE_CHECKING:
    from tpsbench.workloads.tpcc.session import TpccSession

#: the procedure's parameter types, in order (call_statement casts to them where it must)
PROCEDURE_PARAMS = ("INTEGER", "INTEGER")


@dataclass(frozen=True, slots=True)
class DeliverySql:
    """Delivery's statements for one dialect and marker; ``*_k`` are indexed by a count
    of districts (index 0 unused); ``call`` is "" where the dialect calls no routines."""

    claim: str
    #: how many times ``claim`` takes W_ID
    claim_params: int
    oldest: str
    delete_k: tuple[str, ...]
    delete_one: str
    carrier_k: tuple[str, ...]
    lines_k: tuple[str, ...]
    customer_k: tuple[str, ...]
    call: str


def statements(d: SqlDialect, mark: str) -> DeliverySql:
    """The statements of the module docstring in ``d``'s SQL with the driver's ``mark``."""
    m = partial(marked, mark=mark)
    # the oldest NEW-ORDER row of one district, locked (waiting for a concurrent
    # Delivery to commit or roll back, then moving on to the next row if it was taken)
    oldest_one = (
        f"SELECT {d.top1}no_d_id, no_o_id FROM new_order{d.table_lock} WHERE no_w_id = ? AND no_d_id = ?"
        f" ORDER BY no_o_id{d.limit1}{d.row_lock}"
    )
    if d.returning:  # one MIN probe per district, from the district table's 10 ids
        claim = (
            "SELECT d_id, (SELECT MIN(n2.no_o_id) FROM new_order n2 WHERE n2.no_w_id = d_w_id"
            " AND n2.no_d_id = d_id) FROM district WHERE d_w_id = ?"
        )
    else:  # MySQL: lock the oldest row of each district (a current read, in district order)
        claim = " UNION ALL ".join(
            "(" + oldest_one.replace("no_d_id = ?", f"no_d_id = {d_id}") + ")"
            for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1)
        )
    amount = "(SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id)"
    return DeliverySql(
        claim=m(claim),
        claim_params=claim.count("?"),
        oldest=m(oldest_one),
        delete_k=m(counted(lambda k: returning(
            d, "DELETE FROM new_order", f"WHERE no_w_id = ? AND {pair_keys('no_d_id', 'no_o_id', k)}",
            "no_d_id, no_o_id", table="deleted",
        ), DISTRICTS_PER_WAREHOUSE)),
        delete_one=m("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"),
        carrier_k=m(counted(lambda k: (
            f"UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND {pair_keys('o_d_id', 'o_id', k)}"
        ), DISTRICTS_PER_WAREHOUSE)),
        lines_k=m(counted(lambda k: (
            "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP"
            f" WHERE ol_w_id = ? AND {pair_keys('ol_d_id', 'ol_o_id', k)}"
        ), DISTRICTS_PER_WAREHOUSE)),
        customer_k=m(counted(lambda k: update_from(
            d, "customer",
            f"c_balance = {money_sql(d, 'c_balance + ' + amount)}, c_delivery_cnt = c_delivery_cnt + 1",
            "orders",
            f"o_w_id = ? AND {pair_keys('o_d_id', 'o_id', k)}"
            " AND c_w_id = o_w_id AND c_d_id = o_d_id AND c_id = o_c_id",
        ), DISTRICTS_PER_WAREHOUSE)),
        call=m(call_statement(d, "tpcc_delivery", PROCEDURE_PARAMS)) if d.call else "",
    )


@dataclass(slots=True)
class DeliveryInputs:
    w_id: int
    o_carrier_id: int


@dataclass(slots=True)
class DeliveryOutput:
    #: (D_ID, O_ID) of every delivered order, by district
    delivered: tuple[tuple[int, int], ...]
    #: districts without an undelivered order
    skipped: tuple[int, ...]


def inputs(draw: Draws, w_id: int) -> DeliveryInputs:
    """§2.7.1: the home warehouse and a carrier in 1..10."""
    return DeliveryInputs(w_id, draw.uniform(1, 10))


def user_inputs(session: TpccSession) -> DeliveryInputs:
    """A terminal's delivery: :func:`inputs` for its warehouse (the table's entry)."""
    return inputs(session.draw, session.pick_warehouse())


def execute(session: TpccSession, inp: DeliveryInputs) -> DeliveryOutput:
    """Deliver on the session's cursor, leaving the transaction open for the session to commit."""
    cur, s = session.cur, session.stmts.delivery
    w_id = inp.w_id
    claimed = _claim(cur, s, w_id, session.stmts.returning)
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        if d_id not in claimed:
            o_id = _claim_one(cur, s, w_id, d_id)
            if o_id is not None:
                claimed[d_id] = o_id
    delivered = tuple(sorted(claimed.items()))
    k = len(delivered)
    if k:
        pairs = [value for pair in delivered for value in pair]
        cur.execute(s.carrier_k[k], [inp.o_carrier_id, w_id, *pairs])
        _expect(cur, k, "orders")
        cur.execute(s.lines_k[k], [w_id, *pairs])
        cur.execute(s.customer_k[k], [w_id, *pairs])
        _expect(cur, k, "customers")
    skipped = tuple(d for d in range(1, DISTRICTS_PER_WAREHOUSE + 1) if d not in claimed)
    return DeliveryOutput(delivered, skipped)


def _claim(cur: Any, s: DeliverySql, w_id: int, returns: bool) -> dict[int, int]:
    """Delete (and so own) the oldest NEW-ORDER row of each district; {D_ID: O_ID}."""
    cur.execute(s.claim, (w_id,) * s.claim_params)
    oldest = {int(d): int(o) for d, o in cur.fetchall() if o is not None}
    if not oldest:
        return oldest
    pairs = [value for pair in oldest.items() for value in pair]
    cur.execute(s.delete_k[len(oldest)], [w_id, *pairs])
    if returns:  # the rows really deleted: a concurrent Delivery may have taken some
        return {int(d): int(o) for d, o in cur.fetchall()}
    _expect(cur, len(oldest), "locked NEW-ORDER rows deleted")
    return oldest


def _claim_one(cur: Any, s: DeliverySql, w_id: int, d_id: int) -> int | None:
    """The district's oldest NEW-ORDER row, locked and deleted; None when it has none."""
    cur.execute(s.oldest, (w_id, d_id))
    row = cur.fetchone()
    if row is None:
        return None
    cur.execute(s.delete_one, (w_id, d_id, row[1]))
    _expect(cur, 1, "NEW-ORDER rows deleted after locking one")
    return int(row[1])


def _expect(cur: Any, rows: int, what: str) -> None:
    if cur.rowcount != rows:
        raise LookupError(f"Delivery: {cur.rowcount} {what}, expected {rows}")


def call(session: TpccSession, inp: DeliveryInputs) -> tuple[str, tuple]:
    """The procedure's call."""
    return session.stmts.delivery.call, (inp.w_id, inp.o_carrier_id)


def answer(session: TpccSession, inp: DeliveryInputs, error: Exception | None) -> bool:
    """The call's row, kept for :func:`decode`; an error is raised as it is."""
    return procedures.answered(session, "delivery", decode, inp, error)


def decode(rows: Sequence[tuple], inp: DeliveryInputs) -> DeliveryOutput:
    """The procedure's text answer lists the O_ID delivered per district, 0 for none."""
    (text,) = rows[0]
    o_ids = [int(value) for value in text.split(",")]
    delivered = tuple((d_id, o_id) for d_id, o_id in enumerate(o_ids, 1) if o_id)
    skipped = tuple(d_id for d_id, o_id in enumerate(o_ids, 1) if not o_id)
    return DeliveryOutput(delivered, skipped)
