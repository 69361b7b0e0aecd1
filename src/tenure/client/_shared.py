"""The pure half of the client: what to send for each verb, and what a reply means.

Nothing here does I/O. :class:`~tenure.client.sync.Client` and
:class:`~tenure.client.aio.AsyncClient` build a :class:`Call` with the functions below, hand it
to their transport (HTTP, or the database in direct mode), and turn the :class:`Reply` into a
frozen model of :mod:`tenure.core.models` or an exception with :func:`interpret`. Each call
says here how safe it is to repeat (:class:`Safety`); the retry rules themselves are in
:mod:`tenure.client._transport`, shared by both clients.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

# what a call is, importable from here as before (the builders and direct mode use them)
from tenure.client._call import Call as Call
from tenure.client._call import Reply as Reply
from tenure.client._call import Safety as Safety
from tenure.client._call import TransportError as TransportError
from tenure.client._call import UnexpectedReply as UnexpectedReply
from tenure.client._call import transport_error as transport_error
from tenure.core.models import (
    Event,
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    Lease,
    LostLease,
    Principal,
    ReleaseResult,
    RenewAllResult,
)
from tenure.errors import InvalidRequest, TenureError
from tenure.verbs import leases as lv
from tenure.verbs.table import PATH_PARAM, Verb

T = TypeVar("T")

# unauthenticated: the token was revoked (a dispatched agent's ends with its claim): no renewal
# can succeed any more
LOSS_CODES = frozenset({"lease_lost", "not_holder", "stale_token", "not_found", "unauthenticated"})


@dataclass(frozen=True)
class IssuedToken:
    """A principal's new bearer token, shown once (the reply of ``add_principal``)."""

    principal: Principal
    token_id: str
    token: str
    expires_at: int | None = None  # ms since the epoch; None: it never expires


# requests -----------------------------------------------------------------------------------
def _drop_none(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def segment(value: str, field: str = "key") -> str:
    """``value`` as one URL path segment: everything reserved encoded, ``/`` included."""
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{field}: must be a non-empty string", field=field)
    encoded = quote(value, safe="")
    if encoded in (".", ".."):  # dot segments would be resolved away by URL normalisation
        encoded = encoded.replace(".", "%2E")
    return encoded


def to_millis(until: int | datetime | None) -> int | None:
    """An instant as epoch milliseconds (a ``datetime`` must carry its time zone)."""
    if until is None or isinstance(until, int):
        return until
    if isinstance(until, datetime):
        if until.tzinfo is None:
            raise InvalidRequest("until: a datetime needs a time zone", field="until")
        return round(until.timestamp() * 1000)
    return until  # let the server name the wrong type


def verb_call(verb: Verb[Any, T], *, wait_s: float = 0.0, **args: Any) -> Call[T]:
    """The request of a verb of the table: its route's path (path parameters filled in from
    ``args``), the rest of ``args`` as the body (or the query of a GET), ``None`` values left
    out; the reply read with the verb's ``parse``; safe to repeat as the verb says."""
    values = _drop_none(**args)
    path_args = {name: values.pop(name) for name in PATH_PARAM.findall(verb.path)}
    path = PATH_PARAM.sub(lambda m: segment(path_args[m.group(1)], m.group(1)), verb.path)
    safety = Safety.IDEMPOTENT if verb.repeatable(values) else Safety.UNSAFE
    body, params = (None, values or None) if verb.method == "GET" else (values, None)
    return Call(verb.name, verb.method, path, verb.parse, body, params, path_args, safety, wait_s)


def acquire(
    key: str,
    ttl_ms: int | None = None,
    task: str | None = None,
    meta: dict[str, Any] | None = None,
    wait_ms: int | None = None,
    session: str | None = None,
) -> Call[Lease]:
    wait_s = wait_ms / 1000 if isinstance(wait_ms, int) and wait_ms > 0 else 0.0
    return verb_call(
        lv.ACQUIRE, wait_s=wait_s, key=key, ttl_ms=ttl_ms, task=task, meta=meta,
        wait_ms=wait_ms, session=session,
    )  # fmt: skip


def renew(key: str, token: int, ttl_ms: int | None = None) -> Call[Lease]:
    return verb_call(lv.RENEW, key=key, token=token, ttl_ms=ttl_ms)


def renew_all(
    keys: list[str] | tuple[str, ...] | None = None, session: str | None = None
) -> Call[RenewAllResult]:
    body = _drop_none(keys=None if keys is None else _listed(keys), session=session)
    return Call("renew_all", "POST", "/v1/leases/renew-all", renew_all_reply, body)


def extend(
    key: str, token: int, until: int | datetime | None = None, by_ms: int | None = None
) -> Call[ExtendResult]:
    body = _drop_none(key=key, token=token, until=to_millis(until), by_ms=by_ms)
    return Call("extend", "POST", "/v1/leases/extend", extend_reply, body)


def release(key: str, token: int | None = None, session: str | None = None) -> Call[ReleaseResult]:
    """With ``token``: that lease (of any session of yours); without: ``session``'s own."""
    safety = Safety.UNSAFE if token is None else Safety.IDEMPOTENT
    body = _drop_none(key=key, token=token, session=session if token is None else None)
    return Call("release", "POST", "/v1/leases/release", release_reply, body, safety=safety)


def force_release(key: str, reason: str) -> Call[ForceReleaseResult]:
    body = {"key": key, "reason": reason}
    return Call(
        "force_release", "POST", "/v1/leases/force-release", force_release_reply, body,
        safety=Safety.UNSAFE,
    )  # fmt: skip


def get_lease(key: str) -> Call[Lease]:
    return verb_call(lv.GET_LEASE, key=key)


LIST_LIMIT = 1000  # what one list_leases() returns at most, over pages


def list_leases(
    prefix: str | None = None,
    holder: str | None = None,
    task: str | None = None,
    after: str | None = None,
    limit: int | None = None,
) -> Call[Page[Lease]]:
    """A page of live leases (``limit``: the server's default, 1,000, when not given)."""
    params = _drop_none(prefix=prefix, holder=holder, task=task, after=after, limit=limit)
    return Call("list_leases", "GET", "/v1/leases", leases_page_reply, params=params)


def fenced_write(key: str, token: int, value: Any, op_id: str | None = None) -> Call[FencedWrite]:
    body = {"key": key, "token": token, "value": value}
    if op_id is not None:
        body["op_id"] = op_id
    safety = Safety.UNSAFE if op_id is None else Safety.IDEMPOTENT
    return Call("fenced_write", "POST", "/v1/fenced/write", fenced_write_reply, body, safety=safety)


def fenced_read(key: str) -> Call[FencedValue]:
    path = f"/v1/fenced/{segment(key)}"
    return Call("fenced_read", "GET", path, fenced_value_reply, path_args={"key": key})


FOLLOW_WAIT_MS = 25_000  # each long-poll of a follower
FOLLOW_LIMIT = 1000


def events(
    after: int = 0,
    key: str | None = None,
    holder: str | None = None,
    type: str | None = None,
    limit: int = 100,
    item: str | None = None,
    wait_ms: int | None = None,
) -> Call[list[Event]]:
    params = _drop_none(
        after=after, key=key, item=item, holder=holder, type=type, limit=limit, wait_ms=wait_ms
    )
    wait_s = wait_ms / 1000 if isinstance(wait_ms, int) and wait_ms > 0 else 0.0
    return Call("events", "GET", "/v1/events", events_reply, params=params, wait_s=wait_s)


def follow_page(
    after: int, key: str | None, holder: str | None, type: str | None, item: str | None
) -> Call[tuple[list[Event], int]]:
    """One long-poll of a follower of the event log: its events, and the cursor to go on from
    (the server's ``next``: past every event it examined, matched or not)."""
    call = events(after, key, holder, type, FOLLOW_LIMIT, item, FOLLOW_WAIT_MS)

    def parse(data: Any) -> tuple[list[Event], int]:
        found = events_reply(data)
        return found, int(data.get("next") or (found[-1].id if found else after))

    return Call(call.op, call.method, call.path, parse, params=call.params, wait_s=call.wait_s)


def stats() -> Call[dict[str, Any]]:
    return Call("stats", "GET", "/v1/stats", _as_dict)


def timeline(span_ms: int = 3_600_000, bucket_ms: int = 60_000) -> Call[dict[str, Any]]:
    params = {"span_ms": span_ms, "bucket_ms": bucket_ms}
    return Call("timeline", "GET", "/v1/stats/timeline", _as_dict, params=params)


def _as_dict(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    return data


def me() -> Call[Principal]:
    return Call("me", "GET", "/v1/me", me_reply)


def add_principal(
    name: str,
    kind: str = "agent",
    roles: tuple[str, ...] | list[str] = (),
    parent: str | None = None,
    ttl_ms: int | None = None,
) -> Call[IssuedToken]:
    body = _drop_none(name=name, kind=kind, roles=_listed(roles), parent=parent, ttl_ms=ttl_ms)
    return Call("add_principal", "POST", "/v1/principals", issued_reply, body, safety=Safety.UNSAFE)


def revoke_token(name: str, token_id: str) -> Call[None]:
    path = f"/v1/principals/{segment(name, 'name')}/tokens/{segment(token_id, 'token_id')}"
    args = {"name": name, "token_id": token_id}
    return Call("revoke_token", "DELETE", path, no_reply, path_args=args, safety=Safety.UNSAFE)


def _listed(values: Any) -> Any:
    """A list for JSON; a lone string stays a string so the server names the wrong type."""
    if isinstance(values, list | tuple | set | frozenset):
        return list(values)
    return values


def encode_body(body: Mapping[str, Any]) -> bytes:
    """``body`` as the JSON the server reads, or :class:`InvalidRequest` naming the bad field."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        bad = "body"
        for name, value in body.items():
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                bad = name
                break
        raise InvalidRequest(f"{bad}: must be JSON ({exc})", field=bad) from None


# replies ------------------------------------------------------------------------------------
LEASE_FIELDS = (
    "key", "holder", "task", "token", "ttl_ms", "acquired_at", "renewed_at", "expires_at",
    "renewals",
)  # fmt: skip


def lease_from(data: Any) -> Lease:
    values = {name: data[name] for name in LEASE_FIELDS}
    return Lease(
        **values,
        meta=dict(data.get("meta") or {}),
        state=data.get("state", "live"),
        session=data.get("session") or "",
    )


def lease_reply(data: Any) -> Lease:
    return lease_from(data["lease"])


def leases_reply(data: Any) -> list[Lease]:
    return [lease_from(item) for item in data["leases"]]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its entries, and where the next page starts when the server cut
    this one short (``truncated``: its list budget or page cap; ``next``: the cursor)."""

    entries: list[T]
    next: str | None = None
    truncated: bool = False

    @property
    def more(self) -> bool:
        return self.truncated and self.next is not None


def leases_page_reply(data: Any) -> Page[Lease]:
    return Page(leases_reply(data), data.get("next"), bool(data.get("truncated")))


def renew_all_reply(data: Any) -> RenewAllResult:
    renewed = tuple(lease_from(item) for item in data["renewed"])
    lost = tuple(LostLease(x["key"], x["reason"], x.get("token")) for x in data["lost"])
    return RenewAllResult(renewed, lost)


def extend_reply(data: Any) -> ExtendResult:
    return ExtendResult(
        lease_from(data["lease"]),
        bool(data["extended"]),
        bool(data["capped"]),
        data["requested_until"],
        data["granted_until"],
    )


def release_reply(data: Any) -> ReleaseResult:
    lease = data.get("lease")
    lease_out = None if lease is None else lease_from(lease)
    return ReleaseResult(bool(data["released"]), lease_out, data.get("reason"))


def force_release_reply(data: Any) -> ForceReleaseResult:
    return ForceReleaseResult(lease_from(data["lease"]), data["actor"], data["reason"])


def fenced_write_reply(data: Any) -> FencedWrite:
    return FencedWrite(
        data["key"], data["token"], data["value"], data["version"], bool(data["duplicate"])
    )


def fenced_value_reply(data: Any) -> FencedValue:
    return FencedValue(
        data["key"], data["token"], data["value"], data["version"], data["updated_at"]
    )


def event_from(data: Any) -> Event:
    return Event(
        data["id"],
        data["at"],
        data["type"],
        data.get("key"),
        data.get("holder"),
        data.get("task"),
        data.get("token"),
        data.get("actor"),
        data.get("reason"),
        dict(data.get("data") or {}),
    )


def events_reply(data: Any) -> list[Event]:
    return [event_from(item) for item in data["events"]]


def principal_from(data: Any) -> Principal:
    return Principal(data["name"], data["kind"], tuple(data.get("roles") or ()), data.get("parent"))


def me_reply(data: Any) -> Principal:
    return principal_from(data["principal"])


def issued_reply(data: Any) -> IssuedToken:
    principal = principal_from(data["principal"])
    return IssuedToken(principal, data["token_id"], data["token"], data.get("expires_at"))


def no_reply(data: Any) -> None:
    return None


def interpret(call: Call[T], reply: Reply) -> T:
    """The result of ``call`` from ``reply``, or the exception the reply stands for."""
    if reply.ok:
        try:
            return call.parse(reply.data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UnexpectedReply(
                f"{call.method} {call.path}: a {reply.status} reply of the wrong shape ({exc!r})",
                method=call.method,
                path=call.path,
                sent=True,
                http_status=reply.status,
                body=reply.text[:500],
            ) from None
    raise error_from(call, reply)


def error_from(call: Call[Any], reply: Reply) -> TenureError:
    """The exception a failed reply stands for: the problem's class, else UnexpectedReply."""
    data = reply.data
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        return TenureError.from_problem(data)
    return UnexpectedReply(
        f"{call.method} {call.path}: HTTP {reply.status} without a problem document",
        method=call.method,
        path=call.path,
        sent=True,
        http_status=reply.status,
        body=reply.text[:500],
    )


def is_loss(error: BaseException) -> bool:
    """Whether a renewal's error says the lease is gone (no retry can bring it back)."""
    return isinstance(error, TenureError) and error.code in LOSS_CODES


def loss_reason(error: TenureError) -> str:
    """Why a lease is gone, from the error of its renewal: the server's ``reason`` if any."""
    reason = getattr(error, "reason", None)
    return str(reason) if error.code == "lease_lost" and reason else error.code
