"""Synthetic text columns of the TPC-E data: names, codes, phone numbers, e-mails, prose.

TPC-E's generator draws names and addresses from flat files of real ones; here they are
random letters of one fixed length per column (the brief allows it), which keeps every
row of a table the same size and costs one vectorised draw per column. Characters come
from TPC-C's exact rejection sampler (tpsbench.workloads.tpcc.rand); every alphabet is
letters, digits and spaces, so text never needs escaping in COPY or LOAD DATA.
"""

from __future__ import annotations

import numpy as np

from tpsbench.core.columns import ALNUM, DIGITS, UPPER, as_strings, random_chars

LOWER = ALNUM[36:]
#: prose: lower-case letters with a space about every sixth character
PROSE = np.concatenate([LOWER, np.frombuffer(b"     ", np.uint8)])


def names(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    """Capitalised words of ``width`` letters (``Qwhrtzab``)."""
    mat = np.empty((n, width), np.uint8)
    mat[:, 0] = random_chars(rng, n, UPPER)
    mat[:, 1:] = random_chars(rng, n * (width - 1), LOWER).reshape(n, width - 1)
    return as_strings(mat)


def letters(rng: np.random.Generator, n: int, width: int, alphabet: np.ndarray = UPPER) -> np.ndarray:
    """``width`` random characters of ``alphabet`` (capital letters by default)."""
    return as_strings(random_chars(rng, n * width, alphabet).reshape(n, width))


def digits(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    return letters(rng, n, width, DIGITS)


def prose(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    """Word-like text of ``width`` characters that starts with a capital letter and ends
    with a full stop (descriptions, headlines, news)."""
    mat = random_chars(rng, n * width, PROSE).reshape(n, width).copy()
    mat[:, 0] = random_chars(rng, n, UPPER)
    mat[:, -1] = ord(".")
    return as_strings(mat)


def prose_varying(rng: np.random.Generator, n: int, shortest: int, longest: int) -> np.ndarray:
    """Prose of lengths uniform in ``[shortest..longest]`` (the NEWS_ITEM LOB)."""
    mat = random_chars(rng, n * longest, PROSE).reshape(n, longest).copy()
    mat[:, 0] = random_chars(rng, n, UPPER)
    lengths = rng.integers(shortest, longest + 1, n)
    mat[np.arange(longest) >= lengths[:, None]] = 0
    return as_strings(mat)


def join(*parts: np.ndarray | bytes) -> np.ndarray:
    """Element-wise concatenation of string arrays and constant ``bytes``."""
    out = np.asarray(parts[0])
    for part in parts[1:]:
        out = np.char.add(out, part)
    return out


def pick(options: tuple[bytes, ...], index: np.ndarray) -> np.ndarray:
    """``options[index]`` for every element, as one string array."""
    return np.array(options)[index]
