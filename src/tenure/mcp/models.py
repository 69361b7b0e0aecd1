"""What the MCP tools return: pydantic models, so clients get ``structuredContent`` and each
tool an output schema. They mirror the REST replies (SPEC §4) field for field; instants are
epoch milliseconds (UTC). Each is built from the service's own models' ``to_dict()``. One
addition: ``briefing`` and ``queue`` carry ``advice``, a line of what to do per lapsed, revoked
or stalled claim (:mod:`tenure.mcp.advice`); each lease carries ``expires_in_ms`` beside
``expires_at``. :class:`FollowUpIn` is the one structured input (a completion's follow-ups),
with the REST API's field types."""

from __future__ import annotations

import time
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tenure.core.items import Item, ItemView
from tenure.core.models import (
    ExtendResult,
    ForceReleaseResult,
    Lease,
    Principal,
    ReleaseResult,
    RenewAllResult,
)
from tenure.mcp.advice import advice
from tenure.service.queue import Briefing, Claim, Completion, ItemRelease
from tenure.verbs import fields as wire

JSON_VALUE: dict[str, Any] = {"type": ["object", "array", "string", "number", "boolean", "null"]}


class Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PrincipalOut(Out):
    """An authenticated identity."""

    name: str
    kind: str
    roles: list[str]
    parent: str | None = None

    @classmethod
    def of(cls, principal: Principal) -> PrincipalOut:
        return cls.model_validate(principal.to_dict())


class WhoamiOut(PrincipalOut):
    """An authenticated identity and the session this connection acts in."""

    session: str = Field(
        description="this connection's session: the leases and claims it takes are held in "
        "it, and only its own tool calls renew them"
    )

    @classmethod
    def of_session(cls, principal: Principal, session: str) -> WhoamiOut:
        return cls.model_validate({**principal.to_dict(), "session": session})


class LeaseOut(Out):
    """A lease: ``token`` is its fencing token (an item's epoch), ``expires_at`` its deadline,
    ``holder`` and ``session`` who holds it (one running agent, process or connection)."""

    key: str
    holder: str
    session: str = Field(
        "", description="the holder's session (its MCP connection or process); '' the default"
    )
    task: str | None = None
    token: int
    ttl_ms: int
    acquired_at: int
    renewed_at: int
    expires_at: int
    expires_in_ms: int = Field(
        0, description="milliseconds left until expires_at when this reply was made (0: past)"
    )
    renewals: int
    meta: dict[str, Any] = Field(default_factory=dict)
    state: str = Field(description="live, released, expired, force_released or taken_over")

    @model_validator(mode="before")
    @classmethod
    def time_left(cls, data: Any) -> Any:
        """``expires_in_ms`` from ``expires_at`` and the wall clock, unless given."""
        if isinstance(data, dict) and "expires_in_ms" not in data:
            ends = data.get("expires_at")
            if isinstance(ends, int):
                return {**data, "expires_in_ms": max(0, ends - int(time.time() * 1000))}
        return data

    @classmethod
    def of(cls, lease: Lease) -> LeaseOut:
        return cls.model_validate(lease.to_dict())


class ItemOut(Out):
    """A unit of work in the shared queue."""

    id: str
    title: str
    body: str = ""
    status: str = Field(description="open, in_progress, blocked, done or cancelled")
    priority: int = Field(description="0 is the most urgent")
    labels: list[str] = Field(default_factory=list)
    parent: str | None = None
    assignee: str | None = None
    epoch: int = Field(description="the token of the item's latest claim; 0 if never claimed")
    progress: dict[str, Any] | None = None
    progress_at: int | None = None
    result: Any = Field(
        None, description="what completed it (any JSON)", json_schema_extra=JSON_VALUE
    )
    created_by: str = ""
    created_at: int = 0
    updated_at: int = 0
    revoked: bool = Field(
        False,
        description="its claim was force-released by an authority: nobody claims it again "
        "(not even its assignee) until it is reassigned",
    )

    @classmethod
    def of(cls, item: Item) -> ItemOut:
        return cls.model_validate(item.to_dict())


class TransferOut(Out):
    """One change of an item's owner or epoch, and why."""

    item: str
    from_: str | None = Field(None, alias="from")
    to: str | None = None
    epoch: int
    reason: str
    actor: str
    at: int
    note: str | None = None


LEASE_STATE = (
    "live; stalled (live, no progress for a while); lapsed (the lease ran out: its assignee "
    "claims it again to go on); revoked (force-released by an authority: do not claim it "
    "again, ask or wait for a reassign); none"
)
ADVICE = "what to do about each lapsed, revoked or stalled claim listed, one line per item"


class ItemViewOut(Out):
    """An item with its lease and the lease's state: live, stalled, lapsed, revoked or none."""

    item: ItemOut
    lease: LeaseOut | None = None
    lease_state: str = Field(description=LEASE_STATE)
    transfers: list[TransferOut] = Field(default_factory=list)

    @classmethod
    def of(cls, view: ItemView) -> ItemViewOut:
        return cls.model_validate(view.to_dict())


class EventOut(Out):
    """One recorded state change."""

    id: int
    at: int
    type: str
    key: str | None = None
    holder: str | None = None
    task: str | None = None
    token: int | None = None
    actor: str | None = None
    reason: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class BriefingOut(Out):
    """What you carry, what is no longer live (lapsed or revoked), what stalled, what happened
    to your work since your last briefing, the top of the ready queue, and what to do."""

    principal: str
    carrying: list[ItemViewOut] = Field(description="live claims of yours and your agents'")
    lapsed: list[ItemViewOut] = Field(
        description="claims of yours and your agents' that are no longer live: lease_state "
        "lapsed (its assignee claims it again to go on) or revoked (force-released: do NOT "
        "claim it again)"
    )
    happened: list[EventOut]
    ready: list[ItemOut]
    stalled: list[ItemViewOut] = Field(
        default_factory=list,
        description="live claims of yours and your agents' with no progress for a while",
    )
    advice: list[str] = Field(default_factory=list, description=ADVICE)

    @classmethod
    def of(cls, briefing: Briefing) -> BriefingOut:
        views = (*briefing.lapsed, *briefing.stalled)
        lines = advice(views, briefing.principal)
        return cls.model_validate({**briefing.to_dict(), "advice": lines})


class ItemsOut(Out):
    items: list[ItemOut]

    @classmethod
    def of(cls, items: list[Item]) -> ItemsOut:
        return cls(items=[ItemOut.of(x) for x in items])


class QueueOut(Out):
    items: list[ItemViewOut]
    advice: list[str] = Field(default_factory=list, description=ADVICE)

    @classmethod
    def of(cls, views: list[ItemView]) -> QueueOut:
        return cls(items=[ItemViewOut.of(x) for x in views], advice=advice(views))


class ItemReplyOut(Out):
    item: ItemOut

    @classmethod
    def of(cls, item: Item) -> ItemReplyOut:
        return cls(item=ItemOut.of(item))


class ClaimOut(Out):
    """A claim: ``epoch`` (the lease's token) is what progress and complete must send."""

    item: ItemOut
    lease: LeaseOut
    epoch: int

    @classmethod
    def of(cls, claim: Claim) -> ClaimOut:
        return cls(
            item=ItemOut.of(claim.item), lease=LeaseOut.of(claim.lease), epoch=claim.lease.token
        )


class LeaseReplyOut(Out):
    lease: LeaseOut

    @classmethod
    def of(cls, lease: Lease) -> LeaseReplyOut:
        return cls(lease=LeaseOut.of(lease))


class ExtendOut(Out):
    """``capped``: the deadline asked for was past the deployment's maximum and was cut."""

    lease: LeaseOut
    extended: bool
    capped: bool
    requested_until: int
    granted_until: int

    @classmethod
    def of(cls, result: ExtendResult) -> ExtendOut:
        return cls.model_validate(result.to_dict())


class ItemReleaseOut(Out):
    released: bool = Field(description="false when you held no live claim on it (idempotent)")
    item: ItemOut

    @classmethod
    def of(cls, result: ItemRelease) -> ItemReleaseOut:
        return cls.model_validate(result.to_dict())


class CompletionOut(Out):
    item: ItemOut
    duplicate: bool = Field(description="true when this op_id was completed before")
    follow_ups: list[ItemOut] = Field(
        default_factory=list,
        description="the items this completion created under the item (open, unassigned)",
    )

    @classmethod
    def of(cls, done: Completion) -> CompletionOut:
        return cls.model_validate(done.to_dict())


class ReleaseOut(Out):
    released: bool = Field(description="false when you held no live lease on it (idempotent)")
    lease: LeaseOut | None = None

    @classmethod
    def of(cls, result: ReleaseResult) -> ReleaseOut:
        return cls.model_validate(result.to_dict())


class LeasesOut(Out):
    leases: list[LeaseOut]

    @classmethod
    def of(cls, leases: list[Lease]) -> LeasesOut:
        return cls(leases=[LeaseOut.of(x) for x in leases])


class ForceReleaseOut(Out):
    """The lease that was ended; ``item`` when it was an item's claim."""

    lease: LeaseOut
    item: ItemOut | None = None

    @classmethod
    def of(cls, result: ForceReleaseResult | Claim) -> ForceReleaseOut:
        if isinstance(result, Claim):
            return cls(lease=LeaseOut.of(result.lease), item=ItemOut.of(result.item))
        return cls(lease=LeaseOut.of(result.lease))


class LostOut(Out):
    key: str
    reason: str
    token: int | None = None


class HeartbeatOut(Out):
    """Your leases renewed for their own ttl, and those that were gone (with why)."""

    renewed: list[LeaseOut]
    lost: list[LostOut]

    @classmethod
    def of(cls, result: RenewAllResult) -> HeartbeatOut:
        return cls.model_validate(result.to_dict())


class FollowUpIn(Out):
    """An item to create under the one being completed, with the completion."""

    model_config = ConfigDict(extra="forbid", strict=True)

    title: Annotated[wire.Title, Field(description="one line saying what is to be done")]
    body: Annotated[wire.ItemBody | None, Field(description="details, in Markdown")] = None
    priority: Annotated[wire.Priority | None, Field(description="0 most urgent; default 2")] = None
    labels: Annotated[wire.Labels | None, Field(description="labels, e.g. area/auth")] = None
    id: Annotated[wire.ItemId | None, Field(description="an id of your choice (default it-…)")] = (
        None
    )

    def fields(self) -> dict[str, Any]:
        """The fields given, as the service takes them."""
        return self.model_dump(exclude_none=True)
