"""The SQL of the five TPC-C transactions, one table of statements for every database.

Each statement is written once, in the SQL the databases share; the target's
:class:`~tpsbench.core.sql.SqlDialect` says what differs and the builders below
substitute it:

- the parameter marker (``?`` or ``%s``: it comes from the target, because one dialect
  can be reached through drivers of either style, e.g. MySQL through mysqlclient or ODBC);
- ``LIMIT 1`` or ``TOP 1``;
- row locks for read-then-write: ``FOR UPDATE`` after the statement (PostgreSQL, MySQL),
  a ``WITH (UPDLOCK, ROWLOCK)`` hint after the table (SQL Server), nothing on SQLite,
  whose writers are serialised by the database lock the transaction already holds;
- returning the rows a DML statement touched: ``RETURNING`` (PostgreSQL, SQLite >= 3.35,
  MariaDB's DELETE only, so unused), ``OUTPUT inserted.*/deleted.*`` (SQL Server); MySQL
  has neither and takes one more statement where it matters;
- UPDATE joined to a derived table: ``UPDATE t SET .. FROM src WHERE ..`` (PostgreSQL,
  SQLite >= 3.33), ``UPDATE t JOIN src ON .. SET ..`` (MySQL), ``UPDATE t SET .. FROM t
  JOIN src ON ..`` (SQL Server);
- string concatenation (``||`` or ``CONCAT``);
- SQLite keeps money in doubles, so its money updates are wrapped in ``ROUND(.., 2)``:
  every stored amount stays the double nearest a whole number of cents and sums do
  not drift.

"Oldest" and "last" are mostly MIN/MAX subqueries, which PostgreSQL, SQLite and SQL
Server answer with one probe of the primary key or the customer index. A locking read
of one oldest row needs ``ORDER BY .. LIMIT 1`` (``TOP 1`` on SQL Server) instead, and so
does MySQL's Delivery, because MariaDB does not turn a correlated MIN into one probe
(it reads the whole district).

Statements whose shape depends on a count (k stock rows, k delivered districts, n order
lines) are built for every count up to the maximum when the table is first asked for, and
the table is cached per (dialect, marker): nothing is formatted per transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from tpsbench.core.procedures import call_statement
from tpsbench.core.sql import SqlDialect, concat, counted, marked, money_binder, money_sql
from tpsbench.workloads.tpcc.loader import DISTRICTS_PER_WAREHOUSE, OL_CNT_MAX

#: the most order lines, hence distinct stock rows and items, one New-Order can touch
MAX_LINES = OL_CNT_MAX


#: Customer columns shown by Payment (§2.5.3.3), in order
PAY_CUSTOMER = (
    "c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, "
    "c_since, c_credit, c_credit_lim, c_discount, c_balance"
)
PAY_WAREHOUSE = "w_name, w_street_1, w_street_2, w_city, w_state, w_zip"
PAY_DISTRICT = "d_name, d_street_1, d_street_2, d_city, d_state, d_zip"

#: §2.5.2.2 middle customer by last name: 1-based row ceil(n/2) of the rows ordered by
#: C_FIRST, i.e. 2*rn - n in {0, 1}; integer arithmetic without division, which MySQL
#: would turn into a decimal. Parameters: C_W_ID, C_D_ID, C_LAST.
MIDDLE_CUSTOMER = (
    "(SELECT m.c_id FROM (SELECT c_id, ROW_NUMBER() OVER (ORDER BY c_first) AS rn, COUNT(*) OVER () AS n"
    " FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?) m WHERE 2 * m.rn - m.n IN (0, 1))"
)
#: the customer key of Payment and Order-Status: its extra parameters follow C_W_ID, C_D_ID
CUSTOMER_KEY = {"id": "c_id = ?", "name": f"c_id = {MIDDLE_CUSTOMER}"}


class Statements:
    """Every statement of the five transactions for one SQL dialect and parameter marker.

    Attributes ending in ``_k`` are tuples indexed by a count (index 0 unused).
    Attributes a dialect does not use are None.
    """

    # calls of the stored procedures, where the schema file has them (procedures.py)
    call_new_order: Any = None
    call_payment: Any = None
    call_delivery: Any = None
    # used only where the dialect has RETURNING/OUTPUT ...
    pay_warehouse: Any = None
    pay_district: Any = None
    pay_customer: Any = None
    # ... and only where it has not (MySQL)
    pay_select: Any = None
    pay_update: Any = None

    if TYPE_CHECKING:
        # the statements _build() names, set as attributes by __init__
        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, d: SqlDialect, mark: str) -> None:
        self.dialect = d
        #: True where DML can return the rows it touched (all but MySQL)
        self.returning = bool(d.returning)
        #: what a Decimal amount is bound as: sqlite3 cannot bind Decimal, and a double
        #: is what SQLite would store anyway
        self.bind_money: Callable[[Decimal], object] = money_binder(d)
        s = self._build(d)
        for name, text in s.items():
            setattr(self, name, marked(text, mark))

    def _build(self, d: SqlDialect) -> dict:
        """The statements by attribute name: one flat table, in transaction order."""
        s: dict = {}
        money = partial(money_sql, d)
        # -- New-Order -------------------------------------------------------------------
        if d.returning:
            s["no_district"] = _returning(
                d, "UPDATE district SET d_next_o_id = d_next_o_id + 1", "WHERE d_w_id = ? AND d_id = ?", "d_next_o_id"
            )
        else:  # MySQL: the new value comes back as the connection's LAST_INSERT_ID
            s["no_district"] = (
                "UPDATE district SET d_next_o_id = LAST_INSERT_ID(d_next_o_id + 1) WHERE d_w_id = ? AND d_id = ?"
            )
        s["last_insert_id"] = "SELECT LAST_INSERT_ID()"
        s["no_head"] = (
            "SELECT c_discount, c_last, c_credit, w_tax, d_tax FROM customer, warehouse, district"
            " WHERE w_id = ? AND d_w_id = w_id AND d_id = ? AND c_w_id = w_id AND c_d_id = d_id AND c_id = ?"
        )
        s["no_order"] = (
            "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)"
            " VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)"
        )
        s["no_new_order"] = "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)"
        dist = " ".join(f"WHEN {i} THEN s_dist_{i:02d}" for i in range(1, DISTRICTS_PER_WAREHOUSE + 1))
        s["no_stock_k"] = counted(lambda k: (
            f"SELECT s_w_id, s_i_id, s_quantity, s_data, CASE {d.int_param} {dist} END FROM stock{d.table_lock}"
            f" WHERE {_pairs('s_w_id', 's_i_id', k)}{d.row_lock}"
        ), MAX_LINES)
        first = "SELECT " + ", ".join(f"{d.int_param} AS {name}" for name in ("w", "i", "q", "ytd", "cnt", "rmt"))
        more = "SELECT " + ", ".join([d.int_param] * 6)
        s["no_stock_update_k"] = counted(lambda k: _update_from(
            d, "stock",
            "s_quantity = v.q, s_ytd = s_ytd + v.ytd, s_order_cnt = s_order_cnt + v.cnt,"
            " s_remote_cnt = s_remote_cnt + v.rmt",
            "(" + " UNION ALL ".join([first] + [more] * (k - 1)) + ") v",
            "s_w_id = v.w AND s_i_id = v.i",
        ), MAX_LINES)
        s["no_items_k"] = counted(lambda k: (
            f"SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({', '.join(['?'] * k)})"
        ), MAX_LINES)
        s["no_lines_k"] = counted(lambda k: (
            "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,"
            " ol_quantity, ol_amount, ol_dist_info) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)"] * k)
        ), MAX_LINES)
        # -- Payment ---------------------------------------------------------------------
        prepended = concat(d, "c_id", "?", "c_data")
        c_data = f"CASE WHEN c_credit = 'BC' THEN SUBSTRING({prepended}, 1, 500) ELSE c_data END"
        pay_customer = (
            f"c_balance = {money('c_balance - ?')}, c_ytd_payment = {money('c_ytd_payment + ?')},"
            f" c_payment_cnt = c_payment_cnt + 1, c_data = {c_data}"
        )
        if d.returning:
            s["pay_warehouse"] = _returning(
                d, f"UPDATE warehouse SET w_ytd = {money('w_ytd + ?')}", "WHERE w_id = ?", PAY_WAREHOUSE
            )
            s["pay_district"] = _returning(
                d, f"UPDATE district SET d_ytd = {money('d_ytd + ?')}", "WHERE d_w_id = ? AND d_id = ?", PAY_DISTRICT
            )
            s["pay_customer"] = {
                by: _returning(d, f"UPDATE customer SET {pay_customer}", f"WHERE c_w_id = ? AND c_d_id = ? AND {key}",
                               PAY_CUSTOMER)
                for by, key in CUSTOMER_KEY.items()
            }
        else:  # MySQL: one read of all three rows, then one multi-table UPDATE
            s["pay_select"] = {
                by: f"SELECT {PAY_WAREHOUSE}, {PAY_DISTRICT}, {PAY_CUSTOMER} FROM warehouse, district, customer"
                f" WHERE w_id = ? AND d_w_id = w_id AND d_id = ? AND c_w_id = ? AND c_d_id = ? AND {key}"
                for by, key in CUSTOMER_KEY.items()
            }
            s["pay_update"] = (
                f"UPDATE warehouse, district, customer SET w_ytd = w_ytd + ?, d_ytd = d_ytd + ?, {pay_customer}"
                " WHERE w_id = ? AND d_w_id = ? AND d_id = ? AND c_w_id = ? AND c_d_id = ? AND c_id = ?"
            )
        s["pay_history"] = (
            "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)"
            " VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)"
        )
        # -- Order-Status ----------------------------------------------------------------
        s["os_query"] = {
            by: "SELECT c_id, c_balance, c_first, c_middle, c_last, o_id, o_entry_d, o_carrier_id,"
            " ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d"
            " FROM customer"
            " LEFT JOIN orders ON o_w_id = c_w_id AND o_d_id = c_d_id AND o_c_id = c_id AND o_id ="
            " (SELECT MAX(o2.o_id) FROM orders o2 WHERE o2.o_w_id = c_w_id AND o2.o_d_id = c_d_id AND o2.o_c_id = c_id)"
            " LEFT JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id"
            f" WHERE c_w_id = ? AND c_d_id = ? AND {key}"
            for by, key in CUSTOMER_KEY.items()
        }
        # -- Delivery --------------------------------------------------------------------
        # the oldest NEW-ORDER row of one district, locked (waiting for a concurrent
        # Delivery to commit or roll back, then moving on to the next row if it was taken)
        oldest_one = (
            f"SELECT {d.top1}no_d_id, no_o_id FROM new_order{d.table_lock} WHERE no_w_id = ? AND no_d_id = ?"
            f" ORDER BY no_o_id{d.limit1}{d.row_lock}"
        )
        if d.returning:  # one MIN probe per district, from the district table's 10 ids
            s["dl_claim"] = (
                "SELECT d_id, (SELECT MIN(n2.no_o_id) FROM new_order n2 WHERE n2.no_w_id = d_w_id"
                " AND n2.no_d_id = d_id) FROM district WHERE d_w_id = ?"
            )
        else:  # MySQL: lock the oldest row of each district (a current read, in district order)
            s["dl_claim"] = " UNION ALL ".join(
                "(" + oldest_one.replace("no_d_id = ?", f"no_d_id = {d_id}") + ")"
                for d_id in range(1, DISTRICTS_PER_WAREHOUSE + 1)
            )
        s["dl_oldest"] = oldest_one
        s["dl_delete_k"] = counted(lambda k: _returning(
            d, "DELETE FROM new_order", f"WHERE no_w_id = ? AND {_pairs('no_d_id', 'no_o_id', k)}",
            "no_d_id, no_o_id", table="deleted",
        ), DISTRICTS_PER_WAREHOUSE)
        #: how many times dl_claim takes W_ID
        self.dl_claim_params = s["dl_claim"].count("?")
        s["dl_delete_one"] = "DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"
        s["dl_carrier_k"] = counted(lambda k: (
            f"UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND {_pairs('o_d_id', 'o_id', k)}"
        ), DISTRICTS_PER_WAREHOUSE)
        s["dl_lines_k"] = counted(lambda k: (
            "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP"
            f" WHERE ol_w_id = ? AND {_pairs('ol_d_id', 'ol_o_id', k)}"
        ), DISTRICTS_PER_WAREHOUSE)
        amount = (
            "(SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id)"
        )
        s["dl_customer_k"] = counted(lambda k: _update_from(
            d, "customer",
            f"c_balance = {money('c_balance + ' + amount)}, c_delivery_cnt = c_delivery_cnt + 1",
            "orders",
            f"o_w_id = ? AND {_pairs('o_d_id', 'o_id', k)} AND c_w_id = o_w_id AND c_d_id = o_d_id AND c_id = o_c_id",
        ), DISTRICTS_PER_WAREHOUSE)
        # -- the stored procedures' calls (procedures.py) -----------------------------
        s.update(_calls(d))
        # -- Stock-Level -----------------------------------------------------------------
        s["sl_count"] = (
            "SELECT COUNT(DISTINCT s_i_id) FROM district"
            " JOIN order_line ON ol_w_id = d_w_id AND ol_d_id = d_id"
            " AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20"
            " JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id"
            " WHERE d_w_id = ? AND d_id = ? AND s_quantity < ?"
        )
        return s


@cache
def statements(dialect: SqlDialect, mark: str = "?") -> Statements:
    """The statement table of a target's ``sql`` dialect with its parameter marker ``mark``."""
    if mark not in ("?", "%s"):
        raise ValueError(f"unsupported parameter marker {mark!r}")
    return Statements(dialect, mark)


# -- builders ------------------------------------------------------------------------------
def _pairs(a: str, b: str, k: int) -> str:
    """``((a = ? AND b = ?) OR ...)`` for k pairs: every optimiser turns it into k key probes."""
    return "(" + " OR ".join([f"({a} = ? AND {b} = ?)"] * k) + ")"


def _returning(d: SqlDialect, head: str, where: str, columns: str, table: str = "inserted") -> str:
    """``head where RETURNING columns``, SQL Server's ``head OUTPUT table.columns where``,
    or just ``head where`` on a dialect that can return nothing (MySQL)."""
    if not d.returning:
        return f"{head} {where}"
    if d.returning == "output":
        out = ", ".join(f"{table}.{c.strip()}" for c in columns.split(","))
        return f"{head} OUTPUT {out} {where}"
    return f"{head} {where} RETURNING {columns}"


def _update_from(d: SqlDialect, table: str, assignments: str, source: str, condition: str) -> str:
    """UPDATE ``table`` joined to ``source`` on ``condition`` in the dialect's syntax.

    The shapes put SET and the join condition in different orders, so ``assignments``
    must hold no parameter: then the parameters come in the same order in all of them.
    """
    if "?" in assignments:
        raise ValueError("UPDATE ... FROM assignments must not hold parameters")
    if d.update_join == "join":
        return f"UPDATE {table} JOIN {source} ON {condition} SET {assignments}"
    if d.update_join == "from-join":
        return f"UPDATE {table} SET {assignments} FROM {table} JOIN {source} ON {condition}"
    return f"UPDATE {table} SET {assignments} FROM {source} WHERE {condition}"


#: parameter types of the procedures, in order: PostgreSQL picks a function by its
#: argument types, so the call casts each parameter (ODBC and DB-API drivers would
#: otherwise send text or int8 and find no such function)
PROCEDURE_PARAMS = {
    "new_order": ("INTEGER",) * 4 + ("INTEGER[]",) * 3,
    "payment": ("INTEGER",) * 5 + ("VARCHAR", "NUMERIC"),
    "delivery": ("INTEGER", "INTEGER"),
}


def _calls(d: SqlDialect) -> dict[str, str]:
    """The call of each procedure in the dialect's form (a SELECT of a PostgreSQL function,
    a MySQL CALL); none where the dialect calls no routines."""
    if not d.call:
        return {}
    return {f"call_{name}": call_statement(d, f"tpcc_{name}", types) for name, types in PROCEDURE_PARAMS.items()}


