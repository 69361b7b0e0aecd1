"""Input checks. Each raises :class:`InvalidRequest` or :class:`TooLarge` naming the field."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from tenure.core.models import LEASE_LIST_STATES, LeaseListState, Scope
from tenure.core.policy import Policy
from tenure.errors import InvalidRequest, TooLarge

MAX_TOKEN = 2**63 - 1
# Keys are any non-empty UTF-8 text without control characters (C0, DEL, C1) or surrogates;
# the same rule is the `pattern` of `key` in the HTTP API's schema.
KEY_PATTERN = "^[^\\x00-\\x1f\\x7f-\\x9f\\ud800-\\udfff]+$"
KEY_FORBIDDEN = re.compile("[\\x00-\\x1f\\x7f-\\x9f\\ud800-\\udfff]")
MAX_TASK_CHARS = 1024
MAX_REASON_CHARS = 1024
MAX_OP_ID_CHARS = 256
MAX_SESSION_BYTES = 128
MAX_LIMIT = 1000
#: an item's title and body, its labels, a completion's follow-ups
MAX_TITLE_CHARS = 512
MAX_BODY_CHARS = 64 * 1024
MAX_LABELS = 32
MAX_FOLLOW_UPS = 100
#: the longest lifetime a principal's token may be given (10 years)
MAX_TOKEN_TTL_MS = 10 * 366 * 86_400_000
#: the longest one long-poll may wait (`wait_ms` of acquire and of the event log)
MAX_WAIT_MS = 300_000
#: the deepest nesting of a stored JSON value (a lease's ``meta``, a fenced ``value``, an item's
#: ``result``, progress ``data``): ``{}`` and ``[]`` are one level, ``{"a": [1]}`` two. Deeper
#: values are refused (a generous bound that every reader, encoder and database keeps)
MAX_JSON_DEPTH = 64
_CONTAINERS = (dict, list, tuple)
# U+0000 as json.dumps writes it (after an even number of backslashes: not an escaped "\\u0000")
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _invalid(field: str, why: str) -> InvalidRequest:
    return InvalidRequest(f"{field}: {why}", field=field)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_text(field: str, value: object, max_chars: int, *, required: bool = True) -> str:
    if not isinstance(value, str):
        raise _invalid(field, "must be a string")
    if required and not value.strip():
        raise _invalid(field, "must not be empty")
    if len(value) > max_chars:
        raise _invalid(field, f"must be at most {max_chars} characters")
    if not value.isprintable() and any(  # printable text has neither (the common case, in C)
        unicodedata.category(ch) in ("Cc", "Cs") for ch in value if ch not in "\t\n"
    ):
        raise _invalid(field, "must not contain control characters or lone surrogates")
    return value


#: the sessions of ``/mcp`` connections, which the server names (``mcp-http:<nonce>``): a
#: client's ``session`` may not start with it, so no REST call acts in a connection's session
RESERVED_SESSION_PREFIX = "mcp-http:"


def check_client_session(session: object, field: str = "session") -> str:
    """A session a client names (:func:`check_session`), outside the ``/mcp`` connections'
    namespace (:data:`RESERVED_SESSION_PREFIX`)."""
    checked = check_session(session, field)
    if checked.startswith(RESERVED_SESSION_PREFIX):
        raise _invalid(
            field, f"must not start with {RESERVED_SESSION_PREFIX!r} (the /mcp connections')"
        )
    return checked


def check_session(session: object, field: str = "session") -> str:
    """A holder's session: text of at most 128 bytes (UTF-8); ``None`` is the default ``""``."""
    if session is None:
        return ""
    if not isinstance(session, str):
        raise _invalid(field, "must be a string")
    if session and not session.isprintable():
        raise _invalid(field, "must not contain control characters")
    if len(session.encode("utf-8", "surrogatepass")) > MAX_SESSION_BYTES:
        raise _invalid(field, f"must be at most {MAX_SESSION_BYTES} bytes")
    if KEY_FORBIDDEN.search(session):
        raise _invalid(field, "must not contain control characters or lone surrogates")
    return session


def check_scope(scope: object, key: str) -> Scope:
    """``"key"`` (``None`` too) or ``"subtree"``, which needs a key ending in ``/``."""
    if scope is None or scope == "key":
        return "key"
    if scope != "subtree":
        raise _invalid("scope", f"must be 'key' or 'subtree', not {scope!r}")
    if not key.endswith("/"):
        raise InvalidRequest(
            f"scope: a subtree lease needs a key ending in '/', and {key!r} does not. "
            f"Ask for {key + '/'!r} with scope 'subtree', or for {key!r} with scope 'key'.",
            key=key,
            field="scope",
        )
    return "subtree"


def check_key(key: object, policy: Policy, field: str = "key") -> str:
    if not isinstance(key, str) or not key:
        raise _invalid(field, "must be a non-empty string")
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > policy.max_key_bytes:
        raise TooLarge(
            f"{field} is {size} bytes, more than {policy.max_key_bytes}",
            field=field,
            limit=policy.max_key_bytes,
            size=size,
        )
    if KEY_FORBIDDEN.search(key):
        raise _invalid(field, "must not contain control characters or lone surrogates")
    return key


def hold_longer(policy: Policy) -> str:
    """How a lease is held longer than ``max_ttl``, for the refusal of a longer ``ttl_ms``."""
    return (
        f"; to hold it longer, acquire it, then extend its deadline (extend with by_ms, up to "
        f"the policy's max_lease: {policy.max_lease} ms), or renew it before each ttl runs out"
    )


def check_ttl(ttl_ms: object, policy: Policy, field: str = "ttl_ms") -> int:
    if ttl_ms is None:
        return policy.default_ttl
    if not is_int(ttl_ms):
        raise _invalid(field, "must be an integer number of milliseconds")
    assert isinstance(ttl_ms, int)
    if not policy.min_ttl <= ttl_ms <= policy.max_ttl:
        raise InvalidRequest(
            f"{field}: must be between {policy.min_ttl} and {policy.max_ttl} ms"
            + (hold_longer(policy) if ttl_ms > policy.max_ttl else ""),
            field=field,
            minimum=policy.min_ttl,
            maximum=policy.max_ttl,
        )
    return ttl_ms


def check_positive(field: str, value: object, maximum: int = MAX_TOKEN) -> int:
    if not is_int(value):
        raise _invalid(field, "must be an integer")
    assert isinstance(value, int)
    if not 1 <= value <= maximum:
        raise _invalid(field, f"must be between 1 and {maximum}")
    return value


def check_token(token: object, field: str = "token") -> int:
    return check_positive(field, token)


def check_optional_token(token: object, field: str = "token") -> int | None:
    return None if token is None else check_token(token, field)


def check_task(task: object) -> str | None:
    return None if task is None else check_text("task", task, MAX_TASK_CHARS)


def json_depth(value: object, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``value`` nests (a scalar 0, ``{}`` and ``[]`` 1, ``[[1]]`` 2), counted
    without recursion and only up to ``limit + 1``."""
    return _walk(value, limit)[0]


def _walk(value: object, limit: int) -> tuple[int, bool]:
    """The depth of ``value`` (up to ``limit + 1``), and whether its objects' keys are all
    strings: one level at a time, each level's containers in one list (no recursion, and no
    Python-level work per scalar)."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth, key_types = 0, set[type]()
    while level and depth <= limit:
        depth += 1
        children: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                key_types.update(map(type, node))
                children += node.values()
            else:
                children += node
        level = [c for c in children if isinstance(c, _CONTAINERS)]
    return depth, all(issubclass(t, str) for t in key_types)


def _check_shape(field: str, value: object) -> None:
    """What JSON text can say but not every reader keeps: the depth, string keys. Checked
    without recursion, before any recursive code (an encoder, a copy) sees the value."""
    depth, string_keys = _walk(value, MAX_JSON_DEPTH)
    if depth > MAX_JSON_DEPTH:
        raise InvalidRequest(
            f"{field}: must nest at most {MAX_JSON_DEPTH} levels deep",
            field=field,
            maximum=MAX_JSON_DEPTH,
        )
    if not string_keys:
        raise _invalid(field, "must be JSON (the keys of an object are strings)")


def json_size(field: str, value: object) -> int:
    """The size in bytes of ``value`` as compact JSON; refuses (``422`` naming ``field``) what
    cannot be stored and read back as it was: nesting deeper than :data:`MAX_JSON_DEPTH`,
    keys that are not strings, NaN and infinities, lone surrogates, U+0000 (which PostgreSQL's
    JSON refuses), integers too long for Python to print."""
    _check_shape(field, value)
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _invalid(field, f"must be JSON ({exc})") from None
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise _invalid(field, "must not contain lone surrogates") from None
    if "\\u0000" in text and _NUL.search(text):
        raise _invalid(field, "must not contain the character U+0000 (NUL)")
    return size


def check_meta(meta: object, policy: Policy, field: str = "meta") -> dict[str, Any] | None:
    """A small JSON object (``meta`` of a lease, ``data`` of a progress report)."""
    if meta is None:
        return None
    if not isinstance(meta, dict) or not all(isinstance(k, str) for k in meta):
        raise _invalid(field, "must be a JSON object")
    _check_size(field, meta, policy.max_meta_bytes)
    return meta


def check_value(value: object, policy: Policy, field: str = "value") -> object:
    """Any JSON value (a fenced write's ``value``, a completion's ``result``)."""
    _check_size(field, value, policy.max_value_bytes)
    return value


def _check_size(field: str, value: object, limit: int) -> None:
    size = json_size(field, value)
    if size > limit:
        raise TooLarge(
            f"{field} is {size} bytes, more than {limit}", field=field, limit=limit, size=size
        )


def check_instant(field: str, value: object) -> int:
    if not is_int(value):
        raise _invalid(field, "must be an integer of epoch milliseconds")
    assert isinstance(value, int)
    if not 0 <= value <= MAX_TOKEN:
        raise _invalid(field, "is out of range")
    return value


def check_limit(limit: object) -> int:
    return check_positive("limit", limit, MAX_LIMIT)


def check_cursor(after: object) -> int:
    if not is_int(after) or not 0 <= after <= MAX_TOKEN:  # type: ignore[operator]
        raise _invalid("after", "must be a non-negative integer")
    assert isinstance(after, int)
    return after


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value (the scheme in any case,
    blanks around the token ignored); ``None`` for another scheme or no token. The one reading
    of the header for every front: REST routes, the hot path, the event stream, ``/mcp``."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def check_lease_state(state: object) -> LeaseListState:
    """A lease list's ``state`` filter: ``live``, ``expired``, ``released`` or ``all``."""
    for known in LEASE_LIST_STATES:
        if state == known:
            return known
    raise _invalid("state", f"must be one of {', '.join(LEASE_LIST_STATES)}")
