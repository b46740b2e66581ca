"""Whole columns of random data for any workload's loader: integers, NURand, strings, and the build's "now".

Every helper draws whole columns from a caller-owned :class:`numpy.random.Generator`,
so a loader never loops per row and its output depends only on the generator's seed.
TPC-C's rules gave them their shape (its uniform ``random(x, y)``, NURand and a-strings;
tpsbench.workloads.tpcc.rand keeps what is TPC-C's own), and TPC-E's synthetic strings
and custom workloads' generators draw with them too, so they are no one workload's.

Strings are built as a ``(rows, max_len)`` byte matrix, bytes past each row's length are
zeroed and the matrix is viewed as ``S{max_len}``: numpy drops trailing NULs, so each
value has its drawn length. Random characters come from the bit generator's raw 64-bit
words by exact rejection sampling done in C by ``bytearray.translate`` (its ``delete``
argument drops the bytes that would bias the alphabet), which is several times faster
than ``Generator.integers`` with a lookup and keeps every character uniform and
independent. Raw words are read in native byte order, so data is identical on all
little-endian machines.

Alphabets hold letters and digits only: loaders rely on strings never needing escaping
in COPY text (no tab, newline, backslash).
"""

from __future__ import annotations

import datetime as dt

import numpy as np

#: a-string alphabet: the 62 ASCII letters and digits
ALNUM = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", np.uint8)
#: n-string alphabet
DIGITS = ALNUM[:10]
#: state codes are two upper-case letters
UPPER = ALNUM[10:36]


def uniform(rng: np.random.Generator, x: int, y: int, size: int, dtype: type = np.int32) -> np.ndarray:
    """``random(x, y)`` of TPC-C §2.1.6 for ``size`` rows: uniform integers, both ends inclusive."""
    return rng.integers(x, y + 1, size=size, dtype=dtype)


def nurand(rng: np.random.Generator, a: int, x: int, y: int, c: int, size: int) -> np.ndarray:
    """``NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x``.

    The OR of the two draws sets more bits than either alone, which skews the result
    toward some values; that hot set is what makes TPC-C's access pattern non-uniform (and
    a custom workload's, tpsbench.workloads.custom.generators).
    """
    if not 0 <= c <= a:
        raise ValueError(f"C={c} outside [0..{a}]")
    left = rng.integers(0, a + 1, size=size, dtype=np.int64)
    right = rng.integers(x, y + 1, size=size, dtype=np.int64)
    return ((left | right) + c) % (y - x + 1) + x


def random_chars(rng: np.random.Generator, n: int, alphabet: np.ndarray = ALNUM) -> np.ndarray:
    """``n`` independent characters uniform over ``alphabet`` (writable uint8 array).

    Raw bytes at or above the largest multiple of ``len(alphabet)`` are deleted rather
    than folded, so that ``byte % len(alphabet)`` stays exactly uniform.
    """
    k = len(alphabet)
    if not 0 < k <= 256:
        raise ValueError("alphabet must have 1..256 characters")
    limit = 256 - 256 % k
    table = np.resize(alphabet, 256).astype(np.uint8).tobytes()
    delete = bytes(range(limit, 256))
    parts: list[bytearray] = []
    have = 0
    while have < n:
        # 0.2% more than the expected need, so a second round is very rare
        words = int((n - have) * 256 / limit * 1.002 / 8) + 16
        raw = bytearray(rng.bit_generator.random_raw(words).data)
        part = raw.translate(table, delete)
        parts.append(part)
        have += len(part)
    buf = parts[0] if len(parts) == 1 else bytearray().join(parts)
    return np.frombuffer(buf, np.uint8, count=n)


def char_matrix(
    rng: np.random.Generator, n: int, x: int, y: int, alphabet: np.ndarray = ALNUM
) -> tuple[np.ndarray, np.ndarray]:
    """A ``(n, y)`` uint8 matrix of random strings of lengths uniform in ``[x..y]``, NUL-padded.

    Returned with the lengths so callers can edit rows (``ORIGINAL``) before viewing
    the matrix as strings with :func:`as_strings`.
    """
    if not 0 < x <= y:
        raise ValueError(f"bad length range [{x}..{y}]")
    mat = random_chars(rng, n * y, alphabet).reshape(n, y)
    lengths = uniform(rng, x, y, n)
    if y > x:
        tail = mat[:, x:]
        np.multiply(tail, np.arange(x, y) < lengths[:, None], out=tail, casting="unsafe")
    return mat, lengths


def as_strings(mat: np.ndarray) -> np.ndarray:
    """View a ``(n, w)`` uint8 matrix as an ``S{w}`` array of n values (no copy)."""
    mat = np.ascontiguousarray(mat, dtype=np.uint8)
    return mat.view(f"S{mat.shape[1]}").reshape(mat.shape[0])


def load_timestamp(load_time: str) -> np.datetime64:
    """A build's ``load_time`` (the value of every "now" column of its initial data) as
    ``datetime64[s]``; an aware time is converted to UTC."""
    stamp = dt.datetime.fromisoformat(load_time)
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(dt.UTC).replace(tzinfo=None)
    return np.datetime64(stamp.replace(microsecond=0), "s")
