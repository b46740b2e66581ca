"""TPC-C initial data (§4.3.3.1), generated column-wise with numpy for the bulk loaders.

Two kinds of task: ``LoadTask("item")`` (the 100,000 ITEM rows) and
``LoadTask("warehouse", (w,))`` (everything keyed by warehouse ``w``). Each task seeds
its own generators from ``SeedSequence([seed, kind, *key, table, *sub])``: one stream per
table and per district or chunk, so a build is identical for any number of loaders and
any order of tasks, and one table's draws can be replayed without the others (that is
how :func:`order_line_rows` counts order lines exactly without generating them).

Every "now" column (C_SINCE, H_DATE, O_ENTRY_D, delivered OL_DELIVERY_D) is
``params.load_time``. Money is float64 made from integer cents, so each value is the
double nearest its decimal and prints as that decimal.

The data satisfies the twelve consistency conditions of §3.3.2 as loaded: W_YTD is the sum
of D_YTD and of H_AMOUNT (10 × 30,000 = 300,000.00), the 900 undelivered orders are
exactly the NEW_ORDER rows, and C_BALANCE -10.00 = 0 (no delivered amount) - 10.00.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
from numpy.typing import DTypeLike

from tpsbench.core import columns
from tpsbench.core.batch import Batch
from tpsbench.core.workload import LoadParams, LoadTask
from tpsbench.workloads.tpcc import rand

DISTRICTS_PER_WAREHOUSE = 10
CUSTOMERS_PER_DISTRICT = 3000
ORDERS_PER_DISTRICT = 3000
#: orders with an O_ID below this are delivered; the rest are NEW_ORDER rows (900)
FIRST_UNDELIVERED = 2101
ITEMS = 100_000
#: maximum rows per batch: big enough for cheap COPY calls, small enough for memory
CHUNK_ROWS = 50_000
#: O_OL_CNT range; its mean (10) gives the nominal order-line count
OL_CNT_MIN, OL_CNT_MAX = 5, 15

#: first SeedSequence word after the seed: which kind of task the stream belongs to
KIND_CONSTANTS, KIND_ITEM, KIND_WAREHOUSE = 0, 1, 2
#: second-level stream codes: one per table (plus O_OL_CNT, kept apart on purpose)
_ITEM, _WAREHOUSE, _DISTRICT, _STOCK, _CUSTOMER, _HISTORY, _ORDERS, _OL_CNT, _ORDER_LINE = range(1, 10)


def _stream(seed: int, kind: int, *words: int) -> np.random.Generator:
    """An independent generator for one (seed, kind, key..., table, sub...) path."""
    if seed < 0:
        raise ValueError("the seed must be a non-negative integer")
    return np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([seed, kind, *words])))


def constants(seed: int) -> dict[str, int]:
    """The C-load constants ``{"c_last", "c_id", "ol_i_id"}`` of a build with ``seed``.

    They come from their own stream so that the loader and the metadata table (and a
    later run choosing its C-run) agree on them without passing anything around.
    """
    return rand.load_constants(_stream(seed, KIND_CONSTANTS))


def ol_counts(seed: int, w: int, d: int) -> np.ndarray:
    """O_OL_CNT of the 3,000 orders of district ``(w, d)``, O_ID order.

    A dedicated stream: the same values are used by the generator and by
    :func:`order_line_rows`, which needs nothing else.
    """
    rng = _stream(seed, KIND_WAREHOUSE, w, _OL_CNT, d)
    return columns.uniform(rng, OL_CNT_MIN, OL_CNT_MAX, ORDERS_PER_DISTRICT, np.int16)


def order_line_rows(seed: int, warehouses: Iterable[int]) -> int:
    """Exact ORDER_LINE row count for the given warehouses of a build with ``seed``.

    Cheap (3,000 small integers drawn per district), because O_OL_CNT has its own stream.
    """
    return sum(
        int(ol_counts(seed, w, d).sum(dtype=np.int64))
        for w in warehouses
        for d in range(1, DISTRICTS_PER_WAREHOUSE + 1)
    )


def expected_rows(scale: int, seed: int | None = None) -> dict[str, int]:
    """Row counts per table right after a build of ``scale`` warehouses.

    All counts are exact except ORDER_LINE, which depends on the random O_OL_CNT: with
    ``seed`` it is exact (via :func:`order_line_rows`), without it it is the nominal
    10 lines per order, 300,000 per warehouse (the spec allows ±1%; the actual count for
    a single warehouse is within about ±0.6% of it with probability > 0.999).
    """
    orders = scale * DISTRICTS_PER_WAREHOUSE * ORDERS_PER_DISTRICT
    undelivered = ORDERS_PER_DISTRICT - FIRST_UNDELIVERED + 1
    return {
        "warehouse": scale,
        "district": scale * DISTRICTS_PER_WAREHOUSE,
        "customer": scale * DISTRICTS_PER_WAREHOUSE * CUSTOMERS_PER_DISTRICT,
        "history": scale * DISTRICTS_PER_WAREHOUSE * CUSTOMERS_PER_DISTRICT,
        "orders": orders,
        "new_order": scale * DISTRICTS_PER_WAREHOUSE * undelivered,
        "order_line": (
            order_line_rows(seed, range(1, scale + 1))
            if seed is not None
            else orders * (OL_CNT_MIN + OL_CNT_MAX) // 2
        ),
        "item": ITEMS,
        "stock": scale * ITEMS,
    }


def generate(task: LoadTask, params: LoadParams) -> Iterator[Batch]:
    """The batches of one task, at most :data:`CHUNK_ROWS` rows each, in table order."""
    if task.kind == "item":
        yield from _items(params)
    elif task.kind == "warehouse":
        (w,) = task.key
        if not 1 <= w <= params.scale:
            raise ValueError(f"warehouse {w} outside 1..{params.scale}")
        yield from _warehouse(w, params)
    else:
        raise ValueError(f"unknown TPC-C load task {task!r}")


# ---- helpers -------------------------------------------------------------------------


def _full(n: int, value: object, dtype: DTypeLike) -> np.ndarray:
    return np.full(n, value, dtype=dtype)


def _money(cents: np.ndarray, scale: int = 2) -> np.ndarray:
    """Integer units of 10**-scale to float64: the double nearest each exact decimal."""
    return cents.astype(np.float64) / 10**scale


def _address(rng: np.random.Generator, n: int, prefix: str) -> dict[str, np.ndarray]:
    """The street_1, street_2, city, state, zip group shared by WAREHOUSE, DISTRICT, CUSTOMER."""
    return {
        f"{prefix}_street_1": rand.a_strings(rng, n, 10, 20),
        f"{prefix}_street_2": rand.a_strings(rng, n, 10, 20),
        f"{prefix}_city": rand.a_strings(rng, n, 10, 20),
        f"{prefix}_state": rand.states(rng, n),
        f"{prefix}_zip": rand.zip_codes(rng, n),
    }


# ---- ITEM ----------------------------------------------------------------------------


def _items(params: LoadParams) -> Iterator[Batch]:
    for chunk, lo in enumerate(range(0, ITEMS, CHUNK_ROWS)):
        n = min(CHUNK_ROWS, ITEMS - lo)
        rng = _stream(params.seed, KIND_ITEM, _ITEM, chunk)
        i_data, _ = rand.original_strings(rng, n, 26, 50)
        yield Batch("item", {
            "i_id": np.arange(lo + 1, lo + n + 1, dtype=np.int32),
            "i_im_id": columns.uniform(rng, 1, 10_000, n),
            "i_name": rand.a_strings(rng, n, 14, 24),
            "i_price": _money(columns.uniform(rng, 100, 10_000, n)),
            "i_data": i_data,
        })


# ---- one warehouse -------------------------------------------------------------------


def _warehouse(w: int, params: LoadParams) -> Iterator[Batch]:
    seed = params.seed
    now = columns.load_timestamp(params.load_time)
    c_last = params.constants.get("c_last", constants(seed)["c_last"])

    rng = _stream(seed, KIND_WAREHOUSE, w, _WAREHOUSE)
    yield Batch("warehouse", {
        "w_id": np.array([w], np.int32),
        "w_name": rand.a_strings(rng, 1, 6, 10),
        **_address(rng, 1, "w"),
        "w_tax": _money(columns.uniform(rng, 0, 2000, 1), 4),
        "w_ytd": np.array([300_000.0]),
    })

    n = DISTRICTS_PER_WAREHOUSE
    rng = _stream(seed, KIND_WAREHOUSE, w, _DISTRICT)
    yield Batch("district", {
        "d_id": np.arange(1, n + 1, dtype=np.int16),
        "d_w_id": _full(n, w, np.int32),
        "d_name": rand.a_strings(rng, n, 6, 10),
        **_address(rng, n, "d"),
        "d_tax": _money(columns.uniform(rng, 0, 2000, n), 4),
        "d_ytd": _full(n, 30_000.0, np.float64),
        "d_next_o_id": _full(n, ORDERS_PER_DISTRICT + 1, np.int32),
    })

    yield from _stock(seed, w)
    for d in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        yield from _customers(seed, w, d, now, c_last)
        yield from _orders(seed, w, d, now)


def _stock(seed: int, w: int) -> Iterator[Batch]:
    for chunk, lo in enumerate(range(0, ITEMS, CHUNK_ROWS)):
        n = min(CHUNK_ROWS, ITEMS - lo)
        rng = _stream(seed, KIND_WAREHOUSE, w, _STOCK, chunk)
        quantity = columns.uniform(rng, 10, 100, n, np.int16)
        # the ten S_DIST_xx are fixed 24-character a-strings: one matrix, ten strided
        # column views of it (no copies)
        dist = columns.random_chars(rng, n * 240).reshape(n, 240).view("S24")
        s_data, _ = rand.original_strings(rng, n, 26, 50)
        zeros = np.zeros(n, np.int32)
        yield Batch("stock", {
            "s_i_id": np.arange(lo + 1, lo + n + 1, dtype=np.int32),
            "s_w_id": _full(n, w, np.int32),
            "s_quantity": quantity,
            "s_ytd": zeros,
            "s_order_cnt": zeros,
            "s_remote_cnt": zeros,
            **{f"s_dist_{k + 1:02d}": dist[:, k] for k in range(10)},
            "s_data": s_data,
        })


def _customers(seed: int, w: int, d: int, now: np.datetime64, c_last: int) -> Iterator[Batch]:
    n = CUSTOMERS_PER_DISTRICT
    rng = _stream(seed, KIND_WAREHOUSE, w, _CUSTOMER, d)
    c_id = np.arange(1, n + 1, dtype=np.int32)
    # §4.3.3.1: the first 1000 customers take every name once, the rest are skewed
    name_numbers = np.concatenate([np.arange(1000), columns.nurand(rng, rand.A_C_LAST, 0, 999, c_last, n - 1000)])
    first = rand.a_strings(rng, n, 8, 16)
    address = _address(rng, n, "c")
    phone = rand.n_strings(rng, n, 16, 16)
    bad_credit = columns.uniform(rng, 1, 100, n) <= 10
    discount = _money(columns.uniform(rng, 0, 5000, n), 4)
    c_data = rand.a_strings(rng, n, 300, 500)
    d_col = _full(n, d, np.int16)
    w_col = _full(n, w, np.int32)
    stamps = _full(n, now, "datetime64[s]")
    yield Batch("customer", {
        "c_id": c_id,
        "c_d_id": d_col,
        "c_w_id": w_col,
        "c_first": first,
        "c_middle": _full(n, b"OE", "S2"),
        "c_last": rand.last_names(name_numbers),
        **address,
        "c_phone": phone,
        "c_since": stamps,
        "c_credit": np.where(bad_credit, b"BC", b"GC"),
        "c_credit_lim": _full(n, 50_000.0, np.float64),
        "c_discount": discount,
        "c_balance": _full(n, -10.0, np.float64),
        "c_ytd_payment": _full(n, 10.0, np.float64),
        "c_payment_cnt": _full(n, 1, np.int32),
        "c_delivery_cnt": _full(n, 0, np.int32),
        "c_data": c_data,
    })

    rng = _stream(seed, KIND_WAREHOUSE, w, _HISTORY, d)
    yield Batch("history", {
        "h_c_id": c_id,
        "h_c_d_id": d_col,
        "h_c_w_id": w_col,
        "h_d_id": d_col,
        "h_w_id": w_col,
        "h_date": stamps,
        "h_amount": _full(n, 10.0, np.float64),
        "h_data": rand.a_strings(rng, n, 12, 24),
    })


def _orders(seed: int, w: int, d: int, now: np.datetime64) -> Iterator[Batch]:
    n = ORDERS_PER_DISTRICT
    rng = _stream(seed, KIND_WAREHOUSE, w, _ORDERS, d)
    o_id = np.arange(1, n + 1, dtype=np.int32)
    undelivered = o_id >= FIRST_UNDELIVERED
    carrier = columns.uniform(rng, 1, 10, n, np.int16)
    carrier[undelivered] = 0  # NULL in the batch; 0 keeps the array free of junk
    o_c_id = (rng.permutation(CUSTOMERS_PER_DISTRICT) + 1).astype(np.int32)
    cnt = ol_counts(seed, w, d)
    yield Batch(
        "orders",
        {
            "o_id": o_id,
            "o_d_id": _full(n, d, np.int16),
            "o_w_id": _full(n, w, np.int32),
            "o_c_id": o_c_id,
            "o_entry_d": _full(n, now, "datetime64[s]"),
            "o_carrier_id": carrier,
            "o_ol_cnt": cnt,
            "o_all_local": _full(n, 1, np.int16),
        },
        {"o_carrier_id": undelivered},
    )

    new_ids = o_id[undelivered]
    m = len(new_ids)
    yield Batch("new_order", {
        "no_o_id": new_ids,
        "no_d_id": _full(m, d, np.int16),
        "no_w_id": _full(m, w, np.int32),
    })

    rng = _stream(seed, KIND_WAREHOUSE, w, _ORDER_LINE, d)
    lines = int(cnt.sum(dtype=np.int64))
    ol_o_id = np.repeat(o_id, cnt)
    starts = np.cumsum(cnt, dtype=np.int64) - cnt
    ol_number = (np.arange(lines) - np.repeat(starts, cnt) + 1).astype(np.int16)
    ol_undelivered = ol_o_id >= FIRST_UNDELIVERED
    i_id = columns.uniform(rng, 1, ITEMS, lines)
    cents = columns.uniform(rng, 1, 999_999, lines)
    cents[~ol_undelivered] = 0  # delivered lines carry OL_AMOUNT 0.00 at load
    yield Batch(
        "order_line",
        {
            "ol_o_id": ol_o_id,
            "ol_d_id": _full(lines, d, np.int16),
            "ol_w_id": _full(lines, w, np.int32),
            "ol_number": ol_number,
            "ol_i_id": i_id,
            "ol_supply_w_id": _full(lines, w, np.int32),
            "ol_delivery_d": _full(lines, now, "datetime64[s]"),
            "ol_quantity": _full(lines, 5, np.int16),
            "ol_amount": _money(cents),
            "ol_dist_info": columns.as_strings(columns.random_chars(rng, lines * 24).reshape(lines, 24)),
        },
        {"ol_delivery_d": ol_undelivered},
    )
