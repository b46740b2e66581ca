"""Properties of the TPC-C initial data, checked on real generated rows.

Statistical checks use bounds of about six standard deviations (or a chi-square far in
the tail) with fixed seeds, so they do not flake, yet each one fails for the mistake it
targets: the wrong C constant, a folded (biased) alphabet, a range off by one, a missing
ORIGINAL, a share of 20% instead of 10%.
"""

from __future__ import annotations

import decimal
import hashlib
import itertools
import re
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpsbench.core import columns
from tpsbench.core.batch import Batch, check_plain
from tpsbench.core.workload import LoadParams, LoadTask
from tpsbench.workloads.tpcc import TpccWorkload, loader, rand

SEED = 20240501
LOAD_TIME = "2024-05-01T12:00:00"
PARAMS = LoadParams(scale=2, seed=SEED, load_time=LOAD_TIME, constants=loader.constants(SEED))
SCHEMA = TpccWorkload.schema_file("postgresql")
ALNUM = set(columns.ALNUM.tobytes())


def _schema_columns() -> dict[str, list[str]]:
    tables = {}
    for m in re.finditer(r"CREATE TABLE (\w+) \((.*?)\n\);", SCHEMA.read_text(), re.DOTALL):
        lines = [line.split()[0] for line in m.group(2).splitlines() if line.strip()]
        tables[m.group(1)] = [name for name in lines if name != "PRIMARY"]
    return tables


def _concat(batches: list[Batch]) -> dict[str, dict[str, np.ndarray]]:
    """Table -> column -> all values; NULL masks under the key ``"<column>:null"``."""
    by_table: dict[str, list[Batch]] = defaultdict(list)
    for b in batches:
        by_table[b.table].append(b)
    out = {}
    for table, parts in by_table.items():
        cols = {name: np.concatenate([p.columns[name] for p in parts]) for name in parts[0].names}
        for name in parts[0].names:
            masks = [p.nulls.get(name, np.zeros(len(p), bool)) for p in parts]
            cols[name + ":null"] = np.concatenate(masks)
        out[table] = cols
    return out


@pytest.fixture(scope="module")
def wh_batches() -> list[Batch]:
    return list(loader.generate(LoadTask("warehouse", (1,)), PARAMS))


@pytest.fixture(scope="module")
def wh2_batches() -> list[Batch]:
    return list(loader.generate(LoadTask("warehouse", (2,)), PARAMS))


@pytest.fixture(scope="module")
def item_batches() -> list[Batch]:
    return list(loader.generate(LoadTask("item"), PARAMS))


@pytest.fixture(scope="module")
def db(wh_batches, item_batches) -> dict[str, dict[str, np.ndarray]]:
    return _concat(wh_batches + item_batches)


def _lengths(values: np.ndarray) -> np.ndarray:
    return np.strings.str_len(values)


def _chi2(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(((observed - expected) ** 2 / expected).sum())


def _chi2_limit(df: int) -> float:
    """Far upper tail of chi-square(df): mean + 6 sd, never reached by chance in practice."""
    return df + 6 * np.sqrt(2 * df)


def _binomial_ok(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= 6 * np.sqrt(n * p * (1 - p))


# ---- shape of the batches --------------------------------------------------------------


def test_batches_follow_schema_order_and_chunk_size(wh_batches, item_batches):
    schema = _schema_columns()
    for b in wh_batches + item_batches:
        assert b.names == schema[b.table], b.table
        assert 0 < len(b) <= loader.CHUNK_ROWS
        assert {len(v) for v in b.columns.values()} == {len(b)}
        assert all(len(m) == len(b) and m.dtype == bool for m in b.nulls.values())
        check_plain(b)
    assert {b.table for b in wh_batches} == set(schema) - {"item"}


def test_row_counts_one_warehouse(db):
    got = {table: len(cols[next(iter(cols))]) for table, cols in db.items()}
    want = loader.expected_rows(1, SEED)
    assert got == want
    assert got["order_line"] == loader.order_line_rows(SEED, [1]) == int(db["orders"]["o_ol_cnt"].sum())
    assert abs(got["order_line"] - 300_000) <= 3000  # the spec's ±1%
    nominal = loader.expected_rows(1)
    assert nominal.pop("order_line") == 300_000
    assert nominal == {k: v for k, v in got.items() if k != "order_line"} == {
        "warehouse": 1, "district": 10, "customer": 30_000, "history": 30_000,
        "orders": 30_000, "new_order": 9_000, "item": 100_000, "stock": 100_000,
    }


# ---- random functions --------------------------------------------------------------------


def _nurand_pmf(a: int, x: int, y: int, c: int) -> np.ndarray:
    """Exact NURand distribution over x..y by enumerating every (random(0,A), random(x,y))."""
    pairs = np.arange(a + 1)[:, None] | np.arange(x, y + 1)[None, :]
    counts = np.bincount(((pairs + c) % (y - x + 1)).ravel(), minlength=y - x + 1)
    return counts / counts.sum()


def test_nurand_matches_exact_distribution():
    rng = np.random.default_rng(1)
    n, c = 2_000_000, 123
    pmf = _nurand_pmf(255, 0, 999, c)
    sample = columns.nurand(rng, 255, 0, 999, c, n)
    observed = np.bincount(sample, minlength=1000)
    assert _chi2(observed, n * pmf) < _chi2_limit(999)
    # the same test rejects a uniform draw and a NURand with another C: it has power
    uniform = np.bincount(rng.integers(0, 1000, n), minlength=1000)
    assert _chi2(uniform, n * pmf) > 10 * _chi2_limit(999)
    other_c = np.bincount(columns.nurand(rng, 255, 0, 999, c + 1, n), minlength=1000)
    assert _chi2(other_c, n * pmf) > 10 * _chi2_limit(999)


@settings(max_examples=60, deadline=None)
@given(
    a=st.sampled_from([1, 3, 7, 255, 1023, 8191]),
    x=st.integers(0, 50),
    span=st.integers(0, 3000),
    c_frac=st.floats(0, 1),
    seed=st.integers(0, 2**32),
)
def test_nurand_stays_in_range(a, x, span, c_frac, seed):
    c = int(c_frac * a)
    values = columns.nurand(np.random.default_rng(seed), a, x, x + span, c, 500)
    assert values.min() >= x and values.max() <= x + span


def test_nurand_rejects_bad_c():
    with pytest.raises(ValueError):
        columns.nurand(np.random.default_rng(0), 255, 0, 999, 256, 1)


def test_random_chars_uniform_over_alphabet():
    rng = np.random.default_rng(2)
    for alphabet in (columns.ALNUM, columns.DIGITS, columns.UPPER):
        n = 1_000_000
        chars = columns.random_chars(rng, n, alphabet)
        observed = np.bincount(chars, minlength=256)[alphabet]
        assert observed.sum() == n  # nothing outside the alphabet
        assert _chi2(observed, np.full(len(alphabet), n / len(alphabet))) < _chi2_limit(len(alphabet) - 1)
    # a folded byte % 62 (no rejection) would fail the same bound by far
    folded = np.bincount(rng.integers(0, 256, 1_000_000) % 62, minlength=62)
    assert _chi2(folded, np.full(62, 1_000_000 / 62)) > 10 * _chi2_limit(61)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), x=st.integers(1, 40), extra=st.integers(0, 40), seed=st.integers(0, 2**32))
def test_strings_lengths_and_alphabet(n, x, extra, seed):
    y = x + extra
    rng = np.random.default_rng(seed)
    a = rand.a_strings(rng, n, x, y)
    digits = rand.n_strings(rng, n, x, y)
    assert a.shape == digits.shape == (n,)
    for values, allowed in ((a, ALNUM), (digits, set(b"0123456789"))):
        lengths = _lengths(values)
        assert ((lengths >= x) & (lengths <= y)).all()
        assert set(b"".join(values.tolist())) <= allowed


def test_last_names():
    assert rand.last_names(np.array([0, 371, 999])).tolist() == [b"BARBARBAR", b"PRICALLYOUGHT", b"EINGEINGEING"]
    assert len(set(rand.LAST_NAMES.tolist())) == 1000
    assert _lengths(rand.LAST_NAMES).max() <= 16
    with pytest.raises(ValueError):
        rand.last_names(np.array([1000]))


def test_c_run_chooser_follows_rule():
    rng = np.random.default_rng(3)
    for c_load in range(256):
        valid = {c for c in range(256) if 65 <= abs(c - c_load) <= 119 and abs(c - c_load) not in (96, 112)}
        assert {c for c in range(256) if rand.c_run_valid(c, c_load)} == valid
        assert valid  # never empty
        picks = {rand.choose_c_run(rng, c_load) for _ in range(40)}
        assert picks <= valid and len(picks) > 1
    assert not rand.c_run_valid(100 + 96, 100) and not rand.c_run_valid(100 - 112, 100)
    assert rand.c_run_valid(100 + 95, 100) and not rand.c_run_valid(100 + 64, 100)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**63))
def test_constants_in_range_and_run_constants_valid(seed):
    load = loader.constants(seed)
    assert load == loader.constants(seed)
    assert 0 <= load["c_last"] <= 255 and 0 <= load["c_id"] <= 1023 and 0 <= load["ol_i_id"] <= 8191
    run = rand.run_constants(np.random.default_rng(seed), load)
    assert rand.c_run_valid(run["c_last"], load["c_last"])


def test_constants_depend_on_seed():
    assert len({tuple(loader.constants(s).values()) for s in range(20)}) == 20


# ---- loaded data -------------------------------------------------------------------------

STRING_BOUNDS = {
    ("item", "i_name"): (14, 24), ("item", "i_data"): (26, 50),
    ("warehouse", "w_name"): (6, 10), ("district", "d_name"): (6, 10),
    ("customer", "c_first"): (8, 16), ("customer", "c_street_1"): (10, 20),
    ("customer", "c_street_2"): (10, 20), ("customer", "c_city"): (10, 20),
    ("customer", "c_data"): (300, 500), ("customer", "c_phone"): (16, 16),
    ("customer", "c_state"): (2, 2), ("customer", "c_zip"): (9, 9), ("customer", "c_middle"): (2, 2),
    ("history", "h_data"): (12, 24), ("stock", "s_data"): (26, 50),
    ("order_line", "ol_dist_info"): (24, 24),
    **{("stock", f"s_dist_{k:02d}"): (24, 24) for k in range(1, 11)},
}


def test_string_lengths_cover_exact_bounds(db):
    for (table, column), (x, y) in STRING_BOUNDS.items():
        lengths = _lengths(db[table][column])
        if len(lengths) >= 3000:  # every length in range is drawn, so both ends show
            assert (lengths.min(), lengths.max()) == (x, y), (table, column)
        else:
            assert x <= lengths.min() and lengths.max() <= y, (table, column)
    c_data = _lengths(db["customer"]["c_data"])
    observed = np.bincount(c_data - 300, minlength=201)
    assert _chi2(observed, np.full(201, len(c_data) / 201)) < _chi2_limit(200)


def test_strings_are_plain_and_without_inner_nul(db):
    for table, cols in db.items():
        for name, values in cols.items():
            if values.dtype.kind != "S":
                continue
            mat = values.view(np.uint8).reshape(len(values), values.dtype.itemsize)
            used = mat != 0
            # zeros only as trailing padding: once a row hits NUL it stays NUL
            assert (used[:, :-1] >= used[:, 1:]).all(), (table, name)
            assert set(np.unique(mat[used]).tolist()) <= ALNUM, (table, name)


def test_formatted_columns(db):
    c = db["customer"]
    assert set(c["c_middle"].tolist()) == {b"OE"}
    mats = {k: c[k].view(np.uint8).reshape(len(c[k]), -1) for k in ("c_zip", "c_phone", "c_state")}
    assert (mats["c_zip"][:, 4:] == ord("1")).all() and np.isin(mats["c_zip"][:, :4], columns.DIGITS).all()
    assert np.isin(mats["c_phone"], columns.DIGITS).all()
    assert np.isin(mats["c_state"], columns.UPPER).all()
    assert len(np.unique(c["c_zip"])) > 5000  # the 4 leading digits vary


def test_original_share(db):
    for table, column in (("item", "i_data"), ("stock", "s_data")):
        values = db[table][column]
        has = np.strings.find(values, b"ORIGINAL") >= 0
        assert _binomial_ok(int(has.sum()), len(values), 0.10), (table, int(has.sum()))
        # the word is placed anywhere, including flush at both ends of the value
        pos = np.strings.find(values[has], b"ORIGINAL")
        assert pos.min() == 0 and (pos + 8 == _lengths(values[has])).any()


def test_credit_and_customer_constants(db):
    c = db["customer"]
    credit = c["c_credit"]
    assert set(credit.tolist()) == {b"GC", b"BC"}
    assert _binomial_ok(int((credit == b"BC").sum()), len(credit), 0.10)
    assert (c["c_balance"] == -10.0).all() and (c["c_ytd_payment"] == 10.0).all()
    assert (c["c_payment_cnt"] == 1).all() and (c["c_delivery_cnt"] == 0).all()
    assert (c["c_credit_lim"] == 50_000.0).all()
    assert (c["c_since"] == np.datetime64(LOAD_TIME, "s")).all()


def test_last_names_of_customers(db):
    c = db["customer"]
    numbers = {name: k for k, name in enumerate(rand.LAST_NAMES.tolist())}
    ids, last = c["c_id"], c["c_last"]
    first_1000 = ids <= 1000
    assert (last[first_1000] == rand.LAST_NAMES[ids[first_1000] - 1]).all()
    assert len(set(last[first_1000].tolist())) == 1000
    # the others follow NURand(255, 0, 999) with C-load: the most likely C is C-load
    counts = np.bincount([numbers[v] for v in last[~first_1000].tolist()], minlength=1000)
    log_pmf = np.log(_nurand_pmf(255, 0, 999, 0))
    loglik = [counts @ np.roll(log_pmf, shift) for shift in range(256)]
    assert int(np.argmax(loglik)) == PARAMS.constants["c_last"]


def test_orders(db):
    o, no = db["orders"], db["new_order"]
    for d in range(1, 11):
        mine = o["o_d_id"] == d
        assert sorted(o["o_c_id"][mine].tolist()) == list(range(1, 3001))
        undelivered = mine & o["o_carrier_id:null"]
        assert sorted(o["o_id"][undelivered].tolist()) == list(range(2101, 3001))
        assert sorted(no["no_o_id"][no["no_d_id"] == d].tolist()) == list(range(2101, 3001))
    carriers = o["o_carrier_id"][~o["o_carrier_id:null"]]
    assert (carriers.min(), carriers.max()) == (1, 10) and len(carriers) == 21_000
    cnt = o["o_ol_cnt"]
    assert (cnt.min(), cnt.max()) == (5, 15)
    assert abs(cnt.mean() - 10) < 6 * np.sqrt(10 / len(cnt))
    assert (o["o_all_local"] == 1).all() and (o["o_entry_d"] == np.datetime64(LOAD_TIME, "s")).all()


def test_order_lines_match_orders(db):
    o, ol = db["orders"], db["order_line"]

    def key(d, oid):
        return d.astype(np.int64) * 10_000 + oid

    order_key = key(o["o_d_id"], o["o_id"])
    line_key = key(ol["ol_d_id"], ol["ol_o_id"])
    uniq, counts = np.unique(line_key, return_counts=True)
    by_order = dict(zip(order_key.tolist(), o["o_ol_cnt"].tolist()))
    assert dict(zip(uniq.tolist(), counts.tolist())) == by_order  # condition 6
    # OL_NUMBER runs 1..O_OL_CNT within each order
    assert (ol["ol_number"][1:][np.diff(line_key) == 0] == ol["ol_number"][:-1][np.diff(line_key) == 0] + 1).all()
    assert (ol["ol_number"][np.r_[True, np.diff(line_key) != 0]] == 1).all()
    delivered = ol["ol_o_id"] < 2101
    assert (ol["ol_delivery_d:null"] == ~delivered).all()  # condition 7
    assert (ol["ol_delivery_d"][delivered] == np.datetime64(LOAD_TIME, "s")).all()
    assert (ol["ol_amount"][delivered] == 0).all()
    amounts = ol["ol_amount"][~delivered]
    assert amounts.min() >= 0.01 and amounts.max() <= 9999.99 and amounts.max() > 9900
    assert (ol["ol_quantity"] == 5).all() and (ol["ol_supply_w_id"] == 1).all()
    assert ol["ol_i_id"].min() >= 1 and ol["ol_i_id"].max() <= 100_000
    assert _chi2(np.bincount(ol["ol_i_id"] // 1000 - (ol["ol_i_id"] == 100_000), minlength=100),
                 np.full(100, len(ol["ol_i_id"]) / 100)) < _chi2_limit(99)


MONEY_SCALE = {
    ("item", "i_price"): 2, ("warehouse", "w_tax"): 4, ("warehouse", "w_ytd"): 2,
    ("district", "d_tax"): 4, ("district", "d_ytd"): 2, ("customer", "c_credit_lim"): 2,
    ("customer", "c_discount"): 4, ("customer", "c_balance"): 2, ("customer", "c_ytd_payment"): 2,
    ("history", "h_amount"): 2, ("order_line", "ol_amount"): 2,
}


def test_money_is_exact_decimal(db):
    for (table, column), scale in MONEY_SCALE.items():
        values = db[table][column]
        assert values.dtype == np.float64
        assert (np.round(values * 10**scale) / 10**scale == values).all(), (table, column)
        texts = np.unique(values.astype("S")).tolist()
        assert all(decimal.Decimal(t.decode()).as_tuple().exponent >= -scale for t in texts), (table, column)
    price = db["item"]["i_price"]
    assert (price.min(), price.max()) == (1.0, 100.0)
    assert 0 <= db["customer"]["c_discount"].min() and db["customer"]["c_discount"].max() <= 0.5
    assert db["customer"]["c_discount"].max() > 0.49
    assert 0 <= db["district"]["d_tax"].min() and db["district"]["d_tax"].max() <= 0.2


def test_ytd_conditions_hold_after_load(db):
    h = db["history"]
    assert db["warehouse"]["w_ytd"][0] == h["h_amount"].sum() == db["district"]["d_ytd"].sum()  # 1, 8
    for d, ytd in zip(db["district"]["d_id"].tolist(), db["district"]["d_ytd"].tolist()):
        assert ytd == h["h_amount"][h["h_d_id"] == d].sum()  # condition 9
    assert (db["district"]["d_next_o_id"] == 3001).all()
    c = db["customer"]
    # conditions 10 and 12: no delivered amount yet, one 10.00 payment per customer
    assert (np.sort(h["h_c_d_id"].astype(np.int64) * 10_000 + h["h_c_id"])
            == np.sort(c["c_d_id"].astype(np.int64) * 10_000 + c["c_id"])).all()
    assert (c["c_balance"] == 0 - 10.0).all() and (c["c_balance"] + c["c_ytd_payment"] == 0).all()


def test_stock_and_item_ranges(db):
    s, i = db["stock"], db["item"]
    assert (s["s_quantity"].min(), s["s_quantity"].max()) == (10, 100)
    assert sorted(set(s["s_i_id"].tolist())) == list(range(1, 100_001)) and (s["s_w_id"] == 1).all()
    assert not (s["s_ytd"].any() or s["s_order_cnt"].any() or s["s_remote_cnt"].any())
    assert (i["i_im_id"].min(), i["i_im_id"].max()) == (1, 10_000)
    assert (i["i_id"] == np.arange(1, 100_001)).all()


# ---- determinism -------------------------------------------------------------------------


def _digests(batches) -> dict[str, str]:
    hashes: dict[str, hashlib._Hash] = {}
    for b in batches:
        h = hashes.setdefault(b.table, hashlib.sha256())
        for name, values in b.columns.items():
            h.update(name.encode() + str(values.dtype).encode() + np.ascontiguousarray(values).tobytes())
            if name in b.nulls:
                h.update(b.nulls[name].tobytes())
    return {t: h.hexdigest() for t, h in hashes.items()}


def _per_task(params: LoadParams, tasks: list[LoadTask], interleave: bool) -> dict[LoadTask, dict[str, str]]:
    if not interleave:
        return {t: _digests(loader.generate(t, params)) for t in tasks}
    # consume the tasks' generators round-robin: no state may leak between tasks
    gens = {t: loader.generate(t, params) for t in tasks}
    collected: dict[LoadTask, list[Batch]] = {t: [] for t in tasks}
    for t, b in ((t, b) for row in itertools.zip_longest(*gens.values()) for t, b in zip(gens, row) if b):
        collected[t].append(b)
    return {t: _digests(bs) for t, bs in collected.items()}


def test_streams_are_independent(db, wh2_batches):
    """Long random strings never repeat: a stream shared by two districts, chunks or
    warehouses would repeat every value of one in the other."""
    second = _concat(wh2_batches)
    for table, cols in db.items():
        for name, values in cols.items():
            if values.dtype.kind != "S" or _lengths(values).min() < 8 or name in ("c_zip", "c_last"):
                continue
            both = np.concatenate([values, second[table][name]]) if table in second else values
            assert len(np.unique(both)) == len(both), (table, name)


def test_same_seed_same_data_whatever_the_task_order(wh_batches, wh2_batches):
    tasks = [LoadTask("item"), LoadTask("warehouse", (1,)), LoadTask("warehouse", (2,))]
    forward = _per_task(PARAMS, tasks, interleave=False)
    backward = _per_task(PARAMS, tasks[::-1], interleave=True)
    assert forward == backward
    assert forward[tasks[1]] == _digests(wh_batches)
    assert forward[tasks[2]] == _digests(wh2_batches)
    # warehouses differ from each other in every table that holds random values
    assert all(forward[tasks[1]][t] != forward[tasks[2]][t] for t in forward[tasks[1]] if t != "new_order")
    # the data of warehouse 1 does not depend on how many warehouses the build has
    bigger = LoadParams(scale=7, seed=SEED, load_time=LOAD_TIME, constants=PARAMS.constants)
    assert _digests(loader.generate(tasks[1], bigger)) == forward[tasks[1]]
    assert loader.expected_rows(2, SEED)["order_line"] == sum(
        len(b) for t in tasks[1:] for b in loader.generate(t, PARAMS) if b.table == "order_line"
    )


def test_other_seed_other_data(wh_batches, item_batches):
    other = LoadParams(scale=2, seed=SEED + 1, load_time=LOAD_TIME, constants=loader.constants(SEED + 1))
    mine = _digests(wh_batches + item_batches)
    theirs = _digests(list(loader.generate(LoadTask("warehouse", (1,)), other))
                      + list(loader.generate(LoadTask("item"), other)))
    assert mine.keys() == theirs.keys()
    for table in mine:
        if table != "new_order":  # the only table with no random column
            assert mine[table] != theirs[table], table


def test_load_time_and_bad_tasks():
    assert columns.load_timestamp("2024-05-01T12:00:00.750") == np.datetime64("2024-05-01T12:00:00")
    assert columns.load_timestamp("2024-05-01T12:00:00+02:00") == np.datetime64("2024-05-01T10:00:00")
    with pytest.raises(ValueError):
        next(loader.generate(LoadTask("warehouse", (3,)), PARAMS))
    with pytest.raises(ValueError):
        next(loader.generate(LoadTask("district", (1,)), PARAMS))
