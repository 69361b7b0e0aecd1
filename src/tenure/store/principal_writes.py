"""Setting a principal's roles and removing it, the same on both backends: the SQL runs on an
open transaction's cursor (sqlite3's connection or psycopg's cursor, which read alike), and the
caller appends the returned events in that transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from tenure.core.models import EventDraft, Principal, principal_created, token_event
from tenure.core.work import ITEM_PREFIX, Transfer
from tenure.store import rows
from tenure.store.values import NewToken, Removal, TokenInfo


class Cursor(Protocol):
    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


def tokens_from(found: Sequence[Sequence[Any]]) -> list[TokenInfo]:
    return [TokenInfo(r[0], int(r[1]), r[2], r[3]) for r in found]


def set_roles(
    cur: Cursor, q: Mapping[str, str], name: str, roles: tuple[str, ...], actor: str | None
) -> tuple[Principal | None, list[EventDraft]]:
    """The principal with its new roles and its ``principal_roles_set`` event."""
    row = cur.execute(q["get_principal"], {"name": name}).fetchone()
    if row is None:
        return None, []
    before = rows.principal_from(row)
    cur.execute(q["set_roles"], {"name": name, "roles": rows.dumps(list(roles))})
    after = Principal(before.name, before.kind, roles, before.parent)
    data = {"from": list(before.roles), "to": list(roles)}
    return after, [EventDraft("principal_roles_set", None, name, actor=actor, data=data)]


def remove(
    cur: Cursor, q: Mapping[str, str], name: str, actor: str | None, now: int
) -> tuple[Removal | None, list[EventDraft]]:
    """Remove ``name`` unless it holds live leases or open items (see ``Store``)."""
    row = cur.execute(q["get_principal"], {"name": name}).fetchone()
    if row is None:
        return None, []
    who = {"name": name, "now": now}
    items = tuple(r[0] for r in cur.execute(q["open_items_of"], {"name": name}).fetchall())
    children = tuple(r[0] for r in cur.execute(q["children_of"], {"name": name}).fetchall())
    if items or children:
        return Removal(False, items=items, children=children), []
    ended = end_leases(cur, q, name, now, actor, PRINCIPAL_REMOVED)
    revoked = tuple(r[0] for r in cur.execute(q["revoke_all_tokens"], who).fetchall())
    for query in ("delete_tokens", "delete_cursors", "delete_principal"):
        cur.execute(q[query], {"name": name})
    gone = rows.principal_from(row)
    events = [token_event("token_revoked", name, t, actor, "principal removed") for t in revoked]
    data = {"kind": gone.kind, "roles": list(gone.roles), "parent": gone.parent}
    events.append(EventDraft("principal_removed", None, name, actor=actor, data=data))
    keys = tuple(e.key for e in ended if e.key is not None)
    return Removal(True, revoked=revoked, leases=keys), [*ended, *events]


SERVER = "tenure"  # the actor of a transfer no principal asked for (the CLI on the database)
#: the reasons of the force-releases that end a principal's leases with its credentials
PRINCIPAL_REMOVED = "principal_removed: its principal was removed"
CREDENTIALS_REVOKED = "credentials_revoked: its principal's last valid token was revoked"


def end_leases(
    cur: Cursor, q: Mapping[str, str], name: str, now: int, actor: str | None, reason: str
) -> list[EventDraft]:
    """Force-release every live lease of ``name`` (item claims too: the claim's epoch is dead,
    a transfer records it and an assigned item reads revoked), in the caller's transaction:
    the ``force_released`` events to append. Credentials and leases end together."""
    events = []
    for key, token, holder, task, acquired_at, session in cur.execute(
        q["end_leases_of"], {"name": name, "now": now}
    ).fetchall():
        data: dict[str, Any] = {"held_ms": max(0, now - acquired_at)}
        if session:
            data["session"] = session
        events.append(EventDraft("force_released", key, holder, task, token, actor, reason, data))
        if key.startswith(ITEM_PREFIX):
            _end_claim(cur, q, key[len(ITEM_PREFIX) :], holder, token, actor, reason, now)
    return events


def _end_claim(
    cur: Cursor,
    q: Mapping[str, str],
    item: str,
    holder: str,
    epoch: int,
    actor: str | None,
    note: str,
    now: int,
) -> None:
    found = cur.execute(q["revoke_claimed_item"], {"id": item, "now": now}).fetchone()
    assignee = found[0] if found else None
    moved = Transfer(item, holder, assignee, epoch, "force_released", actor or SERVER, now, note)
    cur.execute(q["insert_transfer"], rows.transfer_params(moved))


def has_valid_token(cur: Cursor, q: Mapping[str, str], name: str, now: int) -> bool:
    """Whether ``name`` still has a token that authenticates."""
    row = cur.execute(q["valid_tokens_of"], {"name": name, "now": now}).fetchone()
    return bool(row and int(row[0]) > 0)


def add(
    cur: Cursor,
    q: Mapping[str, str],
    principal: Principal,
    token: NewToken | None,
    actor: str | None,
    now: int,
) -> list[EventDraft]:
    """Insert ``principal`` and, with ``token``, its first token: the ``principal_created``
    and ``token_issued`` events to append."""
    cur.execute(q["add_principal"], rows.principal_params(principal, now))
    events = [principal_created(principal, actor)]
    if token is not None:
        events += add_token(cur, q, principal.name, token, actor, now)
    return events


def add_token(
    cur: Cursor,
    q: Mapping[str, str],
    name: str,
    token: NewToken,
    actor: str | None,
    now: int,
) -> list[EventDraft]:
    """Insert one token of ``name``: its ``token_issued`` event to append."""
    row = token.row(name, now)
    cur.execute(q["add_token"], row)
    return [token_event("token_issued", name, row["id"], actor)]
