"""Semaphores: a key acquired with ``slots: N`` is held by up to N holders at once.

Each holder's lease is an ordinary lease on a slot key of its own, ``KEY#slot/I`` (I from 0 to
N - 1), so renewing, extending, releasing and fenced writes work on it exactly as on any lease,
by its own token. The semaphore's one token counter (the store's ``tenure_semaphores`` row of
``KEY``) gives every new slot lease its token, so the holders' tokens are distinct and only
grow across the semaphore. Pure: which slots are free, what a refusal says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import is_dataclass, replace
from typing import TypeVar

from tenure.core.decide import lease_held
from tenure.core.models import SLOT_MARK, KeyRecord, Lease, slot_of
from tenure.errors import InvalidRequest, LeaseHeld

__all__ = ["SLOT_MARK"]
T = TypeVar("T")
#: the most slots a semaphore may have
MAX_SLOTS = 1000


def slot_key(key: str, slot: int) -> str:
    """The key of slot ``slot`` of semaphore ``key``."""
    return f"{key}{SLOT_MARK}{slot}"


def slot_prefix(key: str) -> str:
    return key + SLOT_MARK


def semaphore_of(key: str) -> tuple[str, int] | None:
    """``(semaphore key, slot)`` of a slot key; ``None`` for any other key."""
    base, slot = slot_of(key)
    return None if base is None or slot is None else (base, slot)


def check_room(key: str, slots: int, max_bytes: int) -> None:
    """The semaphore's slot keys (``KEY#slot/I``) fit the bound on a key's size: a slot key
    longer than any key may be would be refused later, by every verb that reads it back."""
    size = len(key.encode("utf-8", "surrogatepass"))
    room = max_bytes - len(SLOT_MARK) - len(str(slots - 1))  # the suffix is ASCII
    if size > room:
        raise InvalidRequest(
            f"key is too long for a semaphore of {slots} slots: its slot keys "
            f"({key[:20]}…{SLOT_MARK}{slots - 1}) are up to {size + max_bytes - room} bytes, "
            f"more than {max_bytes}; a key of at most {room} bytes leaves room for them",
            field="key",
            maximum=room,
        )


def check_slots(slots: object) -> int:
    if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= MAX_SLOTS:
        raise InvalidRequest(
            f"slots must be an integer from 1 to {MAX_SLOTS}",
            field="slots",
            minimum=1,
            maximum=MAX_SLOTS,
        )
    return slots


def check_plain_key(key: str) -> None:
    """A slot key is granted through its semaphore only (its token comes from the
    semaphore's counter)."""
    found = semaphore_of(key)
    if found is not None:
        raise InvalidRequest(
            f"key: {key!r} is slot {found[1]} of semaphore {found[0]!r}: acquire "
            f"{found[0]!r} with slots instead",
            key=key,
            field="key",
        )


def free_slots(held: Sequence[KeyRecord], slots: int) -> list[int]:
    """The slots of ``0 .. slots - 1`` that no lease in ``held`` (the semaphore's live slot
    leases) holds, in order."""
    taken = {found[1] for r in held if (found := semaphore_of(r.key)) is not None}
    return [i for i in range(slots) if i not in taken]


def mine(held: Sequence[KeyRecord], holder: str, session: str) -> KeyRecord | None:
    """The slot lease of ``holder``'s ``session`` among ``held``, if it has one."""
    for rec in held:
        if rec.holder == holder and rec.session == session:
            return rec
    return None


def full(key: str, slots: int, held: Sequence[KeyRecord]) -> LeaseHeld:
    """Every slot of ``key`` is held: the refusal names the holders, and the lease that ends
    first (its key is ``held_key``, its deadline ``expires_at``)."""
    first = min(held, key=lambda r: r.expires_at)
    names = ", ".join(sorted({repr(r.holder) for r in held}))
    message = f"all {slots} slots of {key!r} are held (by {names}); the first ends at "
    holders = [r.holder for r in sorted(held, key=lambda r: r.key)]
    return lease_held(f"{message}{first.expires_at}", key, first, holders=holders, slots=slots)


def plainly_held(rec: KeyRecord) -> LeaseHeld:
    """A semaphore's key held by a plain lease: no slot is granted beside it."""
    message = f"{rec.key!r} is held by {rec.holder!r} as a plain lease, not as a semaphore"
    return lease_held(message, rec.key, rec)


def counted(result: T, slots: int | None) -> T:
    """``result`` (a lease, or a verb's result carrying one as ``lease``) with the slot lease's
    ``slots``: its semaphore's number of slots, which its key does not say."""
    if isinstance(result, Lease):
        return replace(result, slots=slots) if result.semaphore is not None else result
    lease = getattr(result, "lease", None)
    if isinstance(lease, Lease) and lease.semaphore is not None and is_dataclass(result):
        return replace(result, lease=replace(lease, slots=slots))  # type: ignore[type-var]
    return result
