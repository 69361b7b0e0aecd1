"""Who may read and raise the token floor (:mod:`tenure.core.token_floor`): admins, and the
trusted CLI on the database directly (``actor`` ``None``)."""

from __future__ import annotations

from tenure.core.models import Principal, Scope
from tenure.core.subtree_tokens import prefixes_above, tree_floor
from tenure.core.token_floor import TokenFloor
from tenure.errors import Forbidden
from tenure.store.base import KeyTx, Store


def _check_admin(actor: Principal | None, what: str) -> None:
    if actor is not None and not actor.is_admin:
        raise Forbidden(
            f"only admins {what} the token floor", actor=actor.name, reason="admin role required"
        )


def show_floor(store: Store, actor: Principal | None) -> TokenFloor:
    """The floor and the largest token ever granted in this database."""
    _check_admin(actor, "read")
    return store.token_floor()


def set_floor(store: Store, actor: Principal | None, floor: object) -> TokenFloor:
    """Raise the floor to ``floor``: every token granted from now on is larger. Refused
    (``conflict``, nothing changes) below the current floor; a live lease below it keeps
    its token until it ends. Recorded as ``token_floor_set``."""
    _check_admin(actor, "set")
    return store.set_token_floor(floor, None if actor is None else actor.name)  # type: ignore[arg-type]


def floor_for(tx: KeyTx, scope: Scope = "key", fresh: bool = False) -> int:
    """What a new token granted in ``tx`` must exceed besides the key's last one: the token
    floor and, in a tree, the latest subtree token above the key and (for a subtree lease)
    every token under it (:mod:`tenure.core.subtree_tokens`). Read only when the acquisition
    may grant a new token: a live lease renews or is refused (its token stays), unless it
    widens to a subtree. ``fresh``: a new token is granted whatever the key's lease (a
    transfer), so the floor is always read."""
    rec = tx.record
    same = rec is not None and rec.is_live(tx.now) and (scope != "subtree" or rec.scope == scope)
    if same and not fresh:
        return 0
    floor = tx.token_floor()
    above = prefixes_above(tx.key)
    if not above and scope != "subtree":
        return floor  # a key outside any tree (no "/"): nothing more to read
    grant = tx.grant_above(above) if above else None
    under = tx.max_token_under(tx.key) if scope == "subtree" else 0
    return max(floor, tree_floor(scope, grant, under))


def resume(store: Store) -> TokenFloor:
    """A server starts on ``store``: it cannot prove that the database is the one it (or
    another server) last granted tokens from rather than a restored backup or an old copy, so
    it raises the floor from the clock (``token_floor_set``, reason ``restart``) before it
    serves anything. A database that never granted a token keeps counting from 1."""
    return store.raise_token_floor("restart")
