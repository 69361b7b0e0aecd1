"""The lease verbs and the fenced register: their inputs and their entries in the verb table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from tenure.core import models as m
from tenure.core.models import Lease, LeaseListState, Principal
from tenure.verbs import call as c
from tenure.verbs.fields import (
    MAX_RENEW_KEYS,
    Body,
    Instant,
    Key,
    LeaseKey,
    LeaseScope,
    Millis,
    OpId,
    Reason,
    Session,
    Slots,
    Task,
    Token,
    Ttl,
    WaitMs,
    text_field,
)
from tenure.verbs.lists import Page, fitting
from tenure.verbs.replies import (
    ExtendReply,
    FencedValueReply,
    FencedWriteReply,
    ForceReleaseReply,
    LeaseReply,
    LeasesReply,
    ReleaseAllReply,
    ReleaseReply,
    RenewAllReply,
)
from tenure.verbs.table import Family, Reply, Services, never

#: the statuses every verb of a caller may meet: a bad body, no token, too large a value
ASKED = (400, 401, 413, 422)
#: ... and those of a verb on a lease: not yours, none, a conflict
EDITS = (*ASKED, 403, 404, 409)
#: a read of one key (in the path): no token, none, too long a key
READ_KEY = (401, 404, 413, 422)
#: a list: no token, a bad filter
LISTED = (401, 422)


#: a subtree lease names a key ending in ``/`` (JSON Schema's ``if``/``then``: the document
#: says what the service checks, so a schema-valid request is never refused for it)
SUBTREE_KEY: JsonDict = {
    "if": {"properties": {"scope": {"const": "subtree"}}, "required": ["scope"]},
    "then": {"properties": {"key": {"pattern": "/$"}}},
}


class AcquireIn(Body):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=SUBTREE_KEY)

    key: LeaseKey
    ttl_ms: Ttl | None = None
    task: Task | None = None
    meta: Annotated[
        dict[str, Any] | None,
        Field(description="a small JSON object, at most max_meta_bytes (else 413 too_large)"),
    ] = None
    wait_ms: WaitMs | None = None
    session: Session | None = None
    scope: LeaseScope | None = None
    slots: Slots | None = None


class RenewIn(Body):
    key: LeaseKey
    token: Token
    ttl_ms: Ttl | None = None


class RenewAllIn(Body):
    keys: Annotated[list[Key], Field(max_length=MAX_RENEW_KEYS), c.Send(c.listed)] | None = None
    session: Annotated[
        Session | None,
        Field(description="renew only this session's leases (default: every session's)"),
    ] = None


class ReleaseAllIn(Body):
    session: Annotated[
        Session | None,
        Field(description="release only this session's leases (default: every session's)"),
    ] = None


class TransferIn(Body):
    key: LeaseKey
    token: Annotated[Token, Field(description="the lease to hand over (any session of yours)")]
    to_session: Annotated[Session, Field(description="your session that holds it from now on")]


class ExtendIn(Body):
    """Exactly one of ``until`` and ``by_ms``."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["until"], "properties": {"until": {"type": "integer"}}},
                {"required": ["by_ms"], "properties": {"by_ms": {"type": "integer"}}},
            ]
        }
    )
    key: LeaseKey
    token: Token
    until: Instant | None = None
    by_ms: Annotated[
        Millis | None, Field(description="the new deadline is now + by_ms (capped at max_lease)")
    ] = None


class ReleaseIn(Body):
    key: LeaseKey
    token: Annotated[
        Token | None,
        Field(
            description="the lease of this token, from any session of yours (default: the "
            "live lease of your `session`)"
        ),
    ] = None
    session: Session | None = None


class ForceReleaseIn(Body):
    key: LeaseKey
    reason: Reason


class FencedWriteIn(Body):
    key: LeaseKey
    token: Token
    value: Annotated[Any, Field(description="any JSON value, at most max_value_bytes")]
    op_id: OpId | None = None


class GetLeaseIn(Body):
    key: Key


class ListLeasesIn(Body):
    prefix: Annotated[str | None, text_field(1024, "keys starting with", blank=True)] = None
    holder: Annotated[str | None, text_field(1024, "held by", blank=True)] = None
    task: Annotated[str | None, text_field(1024, "serving this task", blank=True)] = None
    limit: Annotated[int, Field(ge=1, le=100_000)] = 1000
    after: Annotated[
        str | None, text_field(1024, "only keys sorting after this one (the next page)")
    ] = None
    state: Annotated[
        LeaseListState,
        Field(
            description="`live` (the default); `expired`, `released` (by a release, a "
            "force-release or a takeover) or `all`: the latest lease of each key that ended "
            "that way (`all`: whatever its state)"
        ),
    ] = "live"


def lease_reply(lease: Lease) -> dict[str, Any]:
    return {"lease": lease.to_dict()}


def lease_of_reply(data: Any) -> Lease:
    return Lease.from_wire(data["lease"])


def _renew_all_wire(out: m.RenewAllResult | bytes) -> dict[str, Any] | bytes:
    return out if isinstance(out, bytes) else out.to_dict()


def _leases_wire(page: Page[Lease]) -> dict[str, Any]:
    leases = [lease.to_dict() for lease in page.entries]
    return {"leases": leases, "truncated": page.truncated, "next": page.next}


def _leases_page(data: Any) -> Page[Lease]:
    leases = [Lease.from_wire(item) for item in data["leases"]]
    return Page(leases, data.get("next"), bool(data.get("truncated")))


# how the results travel ----------------------------------------------------------------------
LEASE = Reply(lease_reply, lease_of_reply, LeaseReply)
EXTENDED = Reply.of(m.ExtendResult.from_wire, ExtendReply)
RENEWED_ALL: Reply[m.RenewAllResult | bytes] = Reply(
    _renew_all_wire, m.RenewAllResult.from_wire, RenewAllReply
)
RELEASED = Reply.of(m.ReleaseResult.from_wire, ReleaseReply)
RELEASED_ALL = Reply.of(m.ReleaseAllResult.from_wire, ReleaseAllReply)
FORCE_RELEASED = Reply.of(m.ForceReleaseResult.from_wire, ForceReleaseReply)
LEASES_PAGE = Reply(_leases_wire, _leases_page, LeasesReply)
WRITTEN = Reply.of(m.FencedWrite.from_wire, FencedWriteReply)
FENCED_VALUE = Reply.of(m.FencedValue.from_wire, FencedValueReply)


# the retry rules of the client: may a request whose outcome is unknown be sent again? --------
def _never_again(_: Mapping[str, Any]) -> bool:
    """Re-acquiring from a session shared by several processes would be a silent second grant
    of a lease another process just took: see the client's retry rules."""
    return False


def _with_token(args: Mapping[str, Any]) -> bool:
    """A release *with* a token only ends that lease: a repeat says ``released: false``."""
    return args.get("token") is not None


def _with_op_id(args: Mapping[str, Any]) -> bool:
    """The server answers a repeated ``op_id`` with the first write's result."""
    return args.get("op_id") is not None


# the verbs: what each one runs (its docstring describes the operation) and its entry ---------
LEASES = Family(tags=("leases",), problems=EDITS)
FENCED = Family(tags=("fenced",), problems=(*ASKED, 403, 409))


def _acquire(services: Services, me: Principal, a: AcquireIn) -> Lease:
    """Acquire `key`, or renew it if your `session` holds it; `wait_ms` long-polls while it is
    held. Another session of yours holding it is `409 lease_held`, like anyone else. `scope:
    subtree` on a key ending in `/` holds every key under it; `lease_held` names the blocking
    lease (`held_key`). `slots: N` acquires a semaphore: a lease on a free slot key
    (`KEY#slot/I`); when all N are held, `lease_held` names the `holders`."""
    if a.slots is not None:  # a semaphore's slot
        return services.leases.acquire(
            me, a.key, a.ttl_ms, a.task, a.meta, a.session, a.scope, slots=a.slots
        )
    return services.leases.acquire(me, a.key, a.ttl_ms, a.task, a.meta, a.session, a.scope)


ACQUIRE = LEASES.verb(
    "acquire", "POST /v1/leases/acquire", AcquireIn, _acquire, LEASE,
    problems=(*ASKED, 409, 429), repeatable=_never_again, grouped=True,
)  # fmt: skip


def _renew(services: Services, me: Principal, a: RenewIn) -> Lease:
    return services.leases.renew(me, a.key, a.token, a.ttl_ms)


RENEW = LEASES.verb("renew", "POST /v1/leases/renew", RenewIn, _renew, LEASE, grouped=True)


def _renew_all(services: Services, me: Principal, a: RenewAllIn) -> m.RenewAllResult | bytes:
    """Renew every live lease of yours (only your `session`'s when given; or the `keys`)."""
    # without keys the database renews them in one statement and writes the reply's JSON,
    # passed on unparsed (one transaction however many leases)
    if a.keys is None:
        return services.leases.renew_all_json(me, a.session)
    return services.leases.renew_all(me, a.keys, a.session)


RENEW_ALL = LEASES.verb(
    "renew_all", "POST /v1/leases/renew-all", RenewAllIn, _renew_all, RENEWED_ALL, problems=ASKED
)


def _extend(services: Services, me: Principal, a: ExtendIn) -> m.ExtendResult:
    return services.leases.extend(me, a.key, a.token, a.until, a.by_ms)


EXTEND = LEASES.verb("extend", "POST /v1/leases/extend", ExtendIn, _extend, EXTENDED)


def _release(services: Services, me: Principal, a: ReleaseIn) -> m.ReleaseResult:
    """End your lease: the lease of `token` (any session of yours), else your `session`'s.
    `released: false` when there is nothing of yours to end, with the `reason`."""
    return services.leases.release(me, a.key, a.token, a.session)


RELEASE = LEASES.verb(
    "release", "POST /v1/leases/release", ReleaseIn, _release, RELEASED,
    problems=(*ASKED, 403), repeatable=_with_token, grouped=True,
)  # fmt: skip


def _release_all(services: Services, me: Principal, a: ReleaseAllIn) -> m.ReleaseAllResult:
    """End every live lease of yours (only your `session`'s when given), each as `release` with
    its token would; item claims are left to the items' own verbs. A repeat releases nothing
    more."""
    return services.leases.release_all(me, a.session)


RELEASE_ALL = LEASES.verb(
    "release_all", "POST /v1/leases/release-all", ReleaseAllIn, _release_all, RELEASED_ALL,
    problems=ASKED,
)  # fmt: skip


def _transfer(services: Services, me: Principal, a: TransferIn) -> Lease:
    """Hand your live lease `token` on `key` to your session `to_session`, under a new token:
    the old token is stale for fenced writes from then on. Same deadline, task and meta;
    recorded as a `transferred` event. `409 conflict` when `to_session` holds it already or it
    is a subtree lease."""
    return services.leases.transfer(me, a.key, a.token, a.to_session)


TRANSFER = LEASES.verb(
    "transfer", "POST /v1/leases/transfer", TransferIn, _transfer, LEASE, repeatable=never
)


def _force_release(services: Services, me: Principal, a: ForceReleaseIn) -> m.ForceReleaseResult:
    return services.leases.force_release(me, a.key, a.reason)


FORCE_RELEASE = LEASES.verb(
    "force_release", "POST /v1/leases/force-release", ForceReleaseIn, _force_release,
    FORCE_RELEASED, problems=(*ASKED, 403, 404), repeatable=never,
)  # fmt: skip


def _get_lease(services: Services, me: Principal, a: GetLeaseIn) -> Lease:
    """The latest lease on `key` (URL-encoded) with its `state`, live or not. A key that names
    a POST route (`acquire`, `release`, …) and was never leased: `405`."""
    return services.leases.get(a.key)


GET_LEASE = LEASES.verb(
    "get_lease", "GET /v1/leases/{key:path}", GetLeaseIn, _get_lease, LEASE, problems=READ_KEY
)


def _list_leases(services: Services, me: Principal, a: ListLeasesIn) -> Page[Lease]:
    """Live leases, by key; page with `after` set to the previous page's `next`. With `state`
    (`expired`, `released`, `all`), the leases that ended, each with its `state`.

    A page holds at most the server's page cap of leases (1,000 unless configured) and stops
    early once its JSON reaches the server's list budget: either way `truncated: true`, and
    `next` is the key to go on after."""
    # at most the page cap's leases, cut short once their JSON passes the list budget; the
    # next page starts after the last key sent
    page = min(a.limit, services.limits.leases_page)
    leases = services.leases.list(a.prefix, a.holder, a.task, page, a.after, a.state)
    sent = fitting(leases, Lease.to_dict, services.limits.list_bytes)
    full = page < a.limit and len(leases) >= page  # cut by the page cap
    if sent < len(leases) or full:
        return Page(leases[:sent], leases[sent - 1].key, True)
    return Page(leases)


LIST_LEASES = LEASES.verb(
    "list_leases", "GET /v1/leases", ListLeasesIn, _list_leases, LEASES_PAGE, problems=LISTED
)


def _fenced_write(services: Services, me: Principal, a: FencedWriteIn) -> m.FencedWrite:
    """Store `value` if `token` is the key's current token and you hold it.

    An older token is `409 stale_token` whoever sends it; the current token from anyone but
    its holder is `403 not_holder`. A repeated `op_id` under the same token answers the first
    write (`duplicate: true`); with another value, `409 idempotency_conflict`."""
    return services.leases.write(me, a.key, a.token, a.value, a.op_id)


FENCED_WRITE = FENCED.verb(
    "fenced_write", "POST /v1/fenced/write", FencedWriteIn, _fenced_write, WRITTEN,
    nulls=("value",), repeatable=_with_op_id,
)  # fmt: skip


def _fenced_read(services: Services, me: Principal, a: GetLeaseIn) -> m.FencedValue:
    """The last value accepted under `key`; `GET /v1/fenced/write` (never written): `405`."""
    return services.leases.read(a.key)


FENCED_READ = FENCED.verb(
    "fenced_read", "GET /v1/fenced/{key:path}", GetLeaseIn, _fenced_read, FENCED_VALUE,
    problems=READ_KEY,
)  # fmt: skip
