"""The values the store hands back beside the core's models: credentials, tokens as listed,
what removing a principal did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from tenure.core.models import Principal, Scope
from tenure.core.models import TokenInfo as TokenInfo  # listed tokens are a core value

#: the reason recorded when a dispatched agent's tokens end with its claim
ENDED = "its claim ended"


@dataclass(frozen=True)
class Credential:
    """An unrevoked token as the store has it: whose it is, its id, and when it expires
    (``None``: never). Expired or not is the caller's to decide, with its clock."""

    principal: Principal
    token_id: str
    expires_at: int | None

    def expired(self, now: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True)
class NewToken:
    """A token to record, never its secret: its hash, its id (``None``: the hash's first 12
    characters) and when it expires (``None``: never)."""

    token_hash: str
    token_id: str | None = None
    expires_at: int | None = None

    def row(self, name: str, now: int) -> dict[str, Any]:
        """The row of this token of ``name``, issued at ``now``."""
        row = {"id": self.token_id or self.token_hash[:12], "principal": name}
        return {**row, "token_hash": self.token_hash, "now": now, "expires_at": self.expires_at}


@dataclass(frozen=True)
class Removal:
    """What removing a principal did: ``removed``, with the ids of the tokens it revoked and the
    keys of the live leases it force-released (``leases``); or not, because of the open items
    assigned to it (``items``, ids) or the principals it dispatched (``children``: their rights
    follow its name, so a principal added later under that name would inherit them; each list cut at
    10)."""

    removed: bool
    revoked: tuple[str, ...] = ()
    leases: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    children: tuple[str, ...] = ()


class Reach(NamedTuple):
    """An acquisition a key's transaction is opened for: the store reads, with the lock, the
    leases on other keys that may conflict with it through a subtree (:meth:`KeyTx.nearby`)."""

    scope: Scope
    holder: str
    session: str
