"""Customer-Position (TPC-E, B2, read-only): a customer's accounts, their worth, and a history.

1. the customer, by id (50%) or by tax id (50%); its accounts (at most 10) with their
   balance and the market value of their holdings (holding_summary x last_trade),
   least valuable first;
2. for half of the calls (get_history), one of those accounts' 10 latest trades with
   their status changes (at most 30 rows, newest first);
3. the end of the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce import calls
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import limit, top

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

CUSTOMER_COLUMNS = (
    "c_id, c_st_id, c_l_name, c_f_name, c_m_name, c_gndr, c_tier, c_dob, c_ad_id, c_ctry_1, c_area_1, c_local_1,"
    " c_ext_1, c_ctry_2, c_area_2, c_local_2, c_ext_2, c_ctry_3, c_area_3, c_local_3, c_ext_3, c_email_1, c_email_2")
MAX_ACCOUNTS, LAST_TRADES, MAX_HISTORY = 10, 10, 30
#: tpce_customer_position's parameters, as PostgreSQL types (calls.routine)
ROUTINE = ("BIGINT", "VARCHAR", "INTEGER", "INTEGER")


@dataclass(slots=True)
class CustomerPositionInputs:
    #: the customer's id, or 0 and its tax id
    cust_id: int
    tax_id: str
    get_history: bool
    #: which of the customer's accounts frame 2 looks at (modulo how many it has)
    acct_index: int


@dataclass(slots=True)
class CustomerPositionOutput:
    customer: tuple
    #: (ca_id, ca_bal, holdings' value) per account
    accounts: list[tuple]
    #: (t_id, t_s_symb, t_qty, st_name, th_dts), frame 2's, newest first
    history: list[tuple]


@dataclass(frozen=True, slots=True)
class CustomerPositionSql:
    cp_customer: tuple[str, str]
    cp_accounts: str
    cp_history: str
    #: the stored procedure's call ("" where the dialect has none)
    call: str


def statements(d: SqlDialect) -> CustomerPositionSql:
    return CustomerPositionSql(
        #: (by id, by tax id)
        cp_customer=(f"SELECT {CUSTOMER_COLUMNS} FROM customer WHERE c_id = ?",
                     f"SELECT {CUSTOMER_COLUMNS} FROM customer WHERE c_tax_id = ?"),
        cp_accounts=(
            f"SELECT {top(d, MAX_ACCOUNTS)}ca_id, ca_bal, COALESCE(SUM(hs_qty * lt_price), 0) AS assets"
            " FROM customer_account LEFT JOIN holding_summary ON hs_ca_id = ca_id"
            " LEFT JOIN last_trade ON lt_s_symb = hs_s_symb"
            f" WHERE ca_c_id = ? GROUP BY ca_id, ca_bal ORDER BY assets, ca_id{limit(d, MAX_ACCOUNTS)}"),
        cp_history=(
            f"SELECT {top(d, MAX_HISTORY)}t_id, t_s_symb, t_qty, st_name, th_dts"
            f" FROM (SELECT {top(d, LAST_TRADES)}t_id AS id FROM trade WHERE t_ca_id = ?"
            f" ORDER BY t_dts DESC{limit(d, LAST_TRADES)}) latest, trade, trade_history, status_type"
            " WHERE t_id = latest.id AND th_t_id = t_id AND st_id = th_st_id"
            f" ORDER BY th_dts DESC{limit(d, MAX_HISTORY)}"),
        call=calls.routine(d, "customer_position", ROUTINE),
    )


def inputs(draw: Draws) -> CustomerPositionInputs:
    customer = draw.customer()
    by_tax = draw.percent() <= 50
    return CustomerPositionInputs(0 if by_tax else customer.c_id, customer.tax_id if by_tax else "",
                                  draw.percent() <= 50, draw.rng.randrange(MAX_ACCOUNTS))


def drawn(user: FramesSession) -> CustomerPositionInputs:
    """The inputs from the user's draws."""
    return inputs(user.draw)


def run(user: FramesSession, inp: CustomerPositionInputs) -> CustomerPositionOutput:
    link, s = user.link, user.sql.customer_position
    cur = link.cur
    # -- frame 1 ------------------------------------------------------------------------
    by_tax = inp.cust_id == 0
    cur.execute(s.cp_customer[by_tax], (inp.tax_id if by_tax else inp.cust_id,))
    customer = cur.fetchone()
    if customer is None:
        raise LookupError(f"Customer-Position: no customer {inp.tax_id or inp.cust_id}")
    cur.execute(s.cp_accounts, (customer[0],))
    accounts = [tuple(row) for row in cur.fetchall()]
    # -- frame 2 ------------------------------------------------------------------------
    history: list[tuple] = []
    if inp.get_history and accounts:
        cur.execute(s.cp_history, (accounts[inp.acct_index % len(accounts)][0],))
        history = [tuple(row) for row in cur.fetchall()]
    return CustomerPositionOutput(tuple(customer), accounts, history)


def call(user: FramesSession, inp: CustomerPositionInputs) -> tuple[str, tuple]:
    """The whole transaction as one call of tpce_customer_position (procedures.py)."""
    s = user.sql.customer_position
    return s.call, (inp.cust_id, inp.tax_id, int(inp.get_history), inp.acct_index)


def answer(user: FramesSession, inp: CustomerPositionInputs, error: Exception | None) -> bool:
    return calls.answered(user, inp, error, decoded)


def decoded(user: FramesSession, inp: CustomerPositionInputs) -> CustomerPositionOutput:
    link = user.link
    parts: tuple[calls.Part, ...] = ((range(23), False), (range(23, 26), True), (range(26, 31), True))
    customer, accounts, history = calls.parts(link, parts, True)
    return CustomerPositionOutput(customer[0], accounts, history)
