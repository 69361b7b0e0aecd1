"""What an agent should do about a claim that is not simply live, one line per item, for the
``advice`` of ``briefing`` and ``queue``: a lapsed claim is taken back by its assignee, a
revoked one is not claimed again by anyone (an authority stopped the work on purpose), and a
stalled one is reported on or looked after."""

from __future__ import annotations

from collections.abc import Iterable

from tenure.core.items import ItemView
from tenure.mcp.failures import REVOKED_STEP, since


def advise(view: ItemView, me: str | None = None) -> str | None:
    """The line for ``view`` (``None`` for a live claim or an item without one); ``me``, when
    known, is the caller: its own items say "you"."""
    item, state = view.item, view.lease_state
    if item.status == "parked":
        return (
            f"{item.id} is {item.parked_words()}: nobody may claim it. Tell the person who owns "
            "it; once the cause is fixed, they (or you, if it is yours) reopen it with "
            "reopen_item and a reason."
        )
    yours = me is not None and item.assignee == me
    whose = "your claim" if yours else f"the claim of {item.assignee}"
    if state == "revoked":
        return (
            f"{item.id} is revoked: an authority force-released {whose} and stopped this work "
            f"on purpose. {REVOKED_STEP}"
        )
    if state == "reassigned":
        how = view.state
        by = f" by {how.by}" if how.by else ""
        at = f" at {since(how.at)}" if how.at is not None else ""
        why = f" ({how.reason})" if how.reason else ""
        if yours:
            return (
                f"{item.id} was reassigned to you{by}{at}{why}: nobody holds its claim; claim "
                "it to start (no takeover needed)."
            )
        return f"{item.id} was reassigned to {item.assignee}{by}{at}{why}: it is theirs to claim."
    if state == "lapsed":
        at = f" at {since(view.lease.expires_at)}" if view.lease is not None else ""
        if yours:
            return (
                f"{item.id} lapsed{at}: it is assigned to you and nobody holds its claim (your "
                "lease ran out): claim it to go on (a new epoch)."
            )
        return (
            f"{item.id} lapsed{at}: {whose} ran out (it stopped). Its assignee claims it again to "
            "go on; anyone else only with takeover=true and a reason, or an authority "
            "reassigns it."
        )
    if state == "stalled" and view.lease is not None:
        quiet = since(max(view.lease.acquired_at, item.progress_at or 0))
        if yours:
            return (
                f"{item.id} is stalled: your claim is live but reported no progress since "
                f"{quiet}: report progress (tool progress) as you go, or release it if you "
                "are stuck."
            )
        return (
            f"{item.id} is stalled: {whose} is live but reported no progress since {quiet}: "
            "check on it; if it is stuck, its authority may force_release or reassign it."
        )
    return None


def advice(views: Iterable[ItemView], me: str | None = None) -> list[str]:
    """The lines for ``views``, each item once, in their order."""
    seen: set[str] = set()
    out: list[str] = []
    for view in views:
        line = advise(view, me)
        if line is not None and view.item.id not in seen:
            seen.add(view.item.id)
            out.append(line)
    return out
