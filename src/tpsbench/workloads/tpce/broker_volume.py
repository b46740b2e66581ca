"""Broker-Volume (TPC-E, B2, read-only): the pending order volume of 20-40 brokers in one sector.

One statement: the brokers' TRADE_REQUEST rows (pending limit orders) joined through
security, company and industry to the sector, ``SUM(tr_qty * tr_bid_price)`` per broker,
largest first. The broker list has 20 to 40 names (EGen's range), no more than the
database has brokers (10 per load unit), which is how EGen caps it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpsbench.core.sql import SqlDialect
from tpsbench.workloads.tpce.mix import Draws
from tpsbench.workloads.tpce.sql import counted, marks

if TYPE_CHECKING:
    from tpsbench.workloads.tpce.frames import FramesSession

#: EGen's broker list lengths
MIN_BROKERS, MAX_BROKERS = 20, 40


@dataclass(slots=True)
class BrokerVolumeInputs:
    brokers: list[str]
    sector: str


@dataclass(frozen=True, slots=True)
class BrokerVolumeSql:
    #: indexed by the number of brokers
    bv_volume_k: tuple[str | None, ...]


def statements(d: SqlDialect) -> BrokerVolumeSql:
    return BrokerVolumeSql(
        bv_volume_k=counted(lambda k: (
            "SELECT b_name, SUM(tr_qty * tr_bid_price) AS volume"
            " FROM trade_request, sector, industry, company, broker, security"
            " WHERE tr_b_id = b_id AND tr_s_symb = s_symb AND s_co_id = co_id AND co_in_id = in_id"
            f" AND sc_id = in_sc_id AND b_name IN ({marks(k)}) AND sc_name = ?"
            " GROUP BY b_name ORDER BY volume DESC"), MAX_BROKERS),
    )


def inputs(draw: Draws) -> BrokerVolumeInputs:
    brokers = draw.world.brokers
    n = min(draw.rng.randint(MIN_BROKERS, MAX_BROKERS), len(brokers))
    return BrokerVolumeInputs(draw.rng.sample(brokers, n), draw.pick(draw.world.sectors))


def drawn(user: FramesSession) -> BrokerVolumeInputs:
    """The inputs from the user's draws."""
    return inputs(user.draw)


def run(user: FramesSession, inp: BrokerVolumeInputs) -> list[tuple[str, object]]:
    """(broker name, pending volume) of the brokers that have any, largest first."""
    link, s = user.link, user.sql.broker_volume
    cur = link.cur
    cur.execute(s.bv_volume_k[len(inp.brokers)], [*inp.brokers, inp.sector])
    return [(row[0], row[1]) for row in cur.fetchall()]
