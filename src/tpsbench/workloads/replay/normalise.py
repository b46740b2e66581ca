"""Statements reduced to their shape: literals out as parameters, ``?`` in their place.

Why: a capture holds thousands of statements that differ only in their values
(``WHERE aid = 123`` and ``WHERE aid = 456``); counting, weighing and checking a replay
needs them grouped as one statement with a distribution per parameter. A tokenizer is
enough for that (sqlglot is used only for the tables a statement names, once per shape).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

Value = str | int | float | None

_TOKEN = re.compile(r"""
    (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<string>[Ee]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*')
  | (?P<dollar>\$(?P<tag>[A-Za-z_]\w*)?\$.*?\$(?P=tag)?\$)
  | (?P<placeholder>\$\d+|\?|%s)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<word>"(?:[^"]|"")*"|`[^`]*`|[A-Za-z_][\w$]*)
  | (?P<space>\s+)
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)
#: a minus after one of these is a sign, not a subtraction
_SIGN_AFTER = {"", "(", ",", "=", "<", ">", "<=", ">=", "<>", "!=", "+", "-", "*", "/"}
_SIGN_WORDS = {"AND", "OR", "NOT", "SELECT", "VALUES", "WHEN", "THEN", "ELSE", "IN", "BETWEEN", "SET", "RETURN"}
#: a literal that follows one of these words is a secret: masked in the trace and summary
_SECRET_WORDS = {"PASSWORD", "IDENTIFIED"}
MASK = "***"
#: what sqlglot calls the dialects of the trace's source
SQLGLOT = {"postgresql": "postgres", "mysql": "mysql"}


def normalise(text: str) -> tuple[str, list[Value]]:
    """The statement's shape and its literals in order (strings unquoted, numbers as numbers,
    secrets masked). Whitespace collapses to one space, comments and a final ``;`` go."""
    out: list[str] = []
    values: list[Value] = []
    last = ""
    for m in _TOKEN.finditer(text):
        kind, token = m.lastgroup, m.group()
        if kind in ("comment", "space"):
            if out and out[-1] != " ":
                out.append(" ")
            continue
        if kind in ("string", "dollar", "number"):
            value = _value(kind, token)
            if last.upper() in _SECRET_WORDS:
                value = MASK
            if out and out[-1] == "-" and _signed(out):
                out.pop()
                value = -value if isinstance(value, (int, float)) else value
            values.append(value)
            out.append("?")
        elif kind == "placeholder":
            out.append("?")
        else:
            out.append(token)
        last = token
    shape = "".join(out).strip()
    while shape.endswith(";"):
        shape = shape[:-1].rstrip()
    return shape, values


#: a run of digits that starts no word, placeholder or dollar-quote tag: a number's digits
#: (or a literal's or comment's, which the shape leaves out as well)
_DIGITS = re.compile(r"(?<![\w$])\d+")


def shapes(texts: Iterable[str]) -> list[str]:
    """Each text's shape (``normalise(text)[0]``), worked out once per skeleton: texts that
    differ only in their numbers (pgbench's literals) share one. Why: normalising each of a
    million traced statements costs more client CPU than replaying them. A quoted name may
    hold digits its shape keeps, so a text with one is looked up whole."""
    known: dict[str, str] = {}
    found: list[str] = []
    for text in texts:
        key = text if '"' in text or "`" in text else _DIGITS.sub("0", text)
        shape = known.get(key)
        if shape is None:
            shape = known[key] = normalise(text)[0]
        found.append(shape)
    return found


def tokens(text: str) -> list[str]:
    """The kind of each token of ``text`` (string, number, placeholder, word ...)."""
    return [m.lastgroup or "other" for m in _TOKEN.finditer(text)]


def _signed(out: list[str]) -> bool:
    """Whether the ``-`` at the end of ``out`` is a literal's sign."""
    before = [t for t in out[:-1] if t != " "]
    previous = before[-1] if before else ""
    return previous in _SIGN_AFTER or previous.upper() in _SIGN_WORDS


def _value(kind: str, token: str) -> Value:
    if kind == "number":
        try:
            return int(token)
        except ValueError:
            return float(token)
    if kind == "dollar":
        return token[token.index("$", 1) + 1:token.rindex("$", 0, len(token) - 1)]
    if token[0] in "Ee":
        return token[2:-1].replace("''", "'")
    return token[1:-1].replace("''", "'")


_SECRET_TEXT = re.compile(r"(?i)\b(password|identified\s+by)(\s+)('(?:[^']|'')*'|\"[^\"]*\")")


def mask_secrets(text: str) -> str:
    """The statement with the literal after PASSWORD / IDENTIFIED BY blanked out: a trace
    is shared, and ``ALTER ROLE ... PASSWORD '...'`` must not travel with it."""
    return _SECRET_TEXT.sub(lambda m: f"{m.group(1)}{m.group(2)}'{MASK}'", text)


@lru_cache(maxsize=4096)
def tables_of(text: str, dialect: str) -> tuple[str, ...]:
    """The tables a statement names (lower case, without schema), for refusing a target
    that lacks one; a statement sqlglot cannot read names none."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # its warning on an opaque command (BEGIN, SET ...) is no news here
    try:
        trees = sqlglot.parse(text, read=SQLGLOT.get(dialect, dialect))
    except SqlglotError:
        return ()
    finally:
        logger.setLevel(level)
    names: set[str] = set()
    for tree in trees:
        if tree is None:
            continue
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        names.update(t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes)
    return tuple(sorted(names))


_CONTROL = re.compile(r"(?i)^\s*(begin|start\s+transaction|commit|end|rollback|abort)\b(?!\s+(?:to|savepoint)\b)")


def transaction_control(text: str) -> str | None:
    """"begin" or "end" for a statement that opens or closes a transaction, else None."""
    m = _CONTROL.match(text)
    if m is None:
        return None
    return "begin" if m.group(1).lower().startswith(("begin", "start")) else "end"
