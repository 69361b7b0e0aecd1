"""Pure decision functions: given what the store holds for a key and the instant, decide.

Each function returns a :class:`Decision`: the record to save (``None`` when nothing changed),
the events to append in the same transaction, the result, and the error to raise *after*
committing (a conflict is counted and recorded even though the caller gets an error).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tenure.core.frozen import quick_init
from tenure.core.models import (
    EventDraft,
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    KeyRecord,
    Lease,
    Principal,
    ReleaseResult,
    Scope,
)
from tenure.core.subtree import blocking
from tenure.core.subtree_tokens import GrantAbove, current_above
from tenure.core.work import ITEM_PREFIX
from tenure.errors import (
    Conflict,
    Forbidden,
    IdempotencyConflict,
    LeaseHeld,
    LeaseLost,
    NotFound,
    NotHolder,
    StaleToken,
    TenureError,
)

#: the ``reason`` of the ``released`` event of a grant whose waiting client had gone (it
#: disconnected before the reply reached it): the server ends that lease at once
WAITER_GONE = "waiter_gone"


@quick_init
@dataclass(frozen=True)
class Decision:
    record: KeyRecord | None
    events: tuple[EventDraft, ...] = ()
    result: Any = None
    error: TenureError | None = None

    def raise_or_result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


def settle(rec: KeyRecord | None, now: int) -> tuple[KeyRecord | None, tuple[EventDraft, ...]]:
    """Record the end of a lease whose deadline passed and that nobody recorded yet."""
    if rec is None or rec.ended is not None or rec.expires_at > now:
        return rec, ()
    done = rec.update(ended="expired")
    return done, (ending_event(rec, "expired", now),)


def ending_event(
    rec: KeyRecord, ending: str, now: int, actor: str | None = None, reason: str | None = None
) -> EventDraft:
    """The one event that ends ``rec``, with how long it was held (``held_ms``).

    A lease that lapsed was held until its deadline, whenever its end is recorded.
    """
    held = max(0, min(now, rec.expires_at) - rec.acquired_at)
    data: dict[str, Any] = {"held_ms": held}
    if ending in ("expired", "taken_over"):
        data["deadline"] = rec.expires_at
    if rec.session:
        data["session"] = rec.session
    return EventDraft(ending, rec.key, rec.holder, rec.task, rec.token, actor, reason, data)


def conflict_event(rec: KeyRecord, key: str, who: Principal, data: dict[str, Any]) -> EventDraft:
    """``conflict``: ``who`` was refused ``key``, held under ``rec``."""
    return EventDraft("conflict", key, rec.holder, rec.task, rec.token, actor=who.name, data=data)


def reaped_event(row: Sequence[Any]) -> EventDraft:
    """The ``expired`` event of a reaped row.

    ``row``: ``(key, token, holder, task, expires_at, acquired_at, session)``.
    """
    key, token, holder, task, expires_at, acquired_at, session = row
    data: dict[str, Any] = {"held_ms": max(0, expires_at - acquired_at), "deadline": expires_at}
    if session:
        data["session"] = session
    return EventDraft("expired", key, holder, task, token, data=data)


def _changed(before: KeyRecord | None, after: KeyRecord | None) -> KeyRecord | None:
    return None if after is before else after


def held_by(rec: KeyRecord) -> str:
    """``'jo'``, or ``'jo' (session 'web-2')`` for a session other than the default."""
    return f"{rec.holder!r}" + (f" (session {rec.session!r})" if rec.session else "")


def _not_holder(rec: KeyRecord) -> NotHolder:
    return NotHolder(
        f"{rec.key!r} is held by {held_by(rec)}",
        key=rec.key,
        holder=rec.holder,
        session=rec.session,
        task=rec.task,
        expires_at=rec.expires_at,
    )


def _renewed(rec: KeyRecord, now: int, ttl_ms: int, **changes: Any) -> KeyRecord:
    # Nothing shortens a lease: a renewal after an extend keeps the later deadline.
    return rec.update(
        renewed_at=now,
        ttl_ms=ttl_ms,
        renewals=rec.renewals + 1,
        expires_at=max(rec.expires_at, now + ttl_ms),
        **changes,
    )


def decide_acquire(
    before: KeyRecord | None,
    key: str,
    who: Principal,
    ttl_ms: int,
    task: str | None,
    meta: dict[str, Any] | None,
    now: int,
    session: str = "",
    floor: int = 0,
    scope: Scope = "key",
    nearby: Sequence[KeyRecord] = (),
) -> Decision:
    """Grant ``key`` (with ``scope``) to ``who``'s ``session``; the same principal and session
    renews its own live lease (same token, the scope asked); anyone else, another session of
    ``who`` included, is refused, and so is a lease on another key that conflicts through a
    subtree (``nearby``: the store's candidates, see :func:`tenure.core.subtree.blocking`). A
    new token is above the key's last one and above the token ``floor``."""
    rec, events = settle(before, now)
    mine = rec is not None and rec.holder == who.name and rec.session == session
    if rec is not None and rec.is_live(now) and not mine:
        held = rec.update(conflicts=rec.conflicts + 1)
        return _refused(held, rec, key, who, task, session, events)
    blocker = blocking(key, scope, who.name, session, nearby, now) if nearby else None
    if blocker is not None:
        return _refused(_changed(before, rec), blocker, key, who, task, session, events)
    if rec is not None and rec.is_live(now) and not _widens(rec, scope, floor):
        changes: dict[str, Any] = {"scope": scope} if scope != rec.scope else {}
        if task is not None:
            changes["task"] = task
        if meta is not None:
            changes["meta"] = meta
        renewed = _renewed(rec, now, ttl_ms, **changes)
        return Decision(renewed, events, renewed.lease(now))
    fresh = KeyRecord(
        key=key,
        token=max(rec.token if rec else 0, floor) + 1,
        holder=who.name,
        task=task,
        ttl_ms=ttl_ms,
        acquired_at=now,
        renewed_at=now,
        expires_at=now + ttl_ms,
        meta=meta or {},
        conflicts=rec.conflicts if rec else 0,
        session=session,
        scope=scope,
    )
    data: dict[str, Any] = {"ttl_ms": ttl_ms, "session": session} if session else {"ttl_ms": ttl_ms}
    if scope != "key":
        data["scope"] = scope
    acquired = EventDraft("acquired", key, who.name, task, fresh.token, actor=who.name, data=data)
    if rec is not None and rec.is_live(now):  # widened with a new token: the old one ends here
        events = (*events, ending_event(rec, "released", now, actor=who.name, reason=WIDENED))
    return Decision(fresh, (*events, acquired), fresh.lease(now))


#: the reason of the ``released`` event of a lease widened to a subtree with a new token
WIDENED = "widened to a subtree lease with a new token"


def _widens(rec: KeyRecord, scope: Scope, floor: int) -> bool:
    """A live lease widened to a subtree whose token is not above every token under it (and
    the floor, ``floor``): it gets a new token, so that the subtree's orders the keys under
    it (:mod:`tenure.core.subtree_tokens`)."""
    return scope == "subtree" and rec.scope != "subtree" and floor >= rec.token


def _refused(
    record: KeyRecord | None,
    held: KeyRecord,
    key: str,
    who: Principal,
    task: str | None,
    session: str,
    events: tuple[EventDraft, ...],
) -> Decision:
    """``key`` is refused to ``who``: ``held`` (the key's own lease, or one that conflicts
    through a subtree) blocks it. ``record``: the key's record to save, if it changed."""
    wanted: dict[str, Any] = {
        "wanted_task": task,
        **({"wanted_session": session} if session else {}),
    }
    if held.key != key:
        wanted["held_key"] = held.key
    conflict = conflict_event(held, key, who, wanted)
    where = "" if held.key == key else f" through {held.key!r} ({held.scope})"
    error = lease_held(f"{key!r} is held{where} by {held_by(held)}", key, held)
    return Decision(record, (*events, conflict), None, error)


def lease_held(message: str, key: str, held: KeyRecord, **more: Any) -> LeaseHeld:
    """``key`` refused because ``held``'s lease holds it (its own, or one that conflicts
    through a subtree or a semaphore's slots): the refusal names that lease."""
    return LeaseHeld(
        message,
        key=key,
        holder=held.holder,
        session=held.session,
        task=held.task,
        expires_at=held.expires_at,
        token=held.token,
        held_key=held.key,
        scope=held.scope,
        **more,
    )


def _check_own(
    rec: KeyRecord | None, key: str, who: Principal, token: int, now: int
) -> TenureError | None:
    """Why ``who`` may not touch the lease ``token`` on ``key`` right now, if it may not."""
    if rec is None:
        return NotFound(f"no lease was ever granted on {key!r}", key=key, what="lease")
    if token > rec.token:
        return StaleToken(
            f"token {token} was never issued for {key!r}",
            key=key,
            token=token,
            current_token=rec.token,
        )
    if token < rec.token:
        # An older lease of the key; the service looks up how it ended.
        return LeaseLost(
            f"the lease with token {token} on {key!r} is gone", key=key, reason=None, token=token
        )
    if rec.is_live(now) and rec.holder != who.name:
        return _not_holder(rec)
    if not rec.is_live(now):
        return LeaseLost(
            f"the lease on {key!r} is gone ({rec.ended})", key=key, reason=rec.ended, token=token
        )
    return None


def decide_renew(
    before: KeyRecord | None, key: str, who: Principal, token: int, ttl_ms: int | None, now: int
) -> Decision:
    rec, events = settle(before, now)
    error = _check_own(rec, key, who, token, now)
    if error is not None or rec is None:
        return Decision(_changed(before, rec), events, None, error)
    renewed = _renewed(rec, now, ttl_ms or rec.ttl_ms)
    return Decision(renewed, events, renewed.lease(now))


def decide_extend(
    before: KeyRecord | None,
    key: str,
    who: Principal,
    token: int,
    requested_until: int,
    max_lease: int,
    now: int,
) -> Decision:
    rec, events = settle(before, now)
    error = _check_own(rec, key, who, token, now)
    if error is not None or rec is None:
        return Decision(_changed(before, rec), events, None, error)
    cap = now + max_lease
    granted = min(requested_until, cap)
    capped = requested_until > cap
    if granted <= rec.expires_at:
        result = ExtendResult(rec.lease(now), False, capped, requested_until, rec.expires_at)
        return Decision(_changed(before, rec), events, result)
    extended = rec.update(expires_at=granted)
    event = EventDraft(
        "extended",
        key,
        rec.holder,
        rec.task,
        rec.token,
        actor=who.name,
        data={"requested_until": requested_until, "granted_until": granted, "capped": capped},
    )
    result = ExtendResult(extended.lease(now), True, capped, requested_until, granted)
    return Decision(extended, (*events, event), result)


def decide_release(
    before: KeyRecord | None,
    key: str,
    who: Principal,
    token: int | None,
    now: int,
    session: str = "",
    reason: str | None = None,
) -> Decision:
    """End ``who``'s live lease. With ``token``: the lease of that token, from any session of
    ``who`` (an older token releases nothing). Without: only ``session``'s own lease; another
    session's lease of ``who`` is refused like a stranger's. ``reason`` goes on the
    ``released`` event (:data:`WAITER_GONE`: a grant whose waiter had left)."""
    rec, events = settle(before, now)
    if rec is None:
        return Decision(None, (), ReleaseResult(False, None, "no_lease"))
    if not rec.is_live(now) or (rec.holder == who.name and token not in (None, rec.token)):
        why = "stale_token" if rec.is_live(now) else "ended"
        return Decision(_changed(before, rec), events, ReleaseResult(False, rec.lease(now), why))
    if rec.holder != who.name or (token is None and rec.session != session):
        return Decision(_changed(before, rec), events, None, _not_holder(rec))
    done = rec.update(ended="released")
    event = ending_event(rec, "released", now, actor=who.name, reason=reason)
    return Decision(done, (*events, event), ReleaseResult(True, done.lease(now)))


def releases_of(
    leases: Sequence[Lease], who: Principal, session: str | None
) -> list[tuple[str, int]]:
    """The leases a ``release-all`` of ``who`` ends, as (key, token): its own live leases, only
    ``session``'s when given (``None``: every session's), never an item's claim (an item is
    released through its own verbs, which keep its assignment and history)."""
    return [
        (lease.key, lease.token)
        for lease in leases
        if lease.holder == who.name
        and lease.state == "live"
        and session in (None, lease.session)
        and not lease.key.startswith(ITEM_PREFIX)
    ]


def decide_transfer(
    before: KeyRecord | None,
    key: str,
    who: Principal,
    token: int,
    to_session: str,
    now: int,
    floor: int = 0,
    nearby: Sequence[KeyRecord] = (),
) -> Decision:
    """Hand ``who``'s live lease ``token`` on ``key`` (from any session of ``who``) to
    ``who``'s session ``to_session``, under a new token above the key's last one and the
    token ``floor``: the old session's token is dead for fenced writes from then on, as if it
    had released and the new session acquired, with no instant between. Same deadline, task
    and meta. Refused: not ``who``'s, gone, a subtree lease, the session holding it already,
    or a subtree lease above (``nearby``) that would refuse ``to_session`` the key."""
    rec, events = settle(before, now)
    error = _check_own(rec, key, who, token, now)
    if error is None and rec is not None:
        error = _untransferable(rec, to_session)
    if error is not None or rec is None:
        return Decision(_changed(before, rec), events, None, error)
    blocker = blocking(key, "key", who.name, to_session, nearby, now) if nearby else None
    if blocker is not None:
        return _refused(_changed(before, rec), blocker, key, who, rec.task, to_session, events)
    moved = rec.update(token=max(rec.token, floor) + 1, session=to_session, acquired_at=now)
    data = {"from_session": rec.session, "to_session": to_session, "from_token": rec.token}
    event = EventDraft("transferred", key, who.name, rec.task, moved.token, who.name, data=data)
    return Decision(moved, (*events, event), moved.lease(now))


def _untransferable(rec: KeyRecord, to_session: str) -> TenureError | None:
    """Why the live lease ``rec`` of its holder cannot go to ``to_session``, if it cannot."""
    if rec.session == to_session:
        return Conflict(
            f"{rec.key!r} is held by session {to_session!r} already",
            key=rec.key,
            field="to_session",
        )
    if rec.scope == "subtree":
        return Conflict(
            f"{rec.key!r} is a subtree lease, which is not transferred: release it and "
            "acquire it from the other session",
            key=rec.key,
            field="key",
        )
    return None


def may_force_release(
    actor: Principal, holder: Principal | None, holder_ancestors: tuple[str, ...]
) -> bool:
    """Admins always; supervisors over non-admins; any ancestor of the holder."""
    if actor.is_admin:
        return True
    holder_is_admin = holder is not None and holder.is_admin
    if actor.is_supervisor and not holder_is_admin:
        return True
    return actor.name in holder_ancestors


def may_not(actor: Principal, act: str, key: str, reason: str) -> Forbidden:
    """``403 forbidden``: ``actor`` has no authority for ``act`` (an authority's act: a
    force-release, a cancel, a reassign, a reopen) on ``key``."""
    return Forbidden(f"{actor.name!r} may not {act}", key=key, actor=actor.name, reason=reason)


def decide_force_release(
    before: KeyRecord | None, key: str, actor: Principal, reason: str, allowed: bool, now: int
) -> Decision:
    rec, events = settle(before, now)
    if rec is None or not rec.is_live(now):
        error: TenureError = NotFound(f"no live lease on {key!r}", key=key, what="live lease")
        return Decision(_changed(before, rec), events, None, error)
    if not allowed:
        error = may_not(actor, f"force-release a lease of {rec.holder!r}", key, reason)
        return Decision(_changed(before, rec), events, None, error)
    done = rec.update(ended="force_released", fence_open=False)
    event = ending_event(rec, "force_released", now, actor=actor.name, reason=reason)
    return Decision(done, (*events, event), ForceReleaseResult(done.lease(now), actor.name, reason))


def decide_write(
    before: KeyRecord | None,
    register: FencedValue | None,
    duplicate: FencedWrite | None,
    key: str,
    who: Principal,
    token: int,
    value: Any,
    now: int,
    op_id: str | None = None,
    above: GrantAbove | None = None,
) -> Decision:
    """A fenced write: accepted only from the holder of the key's current token, with that
    token, whatever the clock says. ``above``: the latest token granted to a subtree lease
    above the key; when it is newer than the key's own, it is the key's current token, which
    only the holder of that subtree lease may write with.

    ``duplicate``: the write this ``op_id`` already named under this ``token``, if any. The
    same write again answers the first result; another value under it is refused."""
    if duplicate is not None:
        error = _check_duplicate(duplicate, key, who, token, value, op_id)
        return Decision(None, (), None if error else duplicate, error)
    rec, events = settle(before, now)
    grant = current_above(rec, above)
    if grant is not None:  # a subtree lease above was granted since: its token is current
        return _tree_write(_changed(before, rec), events, grant, register, key, who, token, value)
    if rec is None or token != rec.token or not rec.fence_open:
        current = rec.token if rec else None
        why = "was revoked by a force-release" if rec and token == rec.token else "is stale"
        error = StaleToken(
            f"token {token} {why} for {key!r}", key=key, token=token, current_token=current
        )
        return Decision(_changed(before, rec), events, None, error)
    if rec.holder != who.name:
        return Decision(_changed(before, rec), events, None, _not_holder(rec))
    version = (register.version if register else 0) + 1
    event = EventDraft(
        "written", key, rec.holder, rec.task, token, actor=who.name, data={"version": version}
    )
    result = FencedWrite(key, token, value, version, writer=who.name)
    return Decision(_changed(before, rec), (*events, event), result)


def _tree_write(
    record: KeyRecord | None,
    events: tuple[EventDraft, ...],
    grant: GrantAbove,
    register: FencedValue | None,
    key: str,
    who: Principal,
    token: int,
    value: Any,
) -> Decision:
    """A fenced write on ``key`` whose current token is the subtree grant ``grant`` above."""
    lease = grant.holds()
    if token != grant.token or lease is None:
        why = "was revoked by a force-release" if token == grant.token else "is stale"
        error = StaleToken(
            f"token {token} {why} for {key!r} (a subtree lease above it has token {grant.token})",
            key=key,
            token=token,
            current_token=grant.token,
        )
        return Decision(record, events, None, error)
    if lease.holder != who.name:
        return Decision(record, events, None, _not_holder(lease))
    version = (register.version if register else 0) + 1
    data = {"version": version, "subtree": lease.key}
    event = EventDraft("written", key, lease.holder, lease.task, token, actor=who.name, data=data)
    result = FencedWrite(key, token, value, version, writer=who.name)
    return Decision(record, (*events, event), result)


def _canonical(value: Any) -> str:
    """Equal JSON values give equal text (``1`` and ``true`` do not, as Python's ``==`` says)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check_duplicate(
    first: FencedWrite, key: str, who: Principal, token: int, value: Any, op_id: str | None
) -> TenureError | None:
    """Why a repeated ``op_id`` under ``token`` is not simply the first write again."""
    if first.writer is not None and first.writer != who.name:
        return NotHolder(
            f"token {token} of {key!r} was written by {first.writer!r}",
            key=key,
            holder=first.writer,
        )
    if _canonical(first.value) != _canonical(value):
        return IdempotencyConflict(
            f"op_id {op_id!r} named another write under token {token} of {key!r} "
            f"(version {first.version}); an op_id names one intended write",
            key=key,
            op_id=op_id,
            token=token,
            version=first.version,
        )
    return None
