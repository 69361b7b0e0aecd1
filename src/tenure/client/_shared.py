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
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar, cast
from urllib.parse import quote

# what a call is, importable from here as before (the builders and direct mode use them)
from tenure.client._call import Call as Call
from tenure.client._call import Reply as Reply
from tenure.client._call import Safety as Safety
from tenure.client._call import TransportError as TransportError
from tenure.client._call import UnexpectedReply as UnexpectedReply
from tenure.client._call import transport_error as transport_error
from tenure.core import models as m
from tenure.core.models import Event, Lease, Principal
from tenure.core.models import IssuedToken as IssuedToken
from tenure.core.signin import SigninCode
from tenure.errors import InvalidRequest, TenureError
from tenure.verbs import hooks as hv
from tenure.verbs import leases as lv
from tenure.verbs import ops as ov
from tenure.verbs import principals as pv
from tenure.verbs.lists import Page as Page
from tenure.verbs.table import BODY_METHODS, PATH_PARAM, Verb

T = TypeVar("T")

# unauthenticated: the token was revoked (a dispatched agent's ends with its claim): no renewal
# can succeed any more
LOSS_CODES = frozenset({"lease_lost", "not_holder", "stale_token", "not_found", "unauthenticated"})


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
    path = PATH_PARAM.sub(lambda p: segment(path_args[p.group(1)], p.group(1)), verb.path)
    safety = Safety.IDEMPOTENT if verb.repeatable(values) else Safety.UNSAFE
    body, params = (values, None) if verb.method in BODY_METHODS else (None, values or None)
    return Call(verb.name, verb.method, path, verb.parse, body, params, path_args, safety, wait_s)


def acquire(
    key: str,
    ttl_ms: int | None = None,
    task: str | None = None,
    meta: dict[str, Any] | None = None,
    wait_ms: int | None = None,
    session: str | None = None,
    scope: str | None = None,
) -> Call[Lease]:
    """``scope``: ``"subtree"`` for a key ending in ``/`` (``None``: the key alone, sent as
    nothing, so that an older server takes it)."""
    wait_s = wait_ms / 1000 if isinstance(wait_ms, int) and wait_ms > 0 else 0.0
    return verb_call(
        lv.ACQUIRE, wait_s=wait_s, key=key, ttl_ms=ttl_ms, task=task, meta=meta,
        wait_ms=wait_ms, session=session, scope=None if scope == "key" else scope,
    )  # fmt: skip


def renew(key: str, token: int, ttl_ms: int | None = None) -> Call[Lease]:
    return verb_call(lv.RENEW, key=key, token=token, ttl_ms=ttl_ms)


def renew_all(
    keys: list[str] | tuple[str, ...] | None = None, session: str | None = None
) -> Call[m.RenewAllResult]:
    listed = None if keys is None else _listed(keys)
    call = verb_call(lv.RENEW_ALL, keys=listed, session=session)
    return cast(Call[m.RenewAllResult], call)  # the reply's JSON reads as one in any case


def release_all(session: str | None = None) -> Call[m.ReleaseAllResult]:
    return verb_call(lv.RELEASE_ALL, session=session)


def hook_claude_code(
    event: Mapping[str, Any] | None = None, repo: str | None = None, root: str | None = None
) -> Call[dict[str, Any]]:
    """A Claude Code hook event (its own fields as the body), answered with the harness's
    decision; ``repo``/``root`` name the repository (default: found from the event's ``cwd``)."""
    body = {**(event or {}), **_drop_none(tenure_repo=repo, tenure_root=root)}
    verb = hv.CLAUDE_CODE
    return Call(verb.name, verb.method, verb.path, verb.parse, body, safety=Safety.UNSAFE)


def extend(
    key: str, token: int, until: int | datetime | None = None, by_ms: int | None = None
) -> Call[m.ExtendResult]:
    return verb_call(lv.EXTEND, key=key, token=token, until=to_millis(until), by_ms=by_ms)


def release(
    key: str, token: int | None = None, session: str | None = None
) -> Call[m.ReleaseResult]:
    """With ``token``: that lease (of any session of yours); without: ``session``'s own."""
    return verb_call(lv.RELEASE, key=key, token=token, session=session if token is None else None)


def force_release(key: str, reason: str) -> Call[m.ForceReleaseResult]:
    return verb_call(lv.FORCE_RELEASE, key=key, reason=reason)


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
    return verb_call(
        lv.LIST_LEASES, prefix=prefix, holder=holder, task=task, after=after, limit=limit
    )


def fenced_write(key: str, token: int, value: Any, op_id: str | None = None) -> Call[m.FencedWrite]:
    # ``value`` is sent even when it is None (JSON null is a value to store)
    call = verb_call(lv.FENCED_WRITE, key=key, token=token, op_id=op_id)
    return Call(
        call.op, call.method, call.path, call.parse, {**(call.body or {}), "value": value},
        safety=call.safety,
    )  # fmt: skip


def fenced_read(key: str) -> Call[m.FencedValue]:
    return verb_call(lv.FENCED_READ, key=key)


FOLLOW_WAIT_MS = 25_000  # each long-poll of a follower
FOLLOW_LIMIT = 1000


ALL_EVENTS = ov.Filters()


def events(
    after: int = 0, where: ov.Filters = ALL_EVENTS, limit: int = 100, wait_ms: int | None = None
) -> Call[list[Event]]:
    """A page of the events after ``after`` that match ``where``."""
    wait_s = wait_ms / 1000 if isinstance(wait_ms, int) and wait_ms > 0 else 0.0
    call = verb_call(
        ov.EVENTS, wait_s=wait_s, after=after, key=where.key, item=where.item,
        holder=where.holder, type=where.type, limit=limit, wait_ms=wait_ms,
    )  # fmt: skip
    return reparse(call, events_reply)


def follow_page(after: int, where: ov.Filters) -> Call[tuple[list[Event], int]]:
    """One long-poll of a follower of the event log: its events, and the cursor to go on from
    (the server's ``next``: past every event it examined, matched or not)."""
    call = events(after, where, FOLLOW_LIMIT, FOLLOW_WAIT_MS)

    def parse(data: Any) -> tuple[list[Event], int]:
        page = ov.EVENTS.parse(data)
        return page.events, page.next or (page.events[-1].id if page.events else after)

    return reparse(call, parse)


def stats() -> Call[dict[str, Any]]:
    return verb_call(ov.STATS)


def timeline(span_ms: int = 3_600_000, bucket_ms: int = 60_000) -> Call[dict[str, Any]]:
    return verb_call(ov.TIMELINE, span_ms=span_ms, bucket_ms=bucket_ms)


def me() -> Call[Principal]:
    return verb_call(pv.WHOAMI)


def signin_code() -> Call[SigninCode]:
    return verb_call(pv.SIGNIN_CODE)


def add_principal(
    name: str,
    kind: str = "agent",
    roles: tuple[str, ...] | list[str] = (),
    parent: str | None = None,
    ttl_ms: int | None = None,
) -> Call[IssuedToken]:
    return verb_call(
        pv.ADD_PRINCIPAL, name=name, kind=kind, roles=_listed(roles), parent=parent, ttl_ms=ttl_ms
    )


def revoke_token(name: str, token_id: str) -> Call[None]:
    return verb_call(pv.REVOKE_TOKEN, name=name, token_id=token_id)


def reparse(call: Call[Any], parse: Callable[[Any], T]) -> Call[T]:
    """``call`` with its reply read by ``parse`` instead."""
    return Call(
        call.op, call.method, call.path, parse, call.body, call.params, call.path_args,
        call.safety, call.wait_s,
    )  # fmt: skip


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
# (each verb reads its own reply: ``Verb.parse``; these names serve the item calls and the CLI)


def lease_reply(data: Any) -> Lease:
    return Lease.from_wire(data["lease"])


def events_reply(data: Any) -> list[Event]:
    return ov.EVENTS.parse(data).events


def interpret(call: Call[T], reply: Reply) -> T:
    """The result of ``call`` from ``reply``, or the exception the reply stands for."""
    if reply.ok:
        try:
            return call.parse(reply.data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            what = f"a {reply.status} reply of the wrong shape ({exc!r})"
            raise _unexpected(call, reply, what) from None
    raise error_from(call, reply)


def error_from(call: Call[Any], reply: Reply) -> TenureError:
    """The exception a failed reply stands for: the problem's class, else UnexpectedReply."""
    data = reply.data
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        return TenureError.from_problem(data)
    return _unexpected(call, reply, f"HTTP {reply.status} without a problem document")


def _unexpected(call: Call[Any], reply: Reply, what: str) -> UnexpectedReply:
    """A reply the client cannot read, sent (the server may have acted on the request)."""
    return UnexpectedReply(
        f"{call.method} {call.path}: {what}",
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
