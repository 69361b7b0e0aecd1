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


#: why a server raised the floor from the clock (the ``reason`` of its ``token_floor_set``)
CLOCK_REASONS = ("restart", "reconnect", "database_changed")


def floor_from_clock(current: int, now_ms: int, reason: str) -> EventDraft | None:
    """``token_floor_set`` raising ``current`` to ``now_ms`` in microseconds, or ``None`` if it
    is that high already. Sound because a token is one more than the key's last one (or than
    the floor): every token granted before an instant is below that instant's microsecond
    count, unless a key was granted more than a million times a second since the last raise.
    A server raises it whenever it cannot prove that its database did not go back in time (a
    restored backup, a promoted standby that missed commits, an old copy), so that no token is
    granted twice nor below one already handed out."""
    wanted = now_ms * 1000
    if wanted <= current:
        return None
    data = {"from": current, "to": wanted}
    return EventDraft("token_floor_set", None, reason=reason, data=data)
