"""Vectorised random functions of the TPC-C data rules (TPC-C §2.1.6, §4.3.2).

Every helper draws whole columns from a caller-owned :class:`numpy.random.Generator`,
so a loader never loops per row and its output depends only on the generator's seed.
The rules' generic draws (uniform integers, NURand, random strings) are any workload's
and live in :mod:`tpsbench.core.columns`; what is TPC-C's own is here: its a- and
n-strings, states and zip codes, the ``ORIGINAL`` marks, the syllable last names and
the NURand constants of a build and a run.
"""

from __future__ import annotations

import numpy as np

from tpsbench.core.columns import ALNUM, DIGITS, UPPER, as_strings, char_matrix, random_chars, uniform

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
