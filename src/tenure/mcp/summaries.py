"""The compact models of the MCP tools that list items (``ready``, ``briefing``, ``queue``,
``list_items``): each item as a summary, without its body or result (``show_item`` has them),
so a list stays small whatever the items carry. Lapsed claims (work whose holder stopped) come
with who held them, since when, and how to take them over."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Self

from pydantic import Field

from tenure.core.claims import Briefing, ReadyView
from tenure.core.items import Item, ItemView
from tenure.core.states import say
from tenure.mcp import models as m
from tenure.mcp.claim_advice import advice
from tenure.verbs import item_replies as ir

BODY = "the length of its body in characters (show_item has the body)"


def iso(ms: int) -> str:
    """``2026-11-24T14:03:10Z``: an instant in epoch milliseconds, in UTC."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ItemSummaryOut(m.ItemBase):
    """An item in a list: everything but its body and result (tool show_item has them)."""

    revoked: bool = Field(False, description="its claim was force-released by an authority")
    updated_at: int = 0
    body_chars: int = Field(0, description=BODY)

    @classmethod
    def of(cls, value: Any) -> Self:
        item: Item = value
        chars = len(item.body) if item.body_chars is None else item.body_chars
        return cls.model_validate({**item.to_dict(), "body_chars": chars})


class ClaimSummaryOut(m.Out):
    """An item in a list with its lease and the lease's state (no transfers: see show_item)."""

    item: ItemSummaryOut
    lease: m.LeaseOut | None = None
    lease_state: str = Field(description=m.LEASE_STATE)
    state: ir.StateOut = Field(description="the state's word with its moment, who and why")
    state_words: str = Field(description=m.STATE_WORDS)

    @classmethod
    def of(cls, view: ItemView) -> ClaimSummaryOut:
        lease = None if view.lease is None else m.LeaseOut.of(view.lease)
        return cls(
            item=ItemSummaryOut.of(view.item),
            lease=lease,
            lease_state=view.lease_state,
            state=ir.StateOut.model_validate(view.state.to_dict()),
            state_words=say(view.state, int(time.time() * 1000)),
        )


def take_over(view: ItemView, me: str | None) -> str:
    """What to do about a lapsed claim, from the caller's side."""
    item, lease = view.item, view.lease
    assert lease is not None
    since = f"{item.id} lapsed at {iso(lease.expires_at)}: {lease.holder}'s claim ran out"
    if item.assignee == me:
        return f"{since}; it is yours: claim it (item_id={item.id}) to go on, no takeover."
    return (
        f"{since} and nobody works on it. To do it, claim it with item_id={item.id}, "
        "takeover=true and a reason (why you take it over, e.g. the holder stopped)."
    )


class LapsedOut(m.Out):
    """A claim that lapsed: its holder let the lease run out and nobody works on the item."""

    item: ItemSummaryOut
    holder: str = Field(description="who held the claim (still the assignee)")
    session: str = Field("", description="the holder's session")
    lapsed_at: int = Field(description="when the lease ran out, epoch milliseconds (UTC)")
    advice: str = Field(description="how to take it over")

    @classmethod
    def of(cls, view: ItemView, me: str | None) -> LapsedOut:
        lease = view.lease
        assert lease is not None
        return cls(
            item=ItemSummaryOut.of(view.item),
            holder=lease.holder,
            session=lease.session,
            lapsed_at=lease.expires_at,
            advice=take_over(view, me),
        )


LAPSED = (
    "claims that lapsed (the holder's lease ran out; nobody works on them), by priority: "
    "take one over with claim takeover=true and a reason (its assignee claims it plainly)"
)


def lapsed_of(views: Iterable[ItemView], me: str | None) -> list[LapsedOut]:
    return [LapsedOut.of(x, me) for x in views if x.lease is not None]


class ReadyOut(m.Out):
    """Open items nobody has, then the claims that lapsed."""

    items: list[ItemSummaryOut] = Field(description="open items nobody has, most urgent first")
    lapsed: list[LapsedOut] = Field(default_factory=list, description=LAPSED)

    @classmethod
    def of(cls, view: ReadyView, me: str | None = None) -> ReadyOut:
        items = [ItemSummaryOut.of(x) for x in view.items]
        return cls(items=items, lapsed=lapsed_of(view.lapsed, me))


class BriefingOut(m.Out):
    """What you carry, what is no longer live (lapsed or revoked), what stalled, what happened
    to your work since your last briefing, the top of the ready queue (open items, then
    others' lapsed claims), and what to do. Items are summaries: show_item has the body."""

    principal: str
    carrying: list[ClaimSummaryOut] = Field(description="live claims of yours and your agents'")
    lapsed: list[ClaimSummaryOut] = Field(
        description="claims of yours and your agents' (a supervisor's: of those it supervises) "
        "that are no longer live: lease_state lapsed (its assignee claims it again to go on), "
        "revoked (force-released: do NOT claim it again) or reassigned (moved to you since the "
        "claim: claim it, no takeover)"
    )
    happened: list[m.EventOut]
    ready: list[ItemSummaryOut]
    ready_lapsed: list[LapsedOut] = Field(default_factory=list, description=f"other {LAPSED}")
    stalled: list[ClaimSummaryOut] = Field(
        default_factory=list,
        description="live claims of yours and your agents' (a supervisor's: of those it "
        "supervises) with no progress for a while",
    )
    parked: list[ClaimSummaryOut] = Field(
        default_factory=list,
        description="items of yours and your agents' parked after their failed attempts: "
        "nobody claims them until a person reopens them (reopen_item)",
    )
    advice: list[str] = Field(default_factory=list, description=m.ADVICE)

    @classmethod
    def of(cls, briefing: Briefing, ready: ReadyView) -> BriefingOut:
        known = {x.item.id for x in (*briefing.lapsed, *briefing.carrying)}
        others = [x for x in ready.lapsed if x.item.id not in known]
        return cls(
            principal=briefing.principal,
            carrying=[ClaimSummaryOut.of(x) for x in briefing.carrying],
            lapsed=[ClaimSummaryOut.of(x) for x in briefing.lapsed],
            happened=[m.EventOut.model_validate(e.to_dict()) for e in briefing.happened],
            ready=[ItemSummaryOut.of(x) for x in briefing.ready],
            ready_lapsed=lapsed_of(others, briefing.principal),
            stalled=[ClaimSummaryOut.of(x) for x in briefing.stalled],
            parked=[ClaimSummaryOut.of(x) for x in briefing.parked],
            advice=advice(
                (*briefing.lapsed, *briefing.stalled, *briefing.parked), briefing.principal
            ),
        )


class QueueOut(m.Out):
    """Items assigned to a principal and its agents, with their lease state."""

    items: list[ClaimSummaryOut]
    advice: list[str] = Field(default_factory=list, description=m.ADVICE)

    @classmethod
    def of(cls, views: list[ItemView]) -> QueueOut:
        return cls(items=[ClaimSummaryOut.of(x) for x in views], advice=advice(views))


class ReopenOut(m.Out):
    """The item, open again with its attempts reset."""

    item: ItemSummaryOut

    @classmethod
    def of(cls, item: Item) -> ReopenOut:
        return cls(item=ItemSummaryOut.of(item))


class CancelOut(m.Out):
    """The item, now cancelled."""

    item: ItemSummaryOut

    @classmethod
    def of(cls, item: Item) -> CancelOut:
        return cls(item=ItemSummaryOut.of(item))


class ItemListOut(m.Out):
    """Items matching the filters, as summaries."""

    items: list[ItemSummaryOut]

    @classmethod
    def of(cls, items: list[Item]) -> ItemListOut:
        return cls(items=[ItemSummaryOut.of(x) for x in items])
