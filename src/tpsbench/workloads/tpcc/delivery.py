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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpsbench.workloads.tpcc.loader import DISTRICTS_PER_WAREHOUSE
from tpsbench.workloads.tpcc.mix import Draws
from tpsbench.workloads.tpcc.sql import Statements


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


def execute(cur: Any, s: Statements, inp: DeliveryInputs) -> DeliveryOutput:
    """Deliver on ``cur``, leaving the transaction open for the caller to commit."""
    w_id = inp.w_id
    claimed = _claim(cur, s, w_id)
    for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        if d_id not in claimed:
            o_id = _claim_one(cur, s, w_id, d_id)
            if o_id is not None:
                claimed[d_id] = o_id
    delivered = tuple(sorted(claimed.items()))
    k = len(delivered)
    if k:
        pairs = [value for pair in delivered for value in pair]
        cur.execute(s.dl_carrier_k[k], [inp.o_carrier_id, w_id, *pairs])
        _expect(cur, k, "orders")
        cur.execute(s.dl_lines_k[k], [w_id, *pairs])
        cur.execute(s.dl_customer_k[k], [w_id, *pairs])
        _expect(cur, k, "customers")
    skipped = tuple(d for d in range(1, DISTRICTS_PER_WAREHOUSE + 1) if d not in claimed)
    return DeliveryOutput(delivered, skipped)


def _claim(cur: Any, s: Statements, w_id: int) -> dict[int, int]:
    """Delete (and so own) the oldest NEW-ORDER row of each district; {D_ID: O_ID}."""
    cur.execute(s.dl_claim, (w_id,) * s.dl_claim_params)
    oldest = {int(d): int(o) for d, o in cur.fetchall() if o is not None}
    if not oldest:
        return oldest
    pairs = [value for pair in oldest.items() for value in pair]
    cur.execute(s.dl_delete_k[len(oldest)], [w_id, *pairs])
    if s.returning:  # the rows really deleted: a concurrent Delivery may have taken some
        return {int(d): int(o) for d, o in cur.fetchall()}
    _expect(cur, len(oldest), "locked NEW-ORDER rows deleted")
    return oldest


def _claim_one(cur: Any, s: Statements, w_id: int, d_id: int) -> int | None:
    """The district's oldest NEW-ORDER row, locked and deleted; None when it has none."""
    cur.execute(s.dl_oldest, (w_id, d_id))
    row = cur.fetchone()
    if row is None:
        return None
    cur.execute(s.dl_delete_one, (w_id, d_id, row[1]))
    _expect(cur, 1, "NEW-ORDER rows deleted after locking one")
    return int(row[1])


def _expect(cur: Any, rows: int, what: str) -> None:
    if cur.rowcount != rows:
        raise LookupError(f"Delivery: {cur.rowcount} {what}, expected {rows}")
