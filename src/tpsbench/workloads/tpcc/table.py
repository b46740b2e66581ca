"""The TPC-C transaction table: the five transactions, their weights and the rules' waits.

The mix is a deck of 100 cards (45 New-Order, 43 Payment, 4 each of Order-Status,
Delivery and Stock-Level) that every user shuffles on its own and deals to the end
before shuffling again (tpsbench.core.transactions.Deck, shuffled by numpy from the
user's stream). A deck rather than an independent draw per transaction keeps every
window of 100 transactions of one user exactly at the weights, so short runs meet the
§5.2.3 minimums (Payment >= 43%, the others >= 4%) instead of missing them by chance.
With ``delivery=deferred`` the terminals still deal Delivery cards but queue them
(deferred.py): the mix a step reports counts the Deliveries its executors committed,
which matches the cards dealt once they keep up, short of those queued at the step's end.

Keying times are §5.2.5.7's minimums, think times §5.2.5.4's minimum means (negative
exponential, cut at ten times the mean). Each entry names its module's functions: the
inputs a terminal draws, the statements (``execute``, committed by the session), and the
one call and its answer, sent where the run calls stored procedures (procedures.py).
To add a transaction: one module with those functions, one entry here (docs/extending.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpsbench.core.transactions import THINK_CAP, Transaction, TransactionTable
from tpsbench.workloads.tpcc import delivery, new_order, order_status, payment, stock_level

if TYPE_CHECKING:
    from tpsbench.workloads.tpcc.session import TpccSession

__all__ = ["KEYING_S", "TABLE", "THINK_CAP", "THINK_MEAN_S", "TRANSACTIONS", "WEIGHTS"]

#: the five, in report order; weights are cards per 100 (the BenchBase/HammerDB weights
#: that meet the §5.2.3 minimums)
TABLE: TransactionTable[TpccSession] = TransactionTable([
    Transaction("new_order", 45, new_order.user_inputs, run=new_order.execute,
                call=new_order.call, answer=new_order.answer, keying_s=18.0, think_s=12.0),
    Transaction("payment", 43, payment.user_inputs, run=payment.execute,
                call=payment.call, answer=payment.answer, keying_s=3.0, think_s=12.0),
    Transaction("order_status", 4, order_status.user_inputs, run=order_status.execute,
                call=order_status.call, answer=order_status.answer, keying_s=2.0, think_s=10.0),
    Transaction("delivery", 4, delivery.user_inputs, run=delivery.execute,
                call=delivery.call, answer=delivery.answer, keying_s=2.0, think_s=5.0),
    Transaction("stock_level", 4, stock_level.user_inputs, run=stock_level.execute,
                call=stock_level.call, answer=stock_level.answer, keying_s=2.0, think_s=5.0),
])

#: what readers of the rules look up, derived from the table
TRANSACTIONS = TABLE.names
WEIGHTS = TABLE.weights
KEYING_S = {t.name: t.keying_s for t in TABLE}
THINK_MEAN_S = {t.name: t.think_s for t in TABLE}
