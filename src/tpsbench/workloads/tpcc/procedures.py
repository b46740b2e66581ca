"""TPC-C as stored procedures: one call, one round trip, per transaction.

This is how HammerDB drives TPC-C on PostgreSQL and MySQL, and why its client costs
little: the transaction's logic runs inside the server (``schemas/tpcc/<db>.sql``, after
``-- procedures``), and the driver only draws the inputs, sends one call and reads one
row. With the statement path (each transaction's ``execute``) a New-Order costs the
driver eight round trips and a COMMIT; on a 2-core machine every one of them takes CPU
from the database (bench/results/engine_tpcc.txt).

The connection is in autocommit mode, so that the call is the whole transaction:

- PostgreSQL runs the function as one implicit transaction. The 1% New-Order rollback
  raises SQLSTATE ``TPCC1`` inside the function; the server then rolls the whole
  transaction back, and the driver counts it as the expected rollback it is.
- MySQL/MariaDB procedures open and commit their own transaction (in autocommit each of
  their statements would otherwise commit on its own), roll back on any error before
  passing it on, and roll back the 1% New-Order themselves, answering with a NULL O_ID.

Inputs are drawn by the driver exactly as for the statement path, so the same seed
gives the same transactions either way; the outputs are the same dataclasses.
Order-Status and Stock-Level are one statement each already and run as such, in
autocommit. Each transaction's module splits its call in two, ``call`` (the statement
to send) and ``answer`` (its result read back, or its error judged), the table's entry
(table.py), so that the engine can send one user's call and wait on many users' sockets
at once (tpsbench.engine.multiplex); what is common to the answers is here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpsbench.core.mix_session import MixSession
    from tpsbench.workloads.tpcc.statements import Statements

#: the SQLSTATE of PostgreSQL's tpcc_new_order for an unused item (§2.4.2.3)
ROLLBACK_SQLSTATE = "TPCC1"


def available(s: Statements) -> bool:
    """True where the dialect calls routines (PostgreSQL, MySQL/MariaDB); the DDL file
    of the database then has the procedures."""
    return bool(s.new_order.call)


def result(cur: Any, name: str) -> Sequence[tuple]:
    """The rows of ``name``'s call, not yet converted where the cursor keeps them so
    (LazyRows: its answer is decoded when someone reads it, MixSession.last_output);
    then any further results (MySQL's CALL status) are drained. Every call answers
    with a row: none is an error."""
    rows = cur.fetchall()
    nextset = getattr(cur, "nextset", None)
    while nextset is not None and nextset():
        pass
    if not rows:
        raise LookupError(f"{name}: the database returned no row")
    return rows


def answered(session: MixSession, name: str, decode: Callable[[Sequence[tuple], Any], object], inputs: object,
             error: Exception | None) -> bool:
    """The answer of a call that only a failure rolls back: its rows kept as the output,
    decoded by ``decode`` when read (the run only counts it); an error raised as it is."""
    if error is not None:
        raise error
    session.answer_later(decode, result(session.cur, name), inputs)
    return True


def answers_rollback(s: Statements) -> bool:
    """Whether a New-Order call's answer can say it rolled back: where routines end their
    own transactions (MySQL) the procedure rolls the unused item back itself and answers
    with a NULL O_ID. Elsewhere (a PostgreSQL function) it raises instead, so its
    answers need no look at all."""
    return s.dialect.routines_end_transactions
