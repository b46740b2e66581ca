"""Value generators: the random (and not so random) values of a workload file's table columns
and transaction parameters.

One implementation serves both: every generator draws ``n`` values at once with numpy
from a caller's generator (:func:`drawer`), which the loader calls per chunk of rows and
a session per pool of values (session.py), so that what a build loads and what a run
sends follow the same rules and are tested once. The random strings and NURand values
are TPC-C's own vectorised functions (tpsbench.workloads.tpcc.rand).

In a file a generator is a TOML inline table ``{ gen = "uniform", min = 1, max = 100 }``
or a plain value (a constant). Integer bounds may be ``"rows:TABLE"``: the rows that
table has at the build's scale (the same at build and at run, from tpsbench_meta's
scale). docs/custom-workloads.md lists every generator with its keys.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpsbench.core import columns
from tpsbench.core.errors import TpsbenchError

#: kind -> (required keys, optional keys)
KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "uniform": (frozenset({"min", "max"}), frozenset()),
    "nurand": (frozenset({"a", "min", "max"}), frozenset({"c"})),
    "decimal": (frozenset({"min", "max"}), frozenset({"places"})),
    "string": (frozenset({"length"}), frozenset({"alphabet"})),
    "choice": (frozenset({"values"}), frozenset({"weights"})),
    "range": (frozenset({"min", "max", "size"}), frozenset()),
    "sequence": (frozenset(), frozenset({"start", "repeat", "cycle"})),
    "now": (frozenset(), frozenset()),
    "query": (frozenset({"sql"}), frozenset()),
}
#: generators that make sense in one place only: row numbers for columns; a window of
#: values, and values read from the database at the start of a run, for parameters
COLUMNS_ONLY = frozenset({"sequence"})
PARAMETERS_ONLY = frozenset({"range", "query"})
ALPHABETS = {"alnum": columns.ALNUM, "digits": columns.DIGITS, "letters": columns.ALNUM[10:]}
#: the keys whose value is an integer bound (a number or "rows:TABLE"), in the generators of integers
BOUNDS = frozenset({"min", "max", "size", "start", "repeat", "cycle"})
INTEGERS = frozenset({"uniform", "nurand", "range", "sequence"})
ROWS_OF = re.compile(r"^rows:([A-Za-z_]\w*)$")
MAX_PLACES = 6
#: the integers a bound may be: numpy draws int64, up to one below its largest (max + 1 is drawn below)
INT64 = (-(2**63), 2**63 - 2)

#: n values drawn with a numpy generator; the int is the row number of the first (sequences)
Draw = Callable[[np.random.Generator, int, int], np.ndarray]


@dataclass(frozen=True)
class Generator:
    """A validated generator of a file: its kind and keys (bounds still unresolved), or a
    constant (kind "value", the value in ``args["value"]``)."""

    kind: str
    args: Mapping[str, Any]

    def names(self, name: str) -> tuple[str, ...]:
        """The parameters it defines under ``name``: a range defines NAME_low and NAME_high."""
        return (f"{name}_low", f"{name}_high") if self.kind == "range" else (name,)

    def tables(self) -> set[str]:
        """The tables whose row counts its bounds name ("rows:TABLE")."""
        return {m.group(1) for v in self.args.values() if isinstance(v, str) and (m := ROWS_OF.match(v))}


def parse(value: Any, where: str, for_columns: bool, problems: list[str]) -> Generator | None:
    """The generator ``value`` describes, or None after adding each of its problems to
    ``problems`` (one line each, beginning with ``where``: the column or parameter)."""
    problem = problems.append
    if isinstance(value, bool) or not isinstance(value, (dict, str, int, float)):
        problem(f"{where}: a generator is a table like {{ gen = \"uniform\", min = 1, max = 10 }} or a "
                f"number or text, not {value!r}")
        return None
    if not isinstance(value, dict):
        if not _finite(value):
            problem(f"{where}: {value!r} is not a finite number")
            return None
        if for_columns and isinstance(value, str):
            _plain_text([value], where, problem)
        return Generator("value", {"value": value})
    kind = value.get("gen")
    if kind not in KEYS:
        known = ", ".join(sorted(KEYS))
        problem(f"{where}: unknown generator {kind!r} (known: {known})" if kind is not None
                else f"{where}: no gen = \"...\" (one of {known})")
        return None
    if for_columns and kind in PARAMETERS_ONLY:
        problem(f"{where}: generator {kind!r} is for transaction parameters only")
        return None
    if not for_columns and kind in COLUMNS_ONLY:
        problem(f"{where}: generator {kind!r} numbers table rows: a transaction parameter takes uniform instead")
        return None
    required, optional = KEYS[kind]
    args = {k: v for k, v in value.items() if k != "gen"}
    for key in sorted(required - set(args)):
        problem(f"{where}: generator {kind!r} needs {key}")
    for key in sorted(set(args) - required - optional):
        problem(f"{where}: generator {kind!r} has no key {key!r} (it takes {', '.join(sorted(required | optional))})")
    if required - set(args) or set(args) - required - optional:
        return None
    before = len(problems)
    for key, item in sorted(args.items()):
        if not all(map(_finite, item if isinstance(item, list) else [item])):
            problem(f"{where}: {key} must be finite, not {item!r}")
        elif _is_int(item) and key in BOUNDS and not INT64[0] <= item <= INT64[1]:
            problem(f"{where}: {key} {item} is beyond what a 64-bit integer draws ({INT64[0]}..{INT64[1]})")
    if len(problems) > before:
        return None
    _check_args(kind, args, where, for_columns, problem)
    return Generator(kind, args) if len(problems) == before else None


def _check_args(kind: str, args: dict[str, Any], where: str, for_columns: bool, problem: Callable[[str], None]) -> None:
    for key in sorted(BOUNDS & set(args) if kind in INTEGERS else ()):
        value = args[key]
        if not (_is_int(value) or (isinstance(value, str) and ROWS_OF.match(value))):
            problem(f"{where}: {key} must be a whole number or \"rows:TABLE\", not {value!r}")
    ints = {k: v for k, v in args.items() if k in BOUNDS and _is_int(v) and kind in INTEGERS}
    if "min" in ints and "max" in ints and ints["min"] > ints["max"]:
        problem(f"{where}: min {ints['min']} is above max {ints['max']}")
    for key in ("size", "repeat", "cycle"):
        if key in ints and ints[key] < 1:
            problem(f"{where}: {key} must be at least 1, not {ints[key]}")
    if kind == "nurand":
        a, c = args["a"], args.get("c", 0)
        if not (_is_int(a) and a >= 1) or not (_is_int(c) and 0 <= c <= a):
            problem(f"{where}: nurand needs a whole a >= 1 and, if given, c in 0..a")
    elif kind == "decimal":
        places = args.get("places", 2)
        if not all(_is_number(args[k]) for k in ("min", "max")) or not (_is_int(places) and 0 <= places <= MAX_PLACES):
            problem(f"{where}: decimal needs numbers min and max and places from 0 to {MAX_PLACES}")
        elif max(abs(args["min"]), abs(args["max"])) * 10 ** places > INT64[1]:
            problem(f"{where}: decimal min and max must be within ±{INT64[1] // 10 ** places:,} at {places} places")
        elif args["min"] > args["max"]:
            problem(f"{where}: min {args['min']} is above max {args['max']}")
    elif kind == "string":
        length, alphabet = args["length"], args.get("alphabet", "alnum")
        ends = [length, length] if _is_int(length) else length
        if not (isinstance(ends, list) and len(ends) == 2 and all(map(_is_int, ends)) and 1 <= ends[0] <= ends[1]):
            problem(f"{where}: length must be a whole number >= 1 or [shortest, longest], not {length!r}")
        if alphabet not in ALPHABETS:
            problem(f"{where}: alphabet must be one of {', '.join(ALPHABETS)}, not {alphabet!r}")
    elif kind == "choice":
        _check_choice(args, where, for_columns, problem)


def _check_choice(args: dict[str, Any], where: str, for_columns: bool, problem: Callable[[str], None]) -> None:
    values, weights = args["values"], args.get("weights")
    texts = isinstance(values, list) and values and all(isinstance(v, str) for v in values)
    numbers = isinstance(values, list) and values and all(_is_number(v) for v in values)
    if not (texts or numbers):
        problem(f"{where}: values must be a non-empty list of texts or of numbers, not {values!r}")
    elif for_columns and texts:
        _plain_text(values, where, problem)
    if weights is not None and not (isinstance(weights, list) and isinstance(values, list)
                                    and len(weights) == len(values) and all(_is_number(w) and w > 0 for w in weights)):
        problem(f"{where}: weights must be one positive number per value")


def _plain_text(values: list[str], where: str, problem: Callable[[str], None]) -> None:
    """Column texts go through the bulk paths' text format, which these would need escaped in."""
    if any(bad in v for v in values for bad in ("\t", "\n", "\r", "\\", "\0")):
        problem(f"{where}: column texts cannot hold tabs, line breaks, backslashes or NUL")


def _finite(value: Any) -> bool:
    """TOML's nan and inf are floats no column holds and no bound means."""
    return not isinstance(value, float) or math.isfinite(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- drawing ----------------------------------------------------------------------------

def bound(value: Any, sizes: Mapping[str, int]) -> int:
    """An integer bound: the number, or the rows of the table "rows:TABLE" names."""
    if isinstance(value, str):
        match = ROWS_OF.match(value)
        assert match is not None, value  # parse() let only such texts through
        return sizes[match.group(1)]
    return int(value)


def nurand_c(gen: Generator, key: str, seed: int) -> int:
    """NURand's C: the file's ``c``, else one derived from the seed and ``key`` (the column
    or parameter), so that every loader task of a build, and every user of a run, agree."""
    if "c" in gen.args:
        return int(gen.args["c"])
    words = [seed, zlib.crc32(key.encode())]
    return int(np.random.default_rng(words).integers(0, int(gen.args["a"]) + 1))


def drawer(gen: Generator, key: str, sizes: Mapping[str, int], seed: int, now: str = "") -> Draw:
    """``draw(rng, first, n)``: ``n`` values of ``gen`` (for rows ``first``.. of a column);
    ``key`` names it (for NURand's C), ``sizes`` gives each table's rows, ``now`` is the
    time of "now" (the build's load time). "query" draws indexes into its rows, "range"
    the low end of its windows (session.py adds the high one). A bound that ends up
    empty (min above max once "rows:TABLE" is known) is a one-line error."""
    a: dict[str, Any] = {k: bound(v, sizes) if k in BOUNDS and gen.kind in INTEGERS else v for k, v in gen.args.items()}
    kind = gen.kind
    if kind in ("uniform", "nurand", "range") and a["max"] - a.get("size", 1) + 1 < a["min"]:
        window = f" window of {a['size']}" if kind == "range" else ""
        raise TpsbenchError(f"{a['min']}..{a['max']} holds no {kind} value{window} (at this scale)")
    if kind == "uniform":
        return lambda rng, first, n: rng.integers(a["min"], a["max"] + 1, n, dtype=np.int64)
    if kind == "range":
        return lambda rng, first, n: rng.integers(a["min"], a["max"] - a["size"] + 2, n, dtype=np.int64)
    if kind == "nurand":
        c = nurand_c(gen, key, seed)
        return lambda rng, first, n: columns.nurand(rng, int(a["a"]), a["min"], a["max"], c, n)
    if kind == "decimal":
        scale = 10 ** int(a.get("places", 2))
        low, high = round(a["min"] * scale), round(a["max"] * scale)
        return lambda rng, first, n: rng.integers(low, high + 1, n, dtype=np.int64) / scale
    if kind == "string":
        length = a["length"]
        low, high = (length, length) if isinstance(length, int) else length
        alphabet = ALPHABETS[a.get("alphabet", "alnum")]
        return lambda rng, first, n: columns.as_strings(columns.char_matrix(rng, n, low, high, alphabet)[0])
    if kind == "choice":
        return _choice(a["values"], a.get("weights"))
    if kind == "sequence":
        start, repeat, cycle = a.get("start", 1), a.get("repeat", 1), a.get("cycle")
        return lambda rng, first, n: start + (_rows(first, n, repeat, cycle))
    if kind == "now":
        stamp = np.datetime64(now.replace(" ", "T"), "s")
        return lambda rng, first, n: np.full(n, stamp)
    if kind == "value":
        constant = _array([a["value"]])
        return lambda rng, first, n: np.repeat(constant, n)
    raise ValueError(f"{kind!r} draws no values here")  # query: session.py draws its rows


def _rows(first: int, n: int, repeat: int, cycle: int | None) -> np.ndarray:
    numbers = np.arange(first, first + n, dtype=np.int64) // repeat
    return numbers % cycle if cycle else numbers


def _choice(values: list[Any], weights: list[float] | None) -> Draw:
    pool = _array(values)
    if weights is None:
        return lambda rng, first, n: pool[rng.integers(0, len(pool), n)]
    p = np.asarray(weights, dtype=np.float64) / float(sum(weights))
    return lambda rng, first, n: pool[rng.choice(len(pool), size=n, p=p)]


def _array(values: list[Any]) -> np.ndarray:
    """Values as the loader's columns hold them: texts as UTF-8 bytes, whole numbers as
    int64, other numbers as float64 (tpsbench.core.batch)."""
    if all(isinstance(v, str) for v in values):
        return np.array([v.encode() for v in values], dtype=bytes)
    return np.array(values, dtype=np.int64 if all(_is_int(v) for v in values) else np.float64)
