"""Vectorised random functions of the TPC-C data rules (TPC-C §2.1.6, §4.3.2).

Every helper draws whole columns from a caller-owned :class:`numpy.random.Generator`,
so a loader never loops per row and its output depends only on the generator's seed.

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

import numpy as np

#: a-string alphabet: the 62 ASCII letters and digits
ALNUM = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", np.uint8)
#: n-string alphabet
DIGITS = ALNUM[:10]
#: state codes are two upper-case letters
UPPER = ALNUM[10:36]

#: §4.3.2.3: the syllables whose concatenation makes C_LAST from a number 0..999
SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")

ORIGINAL = np.frombuffer(b"ORIGINAL", np.uint8)

#: the NURand A values of §2.1.6 and the ranges they apply to
A_C_LAST, A_C_ID, A_OL_I_ID = 255, 1023, 8191

#: §2.1.6.1: |C_run - C_load| for C_LAST must lie in 65..119 and not be 96 or 112
C_DELTA_MIN, C_DELTA_MAX, C_DELTA_EXCLUDED = 65, 119, (96, 112)


def _syllable_table() -> np.ndarray:
    """The 1000 last names, index = number; built by vectorised concatenation."""
    syl = np.array(SYLLABLES, dtype="S5")
    n = np.arange(1000)
    return np.char.add(np.char.add(syl[n // 100], syl[n // 10 % 10]), syl[n % 10])


#: LAST_NAMES[k] is the C_LAST for number k (e.g. 371 -> b"PRICALLYOUGHT")
LAST_NAMES: np.ndarray = _syllable_table()


def uniform(rng: np.random.Generator, x: int, y: int, size: int, dtype: type = np.int32) -> np.ndarray:
    """``random(x, y)`` of §2.1.6 for ``size`` rows: uniform integers, both ends inclusive."""
    return rng.integers(x, y + 1, size=size, dtype=dtype)


def nurand(rng: np.random.Generator, a: int, x: int, y: int, c: int, size: int) -> np.ndarray:
    """``NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x``.

    The OR of the two draws sets more bits than either alone, which skews the result
    toward some values; that hot set is what makes TPC-C's access pattern non-uniform.
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


def a_strings(rng: np.random.Generator, n: int, x: int, y: int) -> np.ndarray:
    """``random a-string [x..y]``: letters and digits, length uniform in ``[x..y]``."""
    return as_strings(char_matrix(rng, n, x, y, ALNUM)[0])


def n_strings(rng: np.random.Generator, n: int, x: int, y: int) -> np.ndarray:
    """``random n-string [x..y]``: digits, length uniform in ``[x..y]``."""
    return as_strings(char_matrix(rng, n, x, y, DIGITS)[0])


def states(rng: np.random.Generator, n: int) -> np.ndarray:
    """STATE columns: two random upper-case letters."""
    return as_strings(random_chars(rng, 2 * n, UPPER).reshape(n, 2))


def zip_codes(rng: np.random.Generator, n: int) -> np.ndarray:
    """§4.3.2.7: ZIP is a random n-string of 4 digits followed by the constant ``11111``."""
    mat = np.empty((n, 9), np.uint8)
    mat[:, :4] = random_chars(rng, 4 * n, DIGITS).reshape(n, 4)
    mat[:, 4:] = ord("1")
    return as_strings(mat)


def original_strings(
    rng: np.random.Generator, n: int, x: int = 26, y: int = 50, share_pct: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """I_DATA / S_DATA: a-strings ``[x..y]`` where ``share_pct``% of rows carry ``ORIGINAL``.

    Each row is chosen independently (``random(1, 100) <= share_pct``, as the public
    kits do) and the word overwrites 8 characters at a uniform position inside the
    value, so lengths keep their distribution. Returns the strings and the chosen mask.
    """
    if x < len(ORIGINAL):
        raise ValueError("strings must be long enough to hold ORIGINAL")
    mat, lengths = char_matrix(rng, n, x, y, ALNUM)
    chosen = uniform(rng, 1, 100, n) <= share_pct
    rows = np.flatnonzero(chosen)
    starts = rng.integers(0, lengths[rows] - len(ORIGINAL) + 1)
    mat[rows[:, None], starts[:, None] + np.arange(len(ORIGINAL))] = ORIGINAL
    return as_strings(mat), chosen


def last_names(numbers: np.ndarray) -> np.ndarray:
    """C_LAST for numbers 0..999 (§4.3.2.3), by indexing the precomputed 1000 names."""
    numbers = np.asarray(numbers)
    if numbers.size and (numbers.min() < 0 or numbers.max() > 999):
        raise ValueError("last-name numbers must lie in 0..999")
    return LAST_NAMES[numbers]


def load_constants(rng: np.random.Generator) -> dict[str, int]:
    """The three C-load constants, each uniform in ``[0..A]`` for its NURand (§2.1.6)."""
    return {
        "c_last": int(rng.integers(0, A_C_LAST + 1)),
        "c_id": int(rng.integers(0, A_C_ID + 1)),
        "ol_i_id": int(rng.integers(0, A_OL_I_ID + 1)),
    }


def c_run_valid(c_run: int, c_load: int) -> bool:
    """§2.1.6.1: the run's C for C_LAST must differ from C-load by 65..119, not 96 or 112.

    The gap keeps the run's hot names away from the loaded hot names by a controlled
    amount, so that by-name lookups find neither all nor none of their customers.
    """
    delta = abs(c_run - c_load)
    return 0 <= c_run <= A_C_LAST and C_DELTA_MIN <= delta <= C_DELTA_MAX and delta not in C_DELTA_EXCLUDED


def choose_c_run(rng: np.random.Generator, c_load: int) -> int:
    """A C-run for C_LAST drawn uniformly among all values valid for ``c_load``.

    Never empty: for any C-load in 0..255 one of ``c_load ± 65..119`` stays in range.
    """
    if not 0 <= c_load <= A_C_LAST:
        raise ValueError(f"C-load {c_load} outside [0..{A_C_LAST}]")
    candidates = np.arange(A_C_LAST + 1)
    delta = np.abs(candidates - c_load)
    ok = (delta >= C_DELTA_MIN) & (delta <= C_DELTA_MAX) & ~np.isin(delta, C_DELTA_EXCLUDED)
    return int(rng.choice(candidates[ok]))


def run_constants(rng: np.random.Generator, load: dict[str, int]) -> dict[str, int]:
    """C constants for a run: C_LAST constrained by the load's value, the others free."""
    return {
        "c_last": choose_c_run(rng, load["c_last"]),
        "c_id": int(rng.integers(0, A_C_ID + 1)),
        "ol_i_id": int(rng.integers(0, A_OL_I_ID + 1)),
    }
