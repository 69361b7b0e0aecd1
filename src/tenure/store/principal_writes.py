"""Setting a principal's roles and removing it, the same on both backends: the SQL runs on an
open transaction's cursor (sqlite3's connection or psycopg's cursor, which read alike), and the
caller appends the returned events in that transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from tenure.core.models import EventDraft, Principal, principal_created, token_event
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
    leases = tuple(r[0] for r in cur.execute(q["live_leases_of"], who).fetchall())
    items = tuple(r[0] for r in cur.execute(q["open_items_of"], {"name": name}).fetchall())
    children = tuple(r[0] for r in cur.execute(q["children_of"], {"name": name}).fetchall())
    if leases or items or children:
        return Removal(False, leases=leases, items=items, children=children), []
    revoked = tuple(r[0] for r in cur.execute(q["revoke_all_tokens"], who).fetchall())
    for query in ("delete_tokens", "delete_cursors", "delete_principal"):
        cur.execute(q[query], {"name": name})
    gone = rows.principal_from(row)
    events = [token_event("token_revoked", name, t, actor, "principal removed") for t in revoked]
    data = {"kind": gone.kind, "roles": list(gone.roles), "parent": gone.parent}
    events.append(EventDraft("principal_removed", None, name, actor=actor, data=data))
    return Removal(True, revoked=revoked), events


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
