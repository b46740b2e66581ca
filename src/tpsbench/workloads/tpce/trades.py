"""One load unit's initial trades and everything they leave (``LoadTask("trades", (lu,))``).

TRADE, TRADE_HISTORY, SETTLEMENT, CASH_TRANSACTION and HOLDING_HISTORY day by day, then
HOLDING, HOLDING_SUMMARY, TRADE_REQUEST, BROKER and LAST_TRADE, as Trade-Order,
Market-Feed and Trade-Result would have left them (activity.py says what the trades
are, walk.py which buy and which sell):

- a completed trade (CMPT) has its history (SBMT then CMPT; a limit order PNDG, SBMT,
  CMPT), T_DTS its completion time, its price the security's price then (market.py),
  charge, commission and, for a profitable sell of a taxable account, tax from the
  CHARGE, COMMISSION_RATE and TAXRATE rows; a SETTLEMENT row (due two days later, the
  amount less tax for tax status 1), a CASH_TRANSACTION for a cash trade, and a
  HOLDING_HISTORY row for the lot it opens or closes;
- the initial trades end at the last day's close. Orders still open then stay as
  they are: a market order or triggered limit order SBMT, an untriggered limit order
  PNDG with its TRADE_REQUEST row (its limit 5-15% away from the market, on the side
  that has not triggered); they have no price, no tax and a commission on the bid.
  The Trade-Cleanup before a run cancels them. None is cancelled at load.
- HOLDING is the lots still open, HOLDING_SUMMARY their quantity per pair (no row for
  a flat pair), BROKER's B_NUM_TRADES and B_COMM_TOTAL count and sum the completed
  trades of its accounts, and LAST_TRADE is each security's latest completed trade
  (LT_DTS, LT_PRICE; LT_VOL the shares of all its completed trades; LT_OPEN_PRICE the
  price at the last day's opening).

T_EXEC_NAME is the owner's name; CT_NAME "<type name> <qty> shares of <symbol>".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tpsbench.core.batch import Batch
from tpsbench.core.workload import LoadParams
from tpsbench.workloads.tpce import activity, customers, market, text
from tpsbench.workloads.tpce.activity import Day, Profile, Times
from tpsbench.workloads.tpce.fixed import (
    CHARGE_CENTS,
    TLB,
    TLS,
    TMB,
    TMS,
    TRADE_TYPE_IDS,
    TRADE_TYPE_NAMES,
    TSL,
    commission_rate,
    tax_rate,
)
from tpsbench.workloads.tpce.layout import (
    BROKERS_PER_LU,
    DAY_OPEN_S,
    DAY_SECONDS,
    SECURITIES_PER_LU,
    TRADES_PER_DAY,
    business_days,
    cents_text,
    dates,
    epoch_seconds,
    first_trade_id,
    stamps,
)
from tpsbench.workloads.tpce.walk import Book

DUE_DAYS = 2
_DAY_S = 86_400


@dataclass
class Unit:
    """What a load unit's days share: who trades what, and what the days add up to."""

    lu: int
    trade_days: int
    acc: customers.Accounts
    prof: Profile
    sec: market.Securities
    exec_name: np.ndarray
    tier: np.ndarray
    rate: np.ndarray
    book: Book
    broker_trades: np.ndarray
    broker_comm: np.ndarray
    #: per security: its latest completed trade's time and price (-1: none yet), shares traded
    last_dts: np.ndarray
    last_price: np.ndarray
    volume: np.ndarray


def generate(lu: int, params: LoadParams, trade_days: int) -> Iterator[Batch]:
    seed = params.seed
    acc = customers.accounts(seed, lu)
    prof = activity.profile(seed, lu, acc)
    first, last, _ = customers.names(seed, lu)
    national, division = customers.tax_rates(seed, lu)
    assert prof.lifo is not None and prof.pair_account is not None
    unit = Unit(lu, trade_days, acc, prof, market.securities(seed, lu),
                exec_name=text.join(first, b" ", last)[acc.owner], tier=acc.tier[acc.owner].astype(np.int64),
                rate=tax_rate(national, division)[acc.owner], book=Book(prof.lifo[prof.pair_account]),
                broker_trades=np.zeros(BROKERS_PER_LU, np.int64), broker_comm=np.zeros(BROKERS_PER_LU, np.int64),
                last_dts=np.full(SECURITIES_PER_LU, -1, np.int64), last_price=np.zeros(SECURITIES_PER_LU, np.int64),
                volume=np.zeros(SECURITIES_PER_LU, np.int64))
    opens = epoch_seconds(business_days(params.load_time, trade_days), DAY_OPEN_S)
    pending: list[Batch] = []
    for number, open_s in enumerate(opens):
        yield from _day(seed, unit, number, int(open_s), pending)
    yield from _book(unit)
    yield from pending
    yield Batch("broker", {
        "b_id": lu * BROKERS_PER_LU + np.arange(1, BROKERS_PER_LU + 1, dtype=np.int64),
        "b_st_id": np.full(BROKERS_PER_LU, b"ACTV", "S4"),
        "b_name": customers.broker_names(seed, lu),
        "b_num_trades": unit.broker_trades.astype(np.int32),
        "b_comm_total": cents_text(unit.broker_comm),
    })
    yield _last_trade(unit, int(opens[-1]))


def _day(seed: int, unit: Unit, number: int, open_s: int, pending: list[Batch]) -> Iterator[Batch]:
    lu, prof, sec = unit.lu, unit.prof, unit.sec
    assert prof.pair_security is not None and prof.pair_qty is not None and prof.lifo is not None
    d: Day = activity.day(seed, lu, number, prof)
    rel: Times = activity.times(seed, lu, number, d.limit)
    done, triggered = activity.completed(rel, number == unit.trade_days - 1)
    triggered = triggered & d.limit
    t0, t1, t2 = rel.t0 + open_s, rel.t1 + open_s, rel.t2 + open_s
    pick = activity.choices(seed, lu, number)
    n = TRADES_PER_DAY
    t_id = first_trade_id(lu, unit.trade_days) + number * n + np.arange(n, dtype=np.int64)
    s, qty, account = prof.pair_security[d.pair], prof.pair_qty[d.pair], d.account
    trade_price = np.where(done, sec.price(s, t2), 0)

    # the completed trades walk their pairs in completion order
    order = np.flatnonzero(done)
    order = order[np.lexsort((t_id[order], t2[order]))]
    buys, lot_t_id, lot_price = unit.book.settle(d.pair[order], d.step[order], t_id[order], trade_price[order],
                                                 t2[order])
    sell = pick.sell.copy()
    sell[order] = ~buys
    lot = np.zeros(n, np.int64)
    lot[order] = lot_t_id
    cost = np.zeros(n, np.int64)
    cost[order] = lot_price

    kind = np.where(d.limit, np.where(sell, np.where(pick.stop, TSL, TLS), TLB), np.where(sell, TMS, TMB))
    waiting = d.limit & ~triggered
    away = np.where(sell & (kind == TLS), 100 + pick.offset_pct, 100 - pick.offset_pct)
    bid = np.where(waiting, sec.price(s, t0) * away // 100, sec.price(s, np.where(d.limit, t1, t0)))
    tier = unit.tier[account]
    charge = CHARGE_CENTS[kind, tier - 1]
    value = qty * np.where(done, trade_price, bid)
    comm = (value * commission_rate(tier, kind, sec.exchange[s], qty) + 5000) // 10_000
    taxable = done & sell & (unit.acc.tax_st[account] > 0)
    tax = np.where(taxable, (np.maximum(trade_price - cost, 0) * qty * unit.rate[account] + 50_000) // 100_000, 0)
    status = np.where(done, b"CMPT", np.where(waiting, b"PNDG", b"SBMT"))
    yield Batch("trade", {
        "t_id": t_id,
        "t_dts": stamps(np.where(done, t2, np.where(triggered, t1, t0))),
        "t_st_id": status,
        "t_tt_id": TRADE_TYPE_IDS[kind],
        "t_is_cash": d.cash.astype(np.int16),
        "t_s_symb": sec.symbol[s],
        "t_qty": qty.astype(np.int32),
        "t_bid_price": bid / 100,
        "t_ca_id": unit.acc.ca_id[account],
        "t_exec_name": unit.exec_name[account],
        "t_trade_price": trade_price / 100,
        "t_chrg": charge / 100,
        "t_comm": comm / 100,
        "t_tax": tax / 100,
        "t_lifo": prof.lifo[account].astype(np.int16),
    }, {"t_trade_price": ~done})
    yield _history(t_id, d.limit, triggered, done, t0, t1, t2)

    amount = np.where(sell, value - charge - comm, -(value + charge + comm))
    amount -= np.where(unit.acc.tax_st[account] == 1, tax, 0)
    yield Batch("settlement", {
        "se_t_id": t_id[done],
        "se_cash_type": np.where(d.cash, b"Cash Account", b"Margin")[done],
        "se_cash_due_date": dates(t2[done] + DUE_DAYS * _DAY_S),
        "se_amt": amount[done] / 100,
    })
    cash = done & d.cash
    yield Batch("cash_transaction", {
        "ct_t_id": t_id[cash],
        "ct_dts": stamps(t2[cash]),
        "ct_amt": amount[cash] / 100,
        "ct_name": text.join(TRADE_TYPE_NAMES[kind[cash]], b" ", qty[cash].astype("S"), b" shares of ",
                             sec.symbol[s[cash]]),
    })
    yield Batch("holding_history", {
        "hh_h_t_id": np.where(sell, lot, t_id)[done],
        "hh_t_id": t_id[done],
        "hh_before_qty": np.where(sell, qty, 0)[done].astype(np.int32),
        "hh_after_qty": np.where(sell, 0, qty)[done].astype(np.int32),
    })
    if waiting.any():
        pending.append(Batch("trade_request", {
            "tr_t_id": t_id[waiting], "tr_tt_id": TRADE_TYPE_IDS[kind[waiting]], "tr_s_symb": sec.symbol[s[waiting]],
            "tr_qty": qty[waiting].astype(np.int32), "tr_bid_price": bid[waiting] / 100,
            "tr_b_id": unit.acc.b_id[account[waiting]],
        }))
    broker = unit.acc.b_id[account[done]] - unit.lu * BROKERS_PER_LU - 1
    unit.broker_trades += np.bincount(broker, minlength=BROKERS_PER_LU)
    unit.broker_comm += np.bincount(broker, weights=comm[done], minlength=BROKERS_PER_LU).astype(np.int64)
    unit.volume += np.bincount(s[done], weights=qty[done], minlength=SECURITIES_PER_LU).astype(np.int64)
    latest = np.full(SECURITIES_PER_LU, -1, np.int64)
    np.maximum.at(latest, s[order], np.arange(len(order)))
    traded = latest >= 0
    unit.last_dts[traded] = t2[order][latest[traded]]
    unit.last_price[traded] = trade_price[order][latest[traded]]


def _history(t_id: np.ndarray, limit: np.ndarray, triggered: np.ndarray, done: np.ndarray, t0: np.ndarray,
             t1: np.ndarray, t2: np.ndarray) -> Batch:
    """TRADE_HISTORY: the order (PNDG or SBMT), a limit order's trigger (SBMT), the
    completion (CMPT); by trade id, then in that order."""
    ids = np.concatenate([t_id, t_id[triggered], t_id[done]])
    step = np.repeat(np.arange(3), [len(t_id), int(triggered.sum()), int(done.sum())])
    first = np.where(limit, b"PNDG", b"SBMT")
    order = np.lexsort((step, ids))
    return Batch("trade_history", {
        "th_t_id": ids[order],
        "th_dts": stamps(np.concatenate([t0, t1[triggered], t2[done]])[order]),
        "th_st_id": np.concatenate([first, np.full(int(triggered.sum()), b"SBMT"),
                                    np.full(int(done.sum()), b"CMPT")])[order],
    })


def _book(unit: Unit) -> Iterator[Batch]:
    """HOLDING (by lot, i.e. opening trade) and HOLDING_SUMMARY (by account and symbol)."""
    prof = unit.prof
    assert prof.pair_account is not None and prof.pair_security is not None and prof.pair_qty is not None
    pair, t_id, price, dts = unit.book.open_lots()
    order = np.argsort(t_id)
    pair = pair[order]
    yield Batch("holding", {
        "h_t_id": t_id[order],
        "h_ca_id": unit.acc.ca_id[prof.pair_account[pair]],
        "h_s_symb": unit.sec.symbol[prof.pair_security[pair]],
        "h_dts": stamps(dts[order]),
        "h_price": price[order] / 100,
        "h_qty": prof.pair_qty[pair].astype(np.int32),
    })
    held = np.flatnonzero(unit.book.walk)
    held = held[np.lexsort((prof.pair_security[held], prof.pair_account[held]))]
    yield Batch("holding_summary", {
        "hs_ca_id": unit.acc.ca_id[prof.pair_account[held]],
        "hs_s_symb": unit.sec.symbol[prof.pair_security[held]],
        "hs_qty": (np.abs(unit.book.walk[held]) * prof.pair_qty[held]).astype(np.int32),
    })


def _last_trade(unit: Unit, last_open: int) -> Batch:
    """LAST_TRADE: each security's latest completed trade (the close if it had none)."""
    local = np.arange(SECURITIES_PER_LU)
    untraded = unit.last_dts < 0
    close = np.full(SECURITIES_PER_LU, last_open + DAY_SECONDS, np.int64)
    dts = np.where(untraded, close, unit.last_dts)
    return Batch("last_trade", {
        "lt_s_symb": unit.sec.symbol,
        "lt_dts": stamps(dts),
        "lt_price": np.where(untraded, unit.sec.price(local, close), unit.last_price) / 100,
        "lt_open_price": unit.sec.price(local, np.full(SECURITIES_PER_LU, last_open, np.int64)) / 100,
        "lt_vol": unit.volume,
    })
