"""The core models on the wire, for the lease, fenced-register and principal verbs: their
replies' JSON (``to_dict``), and the clients' reading of it, each ``<model>_from_wire`` turning
that JSON back into the model.

The readers stand in for ``from_wire`` classmethods on those models (``Lease.from_wire`` is
one); fields that older servers did not send are read with their defaults.
"""

from __future__ import annotations

from typing import Any

from tenure.core.token_floor import TokenFloor


def to_dict(out: Any) -> dict[str, Any]:
    """The reply of a core model (the verbs' ``wire``): its ``to_dict``."""
    result: dict[str, Any] = out.to_dict()
    return result


def token_floor_from_wire(data: Any) -> TokenFloor:
    return TokenFloor(int(data["floor"]), int(data["max_token"]))
