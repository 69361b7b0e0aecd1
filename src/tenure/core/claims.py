"""What the work queue's verbs return: a claim, a completion, a release, a dispatch, a
briefing. Plain frozen values with their wire form (``to_dict``: exactly what every front
sends) and ``from_wire`` (what a client reads back), shared by every front."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenure.core.models import Event, Lease, Principal
from tenure.core.work import Item, ItemView


def _items(data: Any) -> tuple[Item, ...]:
    return tuple(Item.from_wire(x) for x in data or ())


def _views(data: Any) -> tuple[ItemView, ...]:
    return tuple(ItemView.from_wire(x) for x in data or ())


@dataclass(frozen=True)
class Claim:
    item: Item
    lease: Lease

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item.to_dict(), "lease": self.lease.to_dict()}

    @classmethod
    def from_wire(cls, data: Any) -> Claim:
        return cls(Item.from_wire(data["item"]), Lease.from_wire(data["lease"]))


@dataclass(frozen=True)
class Completion:
    item: Item
    duplicate: bool = False
    follow_ups: tuple[Item, ...] = ()  # the items the completion created

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item.to_dict(),
            "duplicate": self.duplicate,
            "follow_ups": [f.to_dict() for f in self.follow_ups],
        }

    @classmethod
    def from_wire(cls, data: Any) -> Completion:
        item = Item.from_wire(data["item"])
        return cls(item, bool(data["duplicate"]), _items(data.get("follow_ups")))


@dataclass(frozen=True)
class ItemRelease:
    released: bool
    item: Item

    def to_dict(self) -> dict[str, Any]:
        return {"released": self.released, "item": self.item.to_dict()}

    @classmethod
    def from_wire(cls, data: Any) -> ItemRelease:
        return cls(bool(data["released"]), Item.from_wire(data["item"]))


@dataclass(frozen=True)
class Dispatch:
    """A dispatched agent's claim: the agent (a new principal) and its bearer ``token``."""

    item: Item
    lease: Lease
    agent: Principal
    token: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item.to_dict(),
            "lease": self.lease.to_dict(),
            "agent": {**self.agent.to_dict(), "token": self.token},
        }

    @classmethod
    def from_wire(cls, data: Any) -> Dispatch:
        agent = {"kind": "agent", **data["agent"]}
        return cls(
            Item.from_wire(data["item"]),
            Lease.from_wire(data["lease"]),
            Principal.from_wire(agent),
            agent["token"],
        )


@dataclass(frozen=True)
class Briefing:
    principal: str
    carrying: tuple[ItemView, ...]
    lapsed: tuple[ItemView, ...]
    happened: tuple[Event, ...]
    ready: tuple[Item, ...]
    #: the live claims of mine and my agents that made no progress for their stall_after
    stalled: tuple[ItemView, ...] = ()
    #: the items of mine and my agents parked after their failed attempts: they wait for me
    parked: tuple[ItemView, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "principal": self.principal,
            "carrying": [x.to_dict() for x in self.carrying],
            "lapsed": [x.to_dict() for x in self.lapsed],
            "happened": [e.to_dict() for e in self.happened],
            "ready": [i.to_dict() for i in self.ready],
            "stalled": [x.to_dict() for x in self.stalled],
            "parked": [x.to_dict() for x in self.parked],
        }

    @classmethod
    def from_wire(cls, data: Any) -> Briefing:
        return cls(
            data["principal"],
            _views(data["carrying"]),
            _views(data["lapsed"]),
            tuple(Event.from_wire(x) for x in data["happened"]),
            _items(data["ready"]),
            _views(data.get("stalled")),
            _views(data.get("parked")),
        )


@dataclass(frozen=True)
class ReadyView:
    """The ready queue: open items nobody has (by priority, then age), then the claims that
    lapsed (assigned items whose holder's lease ran out: anyone may take them over, with
    takeover and a reason)."""

    items: tuple[Item, ...]
    lapsed: tuple[ItemView, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [i.to_dict() for i in self.items],
            "lapsed": [x.to_dict() for x in self.lapsed],
        }

    @classmethod
    def from_wire(cls, data: Any) -> ReadyView:
        return cls(_items(data["items"]), _views(data.get("lapsed")))
