"""The one place that decides the word for a claim's or a lease's state, and the moment that goes
with it: every front (the API's views, the CLI, MCP, the dashboard) shows this word and renders
this moment; none of them decides a word of its own.

The words:

- ``live``: held; its moment is when it expires (in the future);
- ``stalled``: held, but no progress for the policy's ``stall_after``; ``since`` is the last
  progress (or the claim), its moment when it expires;
- ``lapsed``: the holder let the lease run out, nobody released or moved it (the moment it ran
  out, in the past);
- ``released``: its holder let it go;
- ``revoked``: an authority force-released it (or its principal was removed, or lost its last
  token): ``by`` and ``reason`` say who and why;
- ``reassigned``: the item moved to ``to`` after the claim (by ``by``, for ``reason``): the old
  claim is over, the new assignee has not claimed it yet;
- ``expired``: a lock's lease past its deadline;
- ``none``: no claim (never claimed, or the item is closed).

Pure: the facts and the instant come in as arguments.
"""

from __future__ import annotations

from tenure.core.models import KeyRecord, Lease
from tenure.core.text import format_duration
from tenure.core.work import CLOSED, PARKED, WORDS, Item, State, StateWord, Transfer

__all__ = ["WORDS", "State", "StateWord", "claim_state", "lease_word", "say"]
#: the words whose moment is ahead (when the lease expires); every other moment is past
AHEAD: tuple[str, ...] = ("live", "stalled")
#: how a lease ended (:attr:`KeyRecord.ended`) → its word
_ENDED = {
    "released": "released",
    "expired": "expired",
    "force_released": "revoked",
    "taken_over": "revoked",
}


NONE = State()


#: the transfer that makes each word (its moment, actor and note are the state's)
_MADE_BY = {"revoked": "force_released", "reassigned": "reassigned", "released": "released"}
#: the words whose moment (and who, why) only the item's latest transfer knows
MADE_BY_A_TRANSFER: tuple[str, ...] = tuple(_MADE_BY)


def _done(word: str, last: Transfer | None) -> State:
    """``word`` with the moment, actor and note of ``last`` when ``last`` is what made it."""
    if last is None or last.reason != _MADE_BY.get(word):
        return State(word)
    return State(word, last.at, last.actor, last.note, last.to if word == "reassigned" else None)


#: an item with no claim to speak of: finished, or parked until a person reopens it
_NO_CLAIM = (*CLOSED, PARKED)


def claim_state(
    item: Item,
    rec: KeyRecord | None,
    now: int,
    stall_ms: int,
    last: Transfer | None = None,
) -> State:
    """The state of ``item``'s claim at ``now``: ``rec`` is its key's record, ``last`` the
    item's latest transfer (it says when, by whom and why a claim was revoked, reassigned or
    released; without it those moments are unknown). A live claim without progress for
    ``stall_ms`` is stalled."""
    if rec is None or item.epoch == 0 or rec.token != item.epoch or item.status in _NO_CLAIM:
        return NONE
    if item.revoked and item.assignee:
        return _done("revoked", last)
    if rec.is_live(now):
        # Progress reported before this acquisition (by an earlier holder) does not count.
        since = max(rec.acquired_at, item.progress_at or 0)
        word = "stalled" if now - since > stall_ms else "live"
        return State(word, rec.expires_at, since=since if word == "stalled" else None)
    if last is not None and last.reason == "reassigned" and last.epoch == item.epoch:
        return _done("reassigned", last)
    if item.assignee is not None and item.assignee != rec.holder:
        return State("reassigned", to=item.assignee)
    if item.assignee is None:
        return _done("released", last) if last and last.reason == "released" else NONE
    # The holder's lease is gone and the item is still its assignee's, who claims it again
    # plainly: lapsed, when it ran out (a lease ended early has no moment of running out).
    return State("lapsed", rec.expires_at if rec.expires_at <= now else None)


def lease_word(lease: Lease) -> State:
    """The state of a lock's lease as it was read: ``live`` (its moment: when it expires),
    ``expired`` (when it did), ``released`` or ``revoked`` (force-released, taken over)."""
    if lease.state in ("live", "expired"):
        return State(lease.state, lease.expires_at)
    return State(_ENDED.get(lease.state, "none"))


def say(state: State, now: int) -> str:
    """The state in words, its time in its tense: ``live, expires in 27s``, ``lapsed 27s ago``,
    ``revoked 2m ago by alice: stuck``, ``reassigned 5s ago to bob by alice: rota``,
    ``stalled: no progress for 6m, expires in 20s``."""
    word = state.word
    if word in AHEAD:
        left = "" if state.at is None else f"expires {_tense(state.at, now)}"
        if word == "stalled" and state.since is not None:
            quiet = f"no progress for {format_duration(now - state.since)}"
            return f"stalled: {quiet}" + (f", {left}" if left else "")
        return f"{word}, {left}" if left else word
    if word == "none":
        return word
    parts = [word]
    if state.at is not None:
        parts.append(_tense(state.at, now))
    if state.to:
        parts.append(f"to {state.to}")
    if state.by:
        parts.append(f"by {state.by}")
    said = " ".join(parts)
    return f"{said}: {state.reason}" if state.reason else said


def _tense(at: int, now: int) -> str:
    """``in 27s``, ``27s ago`` or ``just now`` (less than a second ago)."""
    delta = at - now
    if delta > 0:
        return f"in {format_duration(delta)}"
    return "just now" if delta > -1000 else f"{format_duration(delta)} ago"
