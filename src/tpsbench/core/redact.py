"""Keeping passwords out of everything tpsbench prints or stores.

Results get shared, and database URLs and connection settings carry passwords. One set
of functions serves every place that shows or keeps a URL or a driver's message (a
target's ``describe()``, the results store, error lines): URLs lose their password and
any ``password=`` query setting, free text loses URL user info and ``password=...``
settings, and a password learnt from a URL is blanked out of later texts too (driver
messages sometimes quote connection strings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

SECRET_KEYS = frozenset({"password", "passwd", "pwd", "pass", "secret", "token", "api_key", "apikey"})
HIDDEN = "***"

_URL_USERINFO = re.compile(r"(\b[A-Za-z][\w+.-]*://[^\s/:@'\"]*):[^\s/@'\"]*@")
_WHOLE_URL = re.compile(r"^[A-Za-z][\w+.-]*://\S*$")
_KEYWORD_SECRET = re.compile(r"(?i)\b(password|passwd|pwd)(\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s;&,'\"]*)")


def safe_url(url: str | sa.engine.URL) -> str:
    """``url`` without its password: neither the password nor a placeholder is kept."""
    try:
        parsed = sa.engine.make_url(url)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy reads: scrub it as text
        return scrub_text(str(url))
    query = {k: v for k, v in parsed.query.items() if k.lower() not in SECRET_KEYS}
    odbc_connect = query.get("odbc_connect")
    if isinstance(odbc_connect, str):
        query["odbc_connect"] = scrub_text(odbc_connect)
    # URL.set(password=None) would keep the password: None there means "unchanged"
    clean = sa.engine.URL.create(parsed.drivername, username=parsed.username, host=parsed.host,
                                 port=parsed.port, database=parsed.database, query=query)
    return clean.render_as_string(hide_password=False)


def scrub_text(text: str, secrets: frozenset[str] | set[str] = frozenset()) -> str:
    """Blank passwords out of free text: URL user info, ``password=`` settings, known secrets."""
    text = _URL_USERINFO.sub(r"\1@", text)
    text = _KEYWORD_SECRET.sub(lambda m: m.group(1) + m.group(2) + HIDDEN, text)
    for secret in secrets:
        if len(secret) >= 4:  # shorter ones would blank out ordinary words; URLs lose them anyway
            text = text.replace(secret, HIDDEN)
    return text


def scrub(value: Any, secrets: frozenset[str] | set[str] = frozenset()) -> Any:
    """A JSON-able copy of ``value`` with every password removed (see the module docstring)."""
    if isinstance(value, Mapping):
        return {str(k): (HIDDEN if str(k).lower() in SECRET_KEYS and v else scrub(v, secrets))
                for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [scrub(v, secrets) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, sa.engine.URL) or (isinstance(value, str) and _WHOLE_URL.match(value)):
        return scrub_text(safe_url(value), secrets)
    return scrub_text(str(value), secrets)


def secrets_of(url: str | sa.engine.URL) -> set[str]:
    """Every secret a URL carries: its password, and the values of query keys that name
    secrets (``?password=``, ``pwd=`` ...), to blank out of texts that may quote them."""
    try:
        parsed = sa.engine.make_url(url)
    except Exception:  # noqa: BLE001 - not a URL: its text is scrubbed as a whole elsewhere
        return set()
    found = {parsed.password} if parsed.password else set()
    for key, value in parsed.query.items():
        if key.lower() in SECRET_KEYS:
            found.update([value] if isinstance(value, str) else value)
    return {str(s) for s in found if s}
