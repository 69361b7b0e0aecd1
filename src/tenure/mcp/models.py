"""What the MCP tools return: pydantic models, so clients get ``structuredContent`` and each
tool an output schema. They mirror the REST replies (SPEC §4) field for field; instants are
epoch milliseconds (UTC). Each is built from the service's own models' ``to_dict()``. One
addition: ``briefing`` and ``queue`` carry ``advice``, a line of what to do per lapsed, revoked
or stalled claim (:mod:`tenure.mcp.claim_advice`); each lease carries ``expires_in_ms`` beside
``expires_at``. :class:`FollowUpIn` is the one structured input (a completion's follow-ups),
with the REST API's field types."""

from __future__ import annotations

import time
from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tenure.core.models import (
    Lease,
    Principal,
)
from tenure.core.states import say
from tenure.core.work import ItemView
from tenure.service.queue import Claim
from tenure.verbs import fields as wire
from tenure.verbs import item_replies as ir
from tenure.verbs import replies as r

JSON_VALUE: dict[str, Any] = {"type": ["object", "array", "string", "number", "boolean", "null"]}


class Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class Reply(Out):
    """A tool's reply, built from a core model's ``to_dict()`` (:meth:`of`)."""

    #: the field a reply wraps its model in (``{"item": …}``); none: the model's own fields
    wraps: ClassVar[str | None] = None

    @classmethod
    def of(cls, value: Any) -> Self:
        """The reply for ``value``, a core model with a ``to_dict()``."""
        data = value.to_dict()
        return cls.model_validate({cls.wraps: data} if cls.wraps else data)


class WhoamiOut(r.PrincipalOut):
    """An authenticated identity and the session this connection acts in."""

    session: str = Field(
        description="this connection's session: the leases and claims it takes are held in "
        "it, and only its own tool calls renew them"
    )

    @classmethod
    def of_session(cls, principal: Principal, session: str) -> WhoamiOut:
        return cls.model_validate({**principal.to_dict(), "session": session})


class LeaseOut(r.LeaseOut):
    """A lease as the REST API sends it: ``token`` is its fencing token (an item's epoch),
    ``expires_at`` its deadline, ``holder`` and ``session`` who holds it (one running agent,
    process or connection); and ``expires_in_ms``, the time left when the reply was made."""

    expires_in_ms: int = Field(
        0, description="milliseconds left until expires_at when this reply was made (0: past)"
    )

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


class ItemBase(Reply):
    """What every reply about an item says of it, a summary (:mod:`.summaries`) included."""

    id: str
    title: str
    status: str = Field(
        description="open, in_progress, blocked, done, cancelled or parked (its claims failed "
        "too often: a person reopens it with reopen_item)"
    )
    priority: int = Field(description="0 is the most urgent")
    labels: list[str] = Field(default_factory=list)
    parent: str | None = None
    assignee: str | None = None
    epoch: int = Field(description="the token of the item's latest claim; 0 if never claimed")
    progress: dict[str, Any] | None = None
    attempts: int = Field(0, description="its claims since it was created or last reopened")
    failures: list[dict[str, Any]] = Field(
        default_factory=list,
        description="its failed attempts (epoch, reason lapsed or command_exited, at, "
        "exit_status), oldest first",
    )


class ItemOut(ItemBase):
    """A unit of work in the shared queue."""

    body: str = ""
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
    exit_status: int | None = None  # a release noted command_exited: the command's status


LEASE_STATE = (
    "live; stalled (live, no progress for a while); lapsed (the lease ran out: its assignee "
    "claims it again to go on); revoked (force-released by an authority: do not claim it "
    "again, ask or wait for a reassign); reassigned (moved to its assignee since the claim: "
    "the assignee claims it, no takeover); released (its holder let it go); none"
)
STATE_WORDS = (
    "the state in words, its time in its tense: 'live, expires in 4m', 'lapsed 2m ago', "
    "'revoked 1m ago by sue: stuck', 'reassigned 5s ago to bob by sue: rota'"
)
ADVICE = "what to do about each lapsed, revoked or stalled claim listed, one line per item"


class ItemViewOut(Reply):
    """An item with its lease and the lease's state: live, stalled, lapsed, revoked,
    reassigned, released or none, with its moment (``state``) and in words."""

    item: ItemOut
    lease: LeaseOut | None = None
    lease_state: str = Field(description=LEASE_STATE)
    state: ir.StateOut = Field(description="the state's word with its moment, who and why")
    state_words: str = Field(description=STATE_WORDS)
    transfers: list[TransferOut] = Field(default_factory=list)

    @classmethod
    def of(cls, value: Any) -> Self:
        view: ItemView = value
        words = say(view.state, int(time.time() * 1000))
        return cls.model_validate({**view.to_dict(), "state_words": words})


EventOut = r.EventOut


class ItemReplyOut(Reply):
    wraps = "item"
    item: ItemOut


class ClaimOut(Reply):
    """A claim: ``epoch`` (the lease's token) is what progress and complete must send."""

    item: ItemOut
    lease: LeaseOut
    epoch: int

    @classmethod
    def of(cls, value: Any) -> Self:
        claim: Claim = value
        return cls.model_validate({**claim.to_dict(), "epoch": claim.lease.token})


class LeaseReplyOut(Reply):
    wraps = "lease"
    lease: LeaseOut


class ExtendOut(Reply):
    """``capped``: the deadline asked for was past the deployment's maximum and was cut."""

    lease: LeaseOut
    extended: bool
    capped: bool
    requested_until: int
    granted_until: int


class ItemReleaseOut(Reply):
    released: bool = Field(description="false when you held no live claim on it (idempotent)")
    item: ItemOut


class CompletionOut(Reply):
    item: ItemOut
    duplicate: bool = Field(description="true when this op_id was completed before")
    follow_ups: list[ItemOut] = Field(
        default_factory=list,
        description="the items this completion created under the item (open, unassigned)",
    )


class ReleaseOut(Reply):
    released: bool = Field(description="false when you held no live lease on it (idempotent)")
    lease: LeaseOut | None = None


class LeasesOut(Reply):
    leases: list[LeaseOut]

    @classmethod
    def of(cls, value: Any) -> Self:
        leases: list[Lease] = value
        return cls(leases=[LeaseOut.of(x) for x in leases])


class ForceReleaseOut(Reply):
    """The lease that was ended; ``item`` when it was an item's claim."""

    lease: LeaseOut
    item: ItemOut | None = None


class HeartbeatOut(Reply):
    """Your leases renewed for their own ttl, and those that were gone (with why)."""

    renewed: list[LeaseOut]
    lost: list[r.LostOut]


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
