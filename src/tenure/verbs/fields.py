"""The wire's field types: what each request field accepts, as pydantic types whose JSON Schema
publishes the service's limits.

The models shape the wire: types, required fields, no unknown fields. The rules (key and text
limits, the policy's TTL bounds, who may do what) live in the service, which checks every value;
the types only *publish* those rules (``json_schema_extra``) so that the OpenAPI document and the
MCP tools' schemas describe exactly what the service accepts. Limits that depend on the
deployment's policy are marked with ``x-tenure-limit`` and filled in when the OpenAPI document
is built.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from tenure.core.validate import (
    MAX_BODY_CHARS,
    MAX_LABELS,
    MAX_OP_ID_CHARS,
    MAX_REASON_CHARS,
    MAX_SESSION_BYTES,
    MAX_TASK_CHARS,
    MAX_TITLE_CHARS,
    MAX_WAIT_MS,
    RESERVED_SESSION_PREFIX,
)
from tenure.verbs.call import Send, listed, to_millis, unless_key

MAX_INT = 2**63 - 1
MAX_RENEW_KEYS = 1000  # keys one renew-all may name
LIMIT = "x-tenure-limit"  # marks a bound that openapi.py takes from the policy

# What the service accepts, as ECMA-262 regular expressions (the dialect of JSON Schema).
CONTROL = r"\x00-\x08\x0b-\x1f\x7f-\x9f"  # control characters, but tab and newline
SPACE = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"  # + str.isspace
KEY_CONTROL = r"\x00-\x1f\x7f-\x9f"  # every control character: none is allowed in a key
KEY_PATTERN = f"^[^{KEY_CONTROL}]+$"  # JSON text cannot carry lone surrogates anyway
LEASE_KEY_PATTERN = f"^(?!items/)[^{KEY_CONTROL}]+$"  # the generic lease verbs: not an item's
#: an item id as a filter: text that makes a key (``items/<id>``), so no control characters
ITEM_FILTER_PATTERN = f"^[^{KEY_CONTROL}]*[^{SPACE}][^{KEY_CONTROL}]*$"
SESSION_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"  # may be empty: the default session
TEXT_PATTERN = f"^[^{CONTROL}]*[^{SPACE}][^{CONTROL}]*$"  # no control characters, not blank
FILTER_PATTERN = f"^[^{CONTROL}]*$"
LINE = r"\x00-\x08\x0a-\x1f\x7f-\x9f"  # control characters, but tab: one line of text
LINE_PATTERN = f"^[^{LINE}]*[^{SPACE}][^{LINE}]*$"  # a path segment of text (routes match no \n)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$"
ITEM_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
AGENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,63}$"  # a principal name's rules, 64 at most
TOKEN_ID_PATTERN = r"^[0-9a-f]{12}$"


def key_schema(description: str = "the lease key", *, lease_verb: bool = False) -> dict[str, Any]:
    """``lease_verb``: the key of a generic lease verb, which refuses the keys of items."""
    items = (
        "; not under `items/` (an item's claim: use the item's own routes, else 422)"
        if lease_verb
        else ""
    )
    return {
        "minLength": 1,
        "maxLength": 512,
        "pattern": LEASE_KEY_PATTERN if lease_verb else KEY_PATTERN,
        "description": f"{description}: 1 to max_key_bytes bytes of UTF-8 (a longer key is "
        f"refused with 413 too_large), no control characters{items}",
        "examples": ["jobs/nightly-report"],
        LIMIT: "max_key_bytes",
    }


def text_schema(max_chars: int, description: str) -> dict[str, Any]:
    return {
        "minLength": 1,
        "maxLength": max_chars,
        "pattern": TEXT_PATTERN,
        "description": f"{description}: not blank, no control characters but tab and newline",
    }


def pattern_field(
    pattern: str, description: str, *, max_length: int | None = None, example: str | None = None
) -> Any:
    """A string field matching ``pattern``: at most ``max_length``, with an example (all in
    its JSON schema; the verbs check the values themselves)."""
    schema: dict[str, Any] = {} if max_length is None else {"maxLength": max_length}
    schema |= {"pattern": pattern, "description": description}
    return Field(json_schema_extra=schema if example is None else schema | {"examples": [example]})


def text_field(max_chars: int, description: str, *, blank: bool = False) -> Any:
    """A text filter of a query: at most ``max_chars``, no control characters (but tab and
    newline); ``blank``: may be empty or blank."""
    pattern = FILTER_PATTERN if blank else TEXT_PATTERN
    extra: dict[str, Any] = {"maxLength": max_chars, "pattern": pattern}
    return Field(description=description, json_schema_extra=extra)


def _whole(value: object) -> object:
    """JSON Schema counts ``35.0`` as an integer; so does the API (never ``true`` or ``"35"``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Whole = BeforeValidator(_whole)  # after the bounds, so they stay in the integer's own schema
Key = Annotated[str, Field(json_schema_extra=key_schema())]
LeaseKey = Annotated[str, Field(json_schema_extra=key_schema(lease_verb=True))]
Token = Annotated[int, Field(ge=1, le=MAX_INT, description="a fencing token"), Whole]
Ttl = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_INT,
        description="the lease's term in milliseconds, between the policy's min_ttl and max_ttl",
        json_schema_extra={LIMIT: "ttl"},
    ),
    Whole,
]
Millis = Annotated[int, Field(ge=1, le=MAX_INT), Whole]
#: a ``datetime`` (with its time zone) is sent as epoch milliseconds
Instant = Annotated[
    int, Field(ge=0, le=MAX_INT, description="epoch milliseconds (UTC)"), Whole, Send(to_millis)
]
WaitMs = Annotated[
    int,
    Field(ge=0, le=MAX_WAIT_MS, description="long-poll up to this long while the key is held"),
    Whole,
]
Task = Annotated[str, Field(json_schema_extra=text_schema(MAX_TASK_CHARS, "what the lease serves"))]
Slots = Annotated[
    int,
    Field(
        ge=1,
        le=1000,
        description="a semaphore: up to this many holders at once, each with a lease on a slot "
        "key of its own (`KEY#slot/I`) and its own token; every holder must ask the same number",
    ),
    Whole,
]
LeaseScope = Annotated[
    Literal["key", "subtree"],
    Field(
        description="`key` (default): the key alone; `subtree` (a key ending in `/`): every key "
        "under it too. A subtree is refused while anyone else holds a key under it or a subtree "
        "above it, and while it lives nobody else gets a key under it; leases of your own "
        "session never block each other this way"
    ),
    Send(unless_key),  # the default is not sent: an older server takes a request without it
]
Reason = Annotated[
    str, Field(json_schema_extra=text_schema(MAX_REASON_CHARS, "why (recorded in the event)"))
]
OpId = Annotated[str, Field(json_schema_extra=text_schema(MAX_OP_ID_CHARS, "an idempotency key"))]


#: the ``/mcp`` connection a request is made for by the server's own MCP tools (set only by
#: their in-process transport, :mod:`tenure.mcp.loopback`, never from anything a client sends)
CONNECTION_SESSION: ContextVar[str | None] = ContextVar("tenure_connection_session", default=None)
#: the ASGI scope key naming the principal of a direct-mode request (:mod:`tenure.client.direct`):
#: set only by the in-process transport of this process's own client, which trusts the name it
#: was given; no HTTP request can set a scope key, whatever header it sends
TRUSTED_PRINCIPAL = "tenure.trusted_principal"


def _client_session(value: object) -> object:
    """A ``session`` a client sends is not one of the ``/mcp`` connections' (their server
    names them): refused before any verb runs, except the connection's own in the requests its
    tools make in-process (:data:`CONNECTION_SESSION`)."""
    if (
        isinstance(value, str)
        and value.startswith(RESERVED_SESSION_PREFIX)
        and value != CONNECTION_SESSION.get()
    ):
        raise ValueError(f"must not start with {RESERVED_SESSION_PREFIX!r} (/mcp's sessions)")
    return value


Session = Annotated[
    str,
    pattern_field(
        SESSION_PATTERN,
        "the holder's session: one running process of the caller (a `tenure run`, an "
        "agent's connection); at most 128 bytes of UTF-8, no control characters, not starting "
        "with `mcp-http:` (the sessions of `/mcp` connections, named by the server); absent or "
        "empty: the caller's default session. Sessions of one principal exclude each other "
        "like strangers",
        max_length=MAX_SESSION_BYTES,
        example="web-2",
    ),
    AfterValidator(_client_session),
]
Name = Annotated[
    str,
    pattern_field(NAME_PATTERN, "1-128 characters: letters, digits and . _ @ : / -"),
]


# the items' fields
ItemId = Annotated[
    str,
    pattern_field(
        ITEM_ID_PATTERN,
        "an item id: 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
        example="it-1f2e3d4c5b",
    ),
]
Title = Annotated[str, Field(json_schema_extra=text_schema(MAX_TITLE_CHARS, "what the work is"))]
ItemBody = Annotated[
    str,
    pattern_field(
        FILTER_PATTERN,
        "the details, may be empty: no control characters but tab and newline",
        max_length=MAX_BODY_CHARS,
    ),
]
Priority = Annotated[
    int, Field(ge=0, le=1000, description="0 the most urgent (the default is 2)"), Whole
]
Label = Annotated[str, Field(json_schema_extra=text_schema(64, "a label"))]
Labels = Annotated[
    list[Label],
    Field(max_length=MAX_LABELS, description="labels (repeats are dropped)"),
    Send(listed),  # a tuple or a set as a JSON list
]
Epoch = Annotated[
    int,
    Field(ge=1, le=MAX_INT, description="the claim's epoch (the token of its lease)"),
    Whole,
]
ProgressMessage = Annotated[str, Field(json_schema_extra=text_schema(4096, "what happened"))]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
