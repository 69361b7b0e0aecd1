"""The token floor: every token granted from now on is larger than it. Set after tenure's
database was reset or replaced, so that fences downstream that remember higher tokens keep
admitting new holders. Floors only grow; a live lease below a new floor keeps its token until
it ends (its key's next token is above the floor)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenure.core.models import EventDraft
from tenure.errors import Conflict, InvalidRequest

MAX_FLOOR = 2**62  # far below a 64-bit token's limit: a floor must leave tokens to grant


@dataclass(frozen=True)
class TokenFloor:
    """The floor and the largest token ever granted in this database."""

    floor: int
    max_token: int

    def to_dict(self) -> dict[str, Any]:
        return {"floor": self.floor, "max_token": self.max_token}


def decide_floor(current: int, wanted: Any, actor: str | None) -> EventDraft:
    """``token_floor_set`` from ``current`` to ``wanted``, or why not (nothing changes)."""
    if isinstance(wanted, bool) or not isinstance(wanted, int) or not 0 <= wanted <= MAX_FLOOR:
        raise InvalidRequest(
            f"floor {wanted!r} is not a whole number from 0 to {MAX_FLOOR}. "
            "Give the largest token your fences have seen.",
            field="floor",
            minimum=0,
            maximum=MAX_FLOOR,
        )
    if wanted < current:  # well-formed, refused by the current state: 409
        raise Conflict(
            f"the token floor is {current}; floors only grow, {wanted} is "
            f"lower. Give a floor of at least {current}.",
            field="floor",
            minimum=current,
        )
    return EventDraft("token_floor_set", None, actor=actor, data={"from": current, "to": wanted})
