"""Frozen models of the lease engine. Instants are integer epoch milliseconds (UTC)."""

from __future__ import annotations

from collections.abc import Iterable
from copy import deepcopy
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypedDict, cast

from tenure.core.frozen import quick_init
from tenure.core.record import Record

Ending = Literal["released", "expired", "force_released", "taken_over"]
LeaseListState = Literal["live", "expired", "released", "all"]
LEASE_LIST_STATES: tuple[LeaseListState, ...] = ("live", "expired", "released", "all")
ENDINGS: tuple[str, ...] = ("released", "expired", "force_released", "taken_over")
#: the events after which a key may be free: a lease ended, or an item's claim was given up
FREEING = frozenset((*ENDINGS, "released_item", "completed", "cancelled", "reassigned"))
LeaseState = Literal["live", "released", "expired", "force_released", "taken_over"]
#: what a lease grants: its key alone, or (on a key ending in ``/``) every key under it too
Scope = Literal["key", "subtree"]
SCOPES: tuple[str, ...] = ("key", "subtree")
Kind = Literal["human", "agent", "service"]
KINDS: tuple[str, ...] = ("human", "agent", "service")
ROLES: tuple[str, ...] = ("admin", "supervisor")


@quick_init
@dataclass(frozen=True)
class Principal:
    """An authenticated identity. The holder of a lease is always one of these."""

    name: str
    kind: Kind = "service"
    roles: tuple[str, ...] = ()
    parent: str | None = None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    @property
    def is_supervisor(self) -> bool:
        return "supervisor" in self.roles

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "roles": list(self.roles),
            "parent": self.parent,
        }

    @classmethod
    def from_wire(cls, data: Any) -> Principal:
        return cls(data["name"], data["kind"], tuple(data.get("roles") or ()), data.get("parent"))


@dataclass(frozen=True)
class IssuedToken:
    """A principal's new bearer token, shown once and never stored."""

    principal: Principal
    token_id: str
    token: str
    expires_at: int | None = None  # ms since the epoch; None: it never expires

    def to_dict(self) -> dict[str, Any]:
        return {
            "principal": self.principal.to_dict(),
            "token": self.token,
            "token_id": self.token_id,
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_wire(cls, data: Any) -> IssuedToken:
        principal = Principal.from_wire(data["principal"])
        return cls(principal, data["token_id"], data["token"], data.get("expires_at"))


#: what separates a semaphore's key from its slot's number in a slot key (``gpu#slot/1``)
SLOT_MARK = "#slot/"


def slot_of(key: str) -> tuple[str, int] | tuple[None, None]:
    """``(semaphore key, slot)`` of a slot key; ``(None, None)`` for any other key."""
    if SLOT_MARK not in key:
        return None, None
    base, _, number = key.rpartition(SLOT_MARK)
    if not base or not (number.isascii() and number.isdigit()):
        return None, None
    return base, int(number)


@quick_init
@dataclass(frozen=True)
class Lease:
    """A lease as callers see it, with its ``state`` at the instant it was read."""

    key: str
    holder: str
    task: str | None
    token: int
    ttl_ms: int
    acquired_at: int
    renewed_at: int
    expires_at: int
    renewals: int
    meta: dict[str, Any] = field(default_factory=dict)
    state: LeaseState = "live"
    session: str = ""
    scope: Scope = "key"
    #: a semaphore's slot lease: the semaphore's key (``gpu`` for ``gpu#slot/1``), the slot's
    #: number (as in its key) and the semaphore's number of slots; all ``None`` for a plain lease
    semaphore: str | None = None
    slot: int | None = None
    slots: int | None = None

    def to_dict(self) -> dict[str, Any]:
        # what asdict() gives (meta deep-copied), without its generic recursion: hot path
        return {
            "key": self.key,
            "holder": self.holder,
            "session": self.session,
            "task": self.task,
            "token": self.token,
            "ttl_ms": self.ttl_ms,
            "acquired_at": self.acquired_at,
            "renewed_at": self.renewed_at,
            "expires_at": self.expires_at,
            "renewals": self.renewals,
            "meta": deepcopy(self.meta) if self.meta else {},
            "state": self.state,
            "scope": self.scope,
            "semaphore": self.semaphore,
            "slot": self.slot,
            "slots": self.slots,
        }

    @classmethod
    def from_wire(cls, data: Any) -> Lease:
        """The lease of ``to_dict``'s JSON (a reply's ``lease``)."""
        return cls(
            data["key"], data["holder"], data["task"], data["token"], data["ttl_ms"],
            data["acquired_at"], data["renewed_at"], data["expires_at"], data["renewals"],
            meta=dict(data.get("meta") or {}), state=data.get("state", "live"),
            session=data.get("session") or "", scope=data.get("scope") or "key",
            semaphore=data.get("semaphore"), slot=data.get("slot"), slots=data.get("slots"),
        )  # fmt: skip


@quick_init
@dataclass(frozen=True)
class KeyRecord:
    """Everything the store keeps for one key: its latest lease and the key's bookkeeping.

    The row outlives the lease, so ``token`` (the latest token issued for the key) only grows.
    ``ended`` is how the latest lease ended, ``None`` while nothing recorded its end.
    ``fence_open`` is false once a force-release revoked the latest token for fenced writes.
    ``session`` is the holder's session (one running process of the principal; ``""`` its
    default session): a lease is re-acquired (renewed) only by the same principal *and* session.
    ``scope`` is ``"subtree"`` when the lease (on a key ending in ``/``) holds every key under it.
    """

    key: str
    token: int
    holder: str
    task: str | None
    ttl_ms: int
    acquired_at: int
    renewed_at: int
    expires_at: int
    renewals: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    ended: Ending | None = None
    fence_open: bool = True
    conflicts: int = 0
    session: str = ""
    scope: Scope = "key"

    def is_live(self, now: int) -> bool:
        return self.ended is None and self.expires_at > now

    def state(self, now: int) -> LeaseState:
        if self.ended is not None:
            return self.ended
        return "live" if self.expires_at > now else "expired"

    def lease(self, now: int) -> Lease:
        return Lease(
            self.key,
            self.holder,
            self.task,
            self.token,
            self.ttl_ms,
            self.acquired_at,
            self.renewed_at,
            self.expires_at,
            self.renewals,
            dict(self.meta),
            self.state(now),
            self.session,
            self.scope,
            *slot_of(self.key),
        )

    def update(self, **changes: Any) -> KeyRecord:
        """``replace(self, **changes)``, without the frozen ``__init__`` (one
        ``object.__setattr__`` a field, 3.6 us a call): every write of a lease makes one."""
        if not changes.keys() <= _RECORD_FIELDS:
            return replace(self, **changes)  # its TypeError names the unknown field
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__, **changes)
        return new


_RECORD_FIELDS = frozenset(f.name for f in fields(KeyRecord))


@quick_init
@dataclass(frozen=True)
class EventDraft:
    """An event before the store gives it an ``id`` and an instant."""

    type: str
    key: str | None
    holder: str | None = None
    task: str | None = None
    token: int | None = None
    actor: str | None = None
    reason: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


def freed_keys(events: Iterable[EventDraft]) -> set[str]:
    """The keys that ``events`` may have freed (whoever waits on them may try again)."""
    return {e.key for e in events if e.key is not None and e.type in FREEING}


def principal_created(principal: Principal, actor: str | None) -> EventDraft:
    """``principal_created``: who made ``principal`` (``None``: on the database directly)."""
    data = {"kind": principal.kind, "roles": list(principal.roles), "parent": principal.parent}
    return EventDraft("principal_created", None, principal.name, actor=actor, data=data)


def token_event(
    kind: str, name: str, token_id: str, actor: str | None, reason: str | None = None
) -> EventDraft:
    """``token_issued`` or ``token_revoked`` for token ``token_id`` of principal ``name``."""
    return EventDraft(kind, None, name, actor=actor, reason=reason, data={"token_id": token_id})


@dataclass(frozen=True)
class Event(Record):
    """One append-only record of a state change. ``id`` grows with every event."""

    id: int
    at: int
    type: str
    key: str | None
    holder: str | None
    task: str | None
    token: int | None
    actor: str | None
    reason: str | None
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, data: Any) -> Event:
        return cls(
            data["id"], data["at"], data["type"], data.get("key"), data.get("holder"),
            data.get("task"), data.get("token"), data.get("actor"), data.get("reason"),
            dict(data.get("data") or {}),
        )  # fmt: skip


@dataclass(frozen=True)
class EventTally:
    """Event counts by kind up to event ``upto``; ``base``: they include the folded totals of
    pruned events (so they replace a running tally rather than add to it)."""

    upto: int
    counts: dict[str, int]
    base: bool


class EventWhere(TypedDict, total=False):
    """Which events a read of the log returns, every filter optional: those of ``key``, of
    ``item`` (short for the item's key), of ``holder``, of ``type``; at most ``limit`` (100 by
    default). The keyword arguments of ``events(...)`` on the service and both clients."""

    key: str | None
    item: str | None
    holder: str | None
    type: str | None
    limit: int


def event_where(where: dict[str, Any]) -> EventWhere:
    """``where`` as :class:`EventWhere`, checked: an unknown filter is a :class:`TypeError`, as
    an unknown keyword argument is (a misspelt filter must not read the whole log)."""
    unknown = sorted(set(where) - EventWhere.__annotations__.keys())
    if unknown:
        raise TypeError(f"events() got unexpected keyword arguments {unknown}")
    return cast(EventWhere, where)


@dataclass(frozen=True)
class EventQuery:
    after: int = 0
    key: str | None = None
    holder: str | None = None
    type: str | None = None
    token: int | None = None
    limit: int = 100
    #: only events with ids up to this one (a bounded window of the log); ``None``: no bound
    upto: int | None = None


@dataclass(frozen=True)
class LeaseQuery:
    """Which live leases a list reads, by key: keys starting with ``prefix``, held by
    ``holder``, for ``task`` (``None``: any), at most ``limit`` (``None``: no limit), the keys
    sorting after ``after``."""

    prefix: str | None = None
    holder: str | None = None
    task: str | None = None
    limit: int | None = None
    after: str | None = None
    #: ``live`` (the default), or the leases that ended: ``expired``, ``released`` (by a
    #: release, a force-release or a takeover), or ``all`` of them, live ones too
    state: LeaseListState = "live"


@dataclass(frozen=True)
class FencedValue(Record):
    """The fenced register of one key: the last accepted value and who wrote it."""

    key: str
    token: int
    value: Any
    version: int
    updated_at: int

    @classmethod
    def from_wire(cls, data: Any) -> FencedValue:
        return cls(data["key"], data["token"], data["value"], data["version"], data["updated_at"])


@dataclass(frozen=True)
class FencedWrite:
    key: str
    token: int
    value: Any
    version: int
    duplicate: bool = False
    #: who wrote it (kept with an op_id, so that only the writer may repeat it; not in the reply)
    writer: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "token": self.token,
            "value": self.value,
            "version": self.version,
            "duplicate": self.duplicate,
        }

    @classmethod
    def from_wire(cls, data: Any) -> FencedWrite:
        """The write of a reply (which does not name the writer)."""
        return cls(
            data["key"], data["token"], data["value"], data["version"], bool(data["duplicate"])
        )


@dataclass(frozen=True)
class ExtendResult:
    lease: Lease
    extended: bool
    capped: bool
    requested_until: int
    granted_until: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "lease": self.lease.to_dict(),
            "extended": self.extended,
            "capped": self.capped,
            "requested_until": self.requested_until,
            "granted_until": self.granted_until,
        }

    @classmethod
    def from_wire(cls, data: Any) -> ExtendResult:
        return cls(
            Lease.from_wire(data["lease"]),
            bool(data["extended"]),
            bool(data["capped"]),
            data["requested_until"],
            data["granted_until"],
        )


@dataclass(frozen=True)
class ReleaseResult:
    """``reason`` says why nothing was released: ``no_lease`` (none was ever granted on the
    key), ``ended`` (the lease is over: ``lease.state`` says how), ``stale_token`` (your lease
    lives on under a newer token: ``lease.token``); None when it was released."""

    released: bool
    lease: Lease | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        lease = self.lease and self.lease.to_dict()
        return {"released": self.released, "lease": lease, "reason": self.reason}

    @classmethod
    def from_wire(cls, data: Any) -> ReleaseResult:
        lease = data.get("lease")
        lease_out = None if lease is None else Lease.from_wire(lease)
        return cls(bool(data["released"]), lease_out, data.get("reason"))


@dataclass(frozen=True)
class ForceReleaseResult(Record):
    lease: Lease
    actor: str
    reason: str

    @classmethod
    def from_wire(cls, data: Any) -> ForceReleaseResult:
        return cls(Lease.from_wire(data["lease"]), data["actor"], data["reason"])


@dataclass(frozen=True)
class LostLease:
    key: str
    reason: str
    token: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "reason": self.reason, "token": self.token}

    @classmethod
    def from_wire(cls, data: Any) -> LostLease:
        return cls(data["key"], data["reason"], data.get("token"))


@dataclass(frozen=True)
class RenewAllResult:
    renewed: tuple[Lease, ...]
    lost: tuple[LostLease, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "renewed": [lease.to_dict() for lease in self.renewed],
            "lost": [x.to_dict() for x in self.lost],
        }

    @classmethod
    def from_wire(cls, data: Any) -> RenewAllResult:
        renewed = tuple(Lease.from_wire(x) for x in data["renewed"])
        return cls(renewed, tuple(LostLease.from_wire(x) for x in data["lost"]))


@dataclass(frozen=True)
class ReleaseAllResult:
    """What one ``release-all`` ended: every lease of the caller's (of one session) it released,
    by key."""

    released: tuple[Lease, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"released": [lease.to_dict() for lease in self.released]}

    @classmethod
    def from_wire(cls, data: Any) -> ReleaseAllResult:
        return cls(tuple(Lease.from_wire(x) for x in data["released"]))


@dataclass(frozen=True)
class TokenInfo(Record):
    """A token of a principal as listed: its id and times (ms), never its secret or hash."""

    token_id: str
    created_at: int
    expires_at: int | None
    revoked_at: int | None

    @classmethod
    def from_wire(cls, data: Any) -> TokenInfo:
        expires, revoked = data.get("expires_at"), data.get("revoked_at")
        return cls(data["token_id"], data["created_at"], expires, revoked)


@dataclass(frozen=True)
class PrincipalInfo:
    """A principal and its tokens (ids and times, oldest first; never a secret)."""

    principal: Principal
    tokens: tuple[TokenInfo, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal.to_dict(), "tokens": [t.to_dict() for t in self.tokens]}

    @classmethod
    def from_wire(cls, data: Any) -> PrincipalInfo:
        tokens = tuple(TokenInfo.from_wire(t) for t in data["tokens"])
        return cls(Principal.from_wire(data["principal"]), tokens)


@dataclass(frozen=True)
class RemovedPrincipal:
    """A principal that was removed, and the ids of the tokens that revoked."""

    principal: Principal
    revoked: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal.to_dict(), "revoked": list(self.revoked)}

    @classmethod
    def from_wire(cls, data: Any) -> RemovedPrincipal:
        return cls(Principal.from_wire(data["principal"]), tuple(data["revoked"]))
