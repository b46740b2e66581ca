"""TPC-E as stored procedures: one call, one round trip, for each transaction that has several.

Why: the client-SQL frames cost the driver a round trip per statement (a Trade-Result
about ten, a Trade-Update frame 1 twenty-four), and on a small machine every one of
them takes CPU from the database it measures, as TPC-C's did (its procedures.py). With
the run option ``procedures`` on (``auto``: wherever the database has them, PostgreSQL
and MySQL/MariaDB) these are one call of a routine of ``schemas/<db>.sql`` (after
``-- procedures``), installed before the first step. Measured on PostgreSQL, 8 users on
2 cores: 4.9 round trips per transaction became 1.2 and the driver's CPU fell by about a
third, while the server's CPU per transaction stayed about the same (its functions cost
what the round trips did), so TPS gained what the driver gave back, 6% on average over
five 20-second pairs. The transactions sent as calls:

- Trade-Order, Trade-Result and Market-Feed, the writers;
- Trade-Update and Trade-Lookup, one routine for both (``tpce_trade_lookup``, its first
  argument says whether to change what it reads: Trade-Update is Trade-Lookup's frames
  1-3 with changes);
- Security-Detail and Customer-Position.

Broker-Volume and Market-Watch are one statement each and Trade-Status two, all
read-only: they stay client SQL, sent in autocommit like the calls (no BEGIN, no
COMMIT). So do Data-Maintenance (once a minute) and Trade-Cleanup (once a run).

Each routine does what its frames do (the same rows read and written, locks taken in
the same order; the SQL files say where a database makes that differ), one call being
one transaction on a connection in autocommit mode (sql.Link's ``autocommit``):

- a PostgreSQL function runs as one implicit transaction; Trade-Order's 1% requested
  rollback raises SQLSTATE ``TPCE1`` after the order's inserts, the server rolls it all
  back, and the call counts as the expected rollback it is;
- a MySQL/MariaDB procedure opens and commits its own transaction, rolls back on any
  error before passing it on, and rolls the requested rollback back itself, answering
  with a row of NULLs.

Inputs are drawn as for client SQL (the transaction modules' ``inputs``), so a seed gives
the same transactions either way; the time a transaction stamps on its rows is the
driver's (UTC, to the second), as on the client path. Answers decode into the same
output dataclasses: Trade-Order's goes to the market exchange emulator, Trade-Result's
gives it the ticker entry, Market-Feed's triggered orders go back to it (mee.py). Each
transaction's call and answer are in its own module, beside its frames; calls.py has
what they share (how an answer of several parts is read, how a list is passed).
"""

from __future__ import annotations

from tpsbench.core.procedures import wants_procedures
from tpsbench.core.target import Target
from tpsbench.workloads.tpce.table import TABLE

#: the transactions that have a routine, sent as one call each where the run has them on
CALLS = tuple(t.name for t in TABLE if t.call is not None)


def available(target: Target) -> bool:
    """True where the schema file has the routines (PostgreSQL, MySQL/MariaDB) and the
    driver reads their answers (not through ODBC: pyodbc gives arrays as text)."""
    return bool(target.sql.call) and target.routine_answers


def uses_procedures(options: dict[str, str], target: Target) -> bool:
    """Whether a run with ``options`` calls the routines on ``target`` (a one-line error
    for a bad value, or for ``on`` where there are none)."""
    where = target.sql.name if target.routine_answers else f"{target.sql.name} through {target.driver}"
    return wants_procedures("TPC-E", options, available(target), where)
