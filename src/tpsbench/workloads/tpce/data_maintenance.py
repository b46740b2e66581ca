"""Data-Maintenance (TPC-E, B2): a small change to one of twelve tables, every 60 s.

The tables take turns, in this order: ACCOUNT_PERMISSION, ADDRESS, COMPANY, CUSTOMER,
CUSTOMER_TAXRATE, DAILY_MARKET, EXCHANGE, FINANCIAL, NEWS_ITEM, SECURITY, TAXRATE,
WATCH_ITEM. Each change is the spec's kind of change, simplified (the brief allows
dropping DM's exact semantics) and made to toggle or move on, so the data stays valid
however often it runs: an account's permissions' ACL, a customer's second address
line, a company's rating, a customer's second e-mail domain, a customer's divisional
tax rate (to the next one it does not have), a day's volume of a security, the
exchanges' "LAST UPDATED" note, a company's financial quarters' start dates (a day
earlier or later), a company's news items' times, a security's exchange date, a tax
rate's name ("tax" and "Tax"), and one symbol of a customer's watch list (to the next
one the list does not hold). Values that need arithmetic on dates or text are worked
out here, so the SQL stays the same on every database.

One worker of the run sends it (maintenance.py), on its own connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect, concat
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import as_text, day, stamp
from tpsbench.workloads.tpce.universe import Universe, as_day

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

TABLES = ("account_permission", "address", "company", "customer", "customer_taxrate", "daily_market", "exchange",
          "financial", "news_item", "security", "taxrate", "watch_item")
NOTE = " LAST UPDATED "


@dataclass(slots=True)
class DataMaintenanceInputs:
    table: str
    acct_id: int
    c_id: int
    co_id: int
    symbol: str
    day: str
    vol_incr: int
    tx_id: str


@dataclass(frozen=True, slots=True)
class DataMaintenanceSql:
    dm_account_permission: str
    dm_address: str
    dm_company: str
    dm_customer: str
    dm_tax_ids: str
    dm_customer_taxrate: str
    dm_daily_market: str
    dm_exchanges: str
    dm_exchange: str
    dm_quarters: str
    dm_financial: str
    dm_news_item: str
    dm_exch_date: str
    dm_security: str
    dm_tax_name: str
    dm_taxrate: str
    dm_watch_list: str
    dm_watch_item: str


def statements(d: SqlDialect) -> DataMaintenanceSql:
    def email(domain: str) -> str:
        return concat(d, "c_l_name", "'.'", "c_f_name", f"'@{domain}'")

    return DataMaintenanceSql(
        dm_account_permission=("UPDATE account_permission SET ap_acl = CASE WHEN ap_acl = '1111' THEN '0011'"
                               " ELSE '1111' END WHERE ap_ca_id = ?"),
        dm_address=("UPDATE address SET ad_line2 = CASE WHEN ad_line2 = 'Apt. 10C' THEN 'Apt. 22'"
                    " ELSE 'Apt. 10C' END WHERE ad_id = (SELECT c_ad_id FROM customer WHERE c_id = ?)"),
        dm_company=("UPDATE company SET co_sp_rate = CASE WHEN co_sp_rate = 'ABA' THEN 'AAA' ELSE 'ABA' END"
                    " WHERE co_id = ?"),
        dm_customer=(f"UPDATE customer SET c_email_2 = CASE WHEN c_email_2 LIKE '%@mindspring.com'"
                     f" THEN {email('earthlink.com')} ELSE {email('mindspring.com')} END WHERE c_id = ?"),
        dm_tax_ids="SELECT cx_tx_id FROM customer_taxrate WHERE cx_c_id = ? ORDER BY cx_tx_id",
        dm_customer_taxrate="UPDATE customer_taxrate SET cx_tx_id = ? WHERE cx_c_id = ? AND cx_tx_id = ?",
        dm_daily_market="UPDATE daily_market SET dm_vol = dm_vol + ? WHERE dm_s_symb = ? AND dm_date = ?",
        dm_exchanges="SELECT ex_id, ex_desc FROM exchange ORDER BY ex_id",
        dm_exchange="UPDATE exchange SET ex_desc = ? WHERE ex_id = ?",
        dm_quarters="SELECT fi_year, fi_qtr, fi_qtr_start_date FROM financial WHERE fi_co_id = ? ORDER BY 1, 2",
        dm_financial=("UPDATE financial SET fi_qtr_start_date = ? WHERE fi_co_id = ? AND fi_year = ?"
                      " AND fi_qtr = ?"),
        dm_news_item=("UPDATE news_item SET ni_dts = ? WHERE ni_id IN"
                      " (SELECT nx_ni_id FROM news_xref WHERE nx_co_id = ?)"),
        dm_exch_date="SELECT s_exch_date FROM security WHERE s_symb = ?",
        dm_security="UPDATE security SET s_exch_date = ? WHERE s_symb = ?",
        dm_tax_name="SELECT tx_name FROM taxrate WHERE tx_id = ?",
        dm_taxrate="UPDATE taxrate SET tx_name = ? WHERE tx_id = ?",
        dm_watch_list=("SELECT wl_id, wi_s_symb FROM watch_list, watch_item WHERE wl_c_id = ?"
                       " AND wi_wl_id = wl_id ORDER BY wl_id, wi_s_symb"),
        dm_watch_item="UPDATE watch_item SET wi_s_symb = ? WHERE wi_wl_id = ? AND wi_s_symb = ?",
    )


def inputs(draw: Draws, turn: int) -> DataMaintenanceInputs:
    """The inputs of the ``turn``-th call (its table: TABLES[turn % 12])."""
    world = draw.world
    customer = draw.customer()
    low, high = world.companies
    return DataMaintenanceInputs(
        TABLES[turn % len(TABLES)], draw.account(customer), customer.c_id, draw.rng.randint(low, high),
        draw.symbol(), day(draw.market_day()), draw.rng.randint(1, 10), draw.pick(world.tax_ids))


def drawn(user: FramesSession) -> DataMaintenanceInputs:
    """The inputs of the session's next turn."""
    return inputs(user.draw, user.next_turn())


def run(user: FramesSession, inp: DataMaintenanceInputs) -> int:
    """The change, its transaction left open; the rows it updated."""
    link, s, world = user.link, user.sql.data_maintenance, user.world
    cur, table = link.cur, inp.table
    link.begin()
    simple = {"account_permission": (s.dm_account_permission, (inp.acct_id,)),
              "address": (s.dm_address, (inp.c_id,)), "company": (s.dm_company, (inp.co_id,)),
              "customer": (s.dm_customer, (inp.c_id,)),
              "daily_market": (s.dm_daily_market, (inp.vol_incr, inp.symbol, inp.day)),
              "news_item": (s.dm_news_item, (stamp(datetime.now(UTC)), inp.co_id))}
    if table in simple:
        cur.execute(*simple[table])
        return max(cur.rowcount, 0)
    updates: list[tuple[str, tuple]] = []
    if table == "customer_taxrate":
        cur.execute(s.dm_tax_ids, (inp.c_id,))
        held = [as_text(row[0]) for row in cur.fetchall()]
        if held:
            old = held[-1]
            updates.append((s.dm_customer_taxrate, (_next_tax_id(world, old, held), inp.c_id, old)))
    elif table == "exchange":
        cur.execute(s.dm_exchanges)
        note = NOTE + stamp(datetime.now(UTC))
        updates += [(s.dm_exchange, (str(desc).split(NOTE)[0][:100] + note, ex_id)) for ex_id, desc in cur.fetchall()]
    elif table == "financial":
        cur.execute(s.dm_quarters, (inp.co_id,))
        updates += [(s.dm_financial, (day(_nudged(as_day(start))), inp.co_id, year, qtr))
                    for year, qtr, start in cur.fetchall()]
    elif table == "security":
        cur.execute(s.dm_exch_date, (inp.symbol,))
        found = cur.fetchone()
        if found is not None:
            updates.append((s.dm_security, (day(as_day(found[0]) + timedelta(days=1)), inp.symbol)))
    elif table == "taxrate":
        cur.execute(s.dm_tax_name, (inp.tx_id,))
        name = str(cur.fetchone()[0])
        updates.append((s.dm_taxrate, (_toggled_tax(name), inp.tx_id)))
    else:
        cur.execute(s.dm_watch_list, (inp.c_id,))
        items = cur.fetchall()
        if items:
            wl_id, old = items[len(items) // 2]
            listed = {as_text(item[1]) for item in items}
            updates.append((s.dm_watch_item, (_next_symbol(world, as_text(old), listed), wl_id, old)))
    for sql, params in updates:
        cur.execute(sql, params)
    return len(updates)


def _next_tax_id(world: Universe, old: str, held: list[str]) -> str:
    """The next tax id of the same kind (its first letter) that the customer does not hold."""
    ids = [t for t in world.tax_ids if t[:1] == old[:1]]
    at = ids.index(old) if old in ids else 0
    for step in range(1, len(ids) + 1):
        candidate = ids[(at + step) % len(ids)]
        if candidate not in held:
            return candidate
    return old


def _next_symbol(world: Universe, old: str, listed: set[str]) -> str:
    """The next symbol after ``old`` (cyclically) that the watch list does not hold."""
    symbols = [sec.symbol for sec in world.securities]
    at = symbols.index(old) if old in symbols else 0
    for step in range(1, len(symbols) + 1):
        candidate = symbols[(at + step) % len(symbols)]
        if candidate not in listed:
            return candidate
    return old


def _nudged(start: date) -> date:
    """A quarter's start a day later when it is the 1st, else a day earlier (so it toggles)."""
    return start + timedelta(days=1) if start.day == 1 else start - timedelta(days=1)


def _toggled_tax(name: str) -> str:
    return name.replace(" Tax ", " tax ") if " Tax " in name else name.replace(" tax ", " Tax ")
