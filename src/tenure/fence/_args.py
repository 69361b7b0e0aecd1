"""Argument checks shared by the fences (a clear error before anything is touched), and their
refusal of a stale token."""

from __future__ import annotations

import re

from tenure.errors import InvalidRequest, StaleToken

MAX_TOKEN = 2**63 - 1
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?")


def check_key(key: object) -> str:
    """A fence key is the tenure lease key whose tokens it admits."""
    if not isinstance(key, str) or not key or "\x00" in key:
        raise InvalidRequest("the fence key must be a non-empty string", field="key")
    return key


def check_token(token: object, field: str = "token") -> int:
    """A fencing token: a positive 64-bit integer (``bool`` is not one)."""
    if isinstance(token, bool) or not isinstance(token, int) or not 0 < token <= MAX_TOKEN:
        raise InvalidRequest(f"the {field} must be an integer in 1..2**63-1", field=field)
    return token


def parse_token(text: str, field: str) -> int:
    """A token sent as text (an HTTP header): decimal digits only."""
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        raise InvalidRequest(f"the {field} must be a positive integer", field=field)
    return check_token(int(text), field)


def check_table(table: str) -> str:
    """A table name, optionally schema-qualified; it is spliced into SQL, so it is strict."""
    if not isinstance(table, str) or not _TABLE.fullmatch(table):
        raise InvalidRequest(f"not a plain table name: {table!r}", field="table")
    return table


def stale(key: str, token: int, current: int | None) -> StaleToken:
    """The refusal of ``token`` for ``key`` whose current token is ``current``."""
    return StaleToken(
        f"token {token} for {key!r} is stale: the fence has already admitted {current}",
        key=key,
        token=token,
        current_token=current,
    )
