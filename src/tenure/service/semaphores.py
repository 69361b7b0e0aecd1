"""Acquiring a semaphore (:mod:`tenure.core.semaphores`): a free slot's lease, one transaction
on that slot's key.

The service reads the semaphore's live slot leases, then tries its free slots one by one, each
in the slot key's own transaction: the pure :func:`~tenure.core.decide.decide_acquire` refuses a
slot taken meanwhile (the next one is tried), and a slot it grants takes its token from the
semaphore's counter in the same transaction (the counter's row lock orders the semaphore's
grants on PostgreSQL; SQLite's write lock orders every write). A session holding a slot
already renews it (same token), as a plain acquisition renews its own lease.
"""

from __future__ import annotations

import json
from typing import Any

from tenure.core import semaphores as s
from tenure.core.decide import Decision, decide_acquire
from tenure.core.models import Lease, LeaseQuery, Principal, slot_of
from tenure.core.subtree import upper_bound
from tenure.errors import LeaseHeld, SlotsMismatch
from tenure.service.engine import Engine
from tenure.service.token_floors import floor_for
from tenure.store.base import KeyTx, Store


def acquire_slot(
    engine: Engine,
    me: Principal,
    key: str,
    slots: int,
    lease: tuple[int, str | None, dict[str, Any] | None, str],
) -> Lease:
    """A slot of semaphore ``key`` (of ``slots`` slots) for ``me``; ``lease``: the checked
    ``(ttl_ms, task, meta, session)``."""
    s.check_plain_key(key)
    ttl, task, meta, sid = lease
    prefix = s.slot_prefix(key)
    now = engine.store.now_ms()
    plain = engine.store.get(key)
    if plain is not None and plain.is_live(now):
        raise s.plainly_held(plain)
    held = engine.store.live(now, LeaseQuery(prefix=prefix, limit=s.MAX_SLOTS + 1))
    own = s.mine(held, me.name, sid)
    candidates = [s.semaphore_of(own.key)[1]] if own else s.free_slots(held, slots)  # type: ignore[index]
    bounds = {"key": key, "slots": slots, "lo": prefix, "hi": upper_bound(prefix)}

    def decide_for(slot: str) -> Any:
        def decide(tx: KeyTx) -> Decision:
            rec = tx.record
            floor = 0
            if rec is None or not rec.is_live(tx.now):  # a grant: the semaphore's next token
                row = tx.read(
                    "semaphore_next",
                    {**bounds, "now": tx.now, "floor": max(floor_for(tx), rec.token if rec else 0)},
                )
                if row is None:
                    return Decision(None, error=_mismatch(tx, key, slots))
                floor = int(row[0]) - 1
            decision = decide_acquire(rec, slot, me, ttl, task, meta, tx.now, sid, floor)
            if decision.error is None:
                engine._bound_lease(tx, decision.record)
            return decision

        return decide

    for i in candidates:
        try:
            slot = s.slot_key(key, i)
            granted: Lease = engine._run(slot, decide_for(slot), create=True)
            return granted
        except LeaseHeld:
            continue  # taken meanwhile: the next free slot
    now = engine.store.now_ms()
    held = engine.store.live(now, LeaseQuery(prefix=prefix, limit=s.MAX_SLOTS + 1))
    if not held:  # every slot we tried was taken and has ended since: one more round
        return acquire_slot(engine, me, key, slots, lease)
    raise s.full(key, slots, held)


def transfer_floor(tx: KeyTx, floor: int) -> int:
    """The floor under the new token of slot lease ``tx.record`` being transferred: the slot
    stays the same, its new token is its semaphore's next (drawn in this transaction, as a
    grant's), so the semaphore's tokens stay distinct and growing."""
    rec = tx.record
    key, _ = slot_of(rec.key) if rec is not None else (None, None)
    if rec is None or key is None:
        return floor
    row = tx.read("semaphore_slots", {"key": key})
    prefix = s.slot_prefix(key)
    bounds = {"key": key, "lo": prefix, "hi": upper_bound(prefix), "now": tx.now}
    slots = int(row[0]) if row else 1
    drawn = tx.read("semaphore_next", {**bounds, "slots": slots, "floor": max(floor, rec.token)})
    return int(drawn[0]) - 1 if drawn else floor


def counted_leases(store: Store, leases: list[Lease]) -> list[Lease]:
    """``leases`` (a read's), each slot lease with its semaphore's number of slots."""
    keys = [x.semaphore for x in leases if x.semaphore is not None]
    if not keys:
        return leases
    slots = store.semaphore_slots(keys)
    return [x if x.semaphore is None else s.counted(x, slots.get(x.semaphore)) for x in leases]


def counted_json(store: Store, parts: list[bytes]) -> list[bytes]:
    """The renewed leases' JSON (``Store.renew_all_json``'s parts, which send the slot fields
    as null) with each slot lease's ``semaphore``, ``slot`` and ``slots``; read only when a
    renewed key may be a slot's."""
    if not any(s.SLOT_MARK.encode() in part for part in parts):
        return parts
    leases = json.loads(b"[" + b"".join(parts) + b"]")
    found = [slot_of(x["key"]) for x in leases]
    slots = store.semaphore_slots([sem for sem, _ in found if sem is not None])
    for lease, (sem, slot) in zip(leases, found, strict=True):
        if sem is not None:
            lease.update(semaphore=sem, slot=slot, slots=slots.get(sem))
    return [json.dumps(leases, separators=(",", ":"))[1:-1].encode()]


def _mismatch(tx: KeyTx, key: str, slots: int) -> SlotsMismatch:
    row = tx.read("semaphore_slots", {"key": key})
    current = int(row[0]) if row else None
    return SlotsMismatch(
        f"slots: {key!r} is a semaphore of {current} slots while it is held; acquire it with "
        f"slots {current} (asked: {slots})",
        key=key,
        field="slots",
        slots=current,
    )
