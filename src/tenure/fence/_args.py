"""Argument checks shared by the fences (a clear error before anything is touched), and their
refusal of a stale token."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import pairwise

from tenure.errors import FenceMisuse, InvalidRequest, StaleToken

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


#: ``(key, token)`` pairs in key order: the order the fence rows are locked in
Pairs = list[tuple[str, int]]
Keys = str | Mapping[str, int] | Iterable[tuple[str, int]]


def check_pairs(keys: Keys, token: int | None) -> Pairs:
    """``key, token``, or several keys (a mapping or ``(key, token)`` pairs with no
    ``token``), checked and sorted by key; a key named twice is refused."""
    if isinstance(keys, str):
        if token is None:
            raise InvalidRequest("the token is required with a single key", field="token")
        return [(check_key(keys), check_token(token))]
    if token is not None:
        raise InvalidRequest(
            "give either a key and a token, or several keys as {key: token}", field="token"
        )
    if isinstance(keys, Mapping):
        items = list(keys.items())
    elif isinstance(keys, Iterable) and not isinstance(keys, bytes):
        items = [_pair(item) for item in keys]
    else:
        raise InvalidRequest("the key must be a string or a {key: token} mapping", field="key")
    pairs = sorted((check_key(k), check_token(t)) for k, t in items)
    if not pairs:
        raise InvalidRequest("no keys to fence", field="key")
    for (a, _), (b, _) in pairwise(pairs):
        if a == b:
            raise InvalidRequest(f"the key {a!r} is named twice", field="key")
    return pairs


def _pair(item: object) -> tuple[object, object]:
    if not isinstance(item, tuple) or len(item) != 2:
        raise InvalidRequest("several keys are (key, token) pairs", field="key")
    return item[0], item[1]


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


_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(:path)?\}")
KeyPatterns = str | Iterable[str] | None


def key_patterns(keys: KeyPatterns) -> tuple[str, re.Pattern[str] | None]:
    """The keys a fence is bound to (``"reports/{name}"``: ``{name}`` one segment,
    ``{name:path}`` one or more), as text and as one regex; ``None`` binds to nothing."""
    if keys is None:
        return "", None
    listed = (keys,) if isinstance(keys, str) else tuple(keys)
    if not listed or not all(isinstance(k, str) and k for k in listed):
        raise InvalidRequest("keys: a key pattern or a list of them", field="keys")
    alternatives = []
    for pattern in listed:
        parts = _SLOT.split(pattern)  # text, name, ":path" or None, text, ...
        out = [re.escape(parts[0])]
        for i in range(1, len(parts), 3):
            out += [".+" if parts[i + 1] else "[^/]+", re.escape(parts[i + 2])]
        alternatives.append("".join(out))
    return ", ".join(listed), re.compile("|".join(f"(?:{a})" for a in alternatives))


def check_bound(keys: tuple[str, re.Pattern[str] | None], key: str) -> str:
    """``key`` if the fence is bound to no keys or to a pattern that names it; otherwise the
    lease and the fence's guards fence different keys: :class:`tenure.FenceMisuse`."""
    text, regex = keys
    if regex is not None and not regex.fullmatch(key):
        raise FenceMisuse(
            f"this fence guards keys {text}, which never name {key!r}: admitting it would "
            "close no window (the guard checks another key). Lease the key the guard fences, "
            "or fix the fence's keys=.",
            field="key",
            state="key_mismatch",
        )
    return key
