"""The pure half of the client: what to send for each verb, and what a reply means.

Nothing here does I/O. :class:`~tenure.client.sync.Client` and
:class:`~tenure.client.aio.AsyncClient` build a :class:`Call` with the verb's entry in the table
(``lv.RENEW.call(key=..., token=...)``: its path, body, reply reading and how safe it is to
repeat, :class:`Safety`) or, where a request says more than its entry, with the functions
below; they hand it to their transport (HTTP, or the database in direct mode), and turn the
:class:`Reply` into a frozen model of :mod:`tenure.core.models` or an exception with
:func:`interpret`. The retry rules themselves are in :mod:`tenure.client._transport`, shared
by both clients.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

# what a call is, importable from here as before (the builders and direct mode use them)
from tenure.client._call import Call as Call
from tenure.client._call import Reply as Reply
from tenure.client._call import Safety as Safety
from tenure.client._call import TransportError as TransportError
from tenure.client._call import UnexpectedReply as UnexpectedReply
from tenure.client._call import transport_error as transport_error
from tenure.core import models as m
from tenure.core.models import Event
from tenure.core.models import IssuedToken as IssuedToken
from tenure.errors import InvalidRequest, TenureError
from tenure.verbs import hooks as hv
from tenure.verbs import leases as lv
from tenure.verbs import ops as ov
from tenure.verbs.call import segment as segment
from tenure.verbs.call import to_millis as to_millis
from tenure.verbs.lists import Page as Page

T = TypeVar("T")

# unauthenticated: the token was revoked (a dispatched agent's ends with its claim): no renewal
# can succeed any more
LOSS_CODES = frozenset({"lease_lost", "not_holder", "stale_token", "not_found", "unauthenticated"})


# requests -----------------------------------------------------------------------------------
# Each verb builds its own request from its entry (``VERB.call(**args)``): the clients' methods
# call it with their arguments. What is left here says more than the entry: a choice between
# arguments (``release``), or a reading of the reply other than the verb's own.
def release(
    key: str, token: int | None = None, session: str | None = None
) -> Call[m.ReleaseResult]:
    """With ``token``: that lease (of any session of yours); without: ``session``'s own."""
    return lv.RELEASE.call(key=key, token=token, session=session if token is None else None)


def hook_claude_code(
    event: Mapping[str, Any] | None = None, repo: str | None = None, root: str | None = None
) -> Call[dict[str, Any]]:
    """A Claude Code hook event (its own fields as the body), answered with the harness's
    decision; ``repo``/``root`` name the repository (default: found from the event's ``cwd``)."""
    body = {**(event or {}), **_drop_none(tenure_repo=repo, tenure_root=root)}
    verb = hv.CLAUDE_CODE
    return Call(verb.name, verb.method, verb.path, verb.parse, body, safety=Safety.UNSAFE)


def _drop_none(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


LIST_LIMIT = 1000  # what one list_leases() returns at most, over pages
FOLLOW_WAIT_MS = 25_000  # each long-poll of a follower
FOLLOW_LIMIT = 1000


ALL_EVENTS = ov.Filters()


def events(
    after: int = 0, where: ov.Filters = ALL_EVENTS, limit: int = 100, wait_ms: int | None = None
) -> Call[list[Event]]:
    """A page of the events after ``after`` that match ``where``."""
    call = ov.EVENTS.call(
        after=after, key=where.key, item=where.item, holder=where.holder, type=where.type,
        limit=limit, wait_ms=wait_ms,
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


def reparse(call: Call[Any], parse: Callable[[Any], T]) -> Call[T]:
    """``call`` with its reply read by ``parse`` instead."""
    return replace(call, parse=parse)


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
