"""The core models on the wire, for the lease, fenced-register and principal verbs: their
replies' JSON (``to_dict``), and the clients' reading of it, each ``<model>_from_wire`` turning
that JSON back into the model.

The readers stand in for ``from_wire`` classmethods on those models (``Lease.from_wire`` is
one); fields that older servers did not send are read with their defaults.
"""

from __future__ import annotations

from typing import Any

from tenure.core import models as m
from tenure.core.token_floor import TokenFloor
from tenure.store.base import TokenInfo


def to_dict(out: Any) -> dict[str, Any]:
    """The reply of a core model (the verbs' ``wire``): its ``to_dict``."""
    result: dict[str, Any] = out.to_dict()
    return result


def extend_result_from_wire(data: Any) -> m.ExtendResult:
    return m.ExtendResult(
        m.Lease.from_wire(data["lease"]),
        bool(data["extended"]),
        bool(data["capped"]),
        data["requested_until"],
        data["granted_until"],
    )


def release_result_from_wire(data: Any) -> m.ReleaseResult:
    lease = data.get("lease")
    found = None if lease is None else m.Lease.from_wire(lease)
    return m.ReleaseResult(bool(data["released"]), found, data.get("reason"))


def force_release_result_from_wire(data: Any) -> m.ForceReleaseResult:
    return m.ForceReleaseResult(m.Lease.from_wire(data["lease"]), data["actor"], data["reason"])


def renew_all_result_from_wire(data: Any) -> m.RenewAllResult:
    renewed = tuple(m.Lease.from_wire(item) for item in data["renewed"])
    lost = tuple(m.LostLease(x["key"], x["reason"], x.get("token")) for x in data["lost"])
    return m.RenewAllResult(renewed, lost)


def fenced_write_from_wire(data: Any) -> m.FencedWrite:
    return m.FencedWrite(
        data["key"], data["token"], data["value"], data["version"], bool(data["duplicate"])
    )


def fenced_value_from_wire(data: Any) -> m.FencedValue:
    return m.FencedValue(
        data["key"], data["token"], data["value"], data["version"], data["updated_at"]
    )


def event_from_wire(data: Any) -> m.Event:
    return m.Event(
        data["id"], data["at"], data["type"], data.get("key"), data.get("holder"),
        data.get("task"), data.get("token"), data.get("actor"), data.get("reason"),
        dict(data.get("data") or {}),
    )  # fmt: skip


def principal_from_wire(data: Any) -> m.Principal:
    return m.Principal(
        data["name"], data["kind"], tuple(data.get("roles") or ()), data.get("parent")
    )


def token_info_from_wire(data: Any) -> TokenInfo:
    expires, revoked = data.get("expires_at"), data.get("revoked_at")
    return TokenInfo(data["token_id"], data["created_at"], expires, revoked)


def token_floor_from_wire(data: Any) -> TokenFloor:
    return TokenFloor(int(data["floor"]), int(data["max_token"]))
