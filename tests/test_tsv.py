"""The numpy TSV encoder must produce exactly the values, parsed back field by field."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tpsbench.core.batch import Batch

ints = st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=50)
alnum = st.text("abcXYZ0189", max_size=12).map(str.encode)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), decimals=st.sampled_from([0, 2, 4]))
def test_encoded_text_parses_back_to_the_values(data: st.DataObject, decimals: int) -> None:
    numbers = data.draw(ints)
    n = len(numbers)
    scaled = data.draw(st.lists(st.integers(-10**9, 10**9), min_size=n, max_size=n))
    strings = data.draw(st.lists(alnum, min_size=n, max_size=n))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    money = np.array(scaled, dtype=np.float64) / 10**decimals
    batch = Batch(
        "t",
        {"i": np.array(numbers, dtype=np.int64), "m": money, "s": np.array(strings, dtype="S12"),
         "ts": np.full(n, np.datetime64("2026-03-04T05:06:07"), dtype="datetime64[s]")},
        {"m": mask},
    )
    lines = batch.to_tsv().decode().split("\n")
    assert lines[-1] == "" and len(lines) == n + 1
    for line, number, cents, text, null in zip(lines, numbers, scaled, strings, mask.tolist()):
        fields = line.split("\t")
        assert int(fields[0]) == number
        if null:
            assert fields[1] == "\\N"
        else:
            assert Decimal(fields[1]) == Decimal(cents).scaleb(-decimals)
        assert fields[2] == text.decode()
        assert fields[3] == "2026-03-04 05:06:07"


def test_leading_zero_and_sign() -> None:
    batch = Batch("t", {"m": np.array([0.05, -0.5, 0.0, 12.3])})
    assert batch.to_tsv() == b"0.05\n-0.50\n0.00\n12.30\n"
