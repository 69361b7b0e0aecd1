"""``tenure principal ls|show|set-roles|remove``: operating on principals, through the server
as you (admins; a principal's ancestors where docs/cli.md says so), or with ``--db`` directly
on the database (trusted, as ``principal add`` is: for bootstrap and repairs). Each change is an
event (``principal_roles_set``, ``token_revoked``, ``principal_removed``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Group

from tenure.cli.app import principal
from tenure.cli.context import cli_of, verb
from tenure.cli.options import DIRECT_DB
from tenure.cli.render import pairs, table
from tenure.core.models import Principal
from tenure.core.text import clock, when
from tenure.settings import Settings
from tenure.verbs.principals import PrincipalInfo

if TYPE_CHECKING:
    from tenure.service.principals import Principals

T = TypeVar("T")
ROLE = click.Choice(["admin", "supervisor"])


def on_database(db: str, act: Callable[[Principals], T]) -> T:
    """``act`` on the database at ``db`` (``-`` or empty: $TENURE_DB), as the trusted CLI."""
    from tenure.service.principals import Principals  # here: the CLI starts faster
    from tenure.store.open import open_store

    store = open_store(Settings.from_env(db=db).db)
    try:
        return act(Principals(store))
    finally:
        store.close()


def row(p: Principal) -> tuple[str, str, str, str]:
    return p.name, p.kind, ", ".join(p.roles) or "-", p.parent or "-"


@verb(
    principal,
    "ls",
    summary="List principals: all of them as an admin, else you and your agents.",
    example="tenure principal ls\ntenure principal ls --db sqlite:///tenure.db --json",
)
@DIRECT_DB
def principal_ls(db: str | None) -> None:
    """List the principals by name with kind, roles and parent: every one as an admin (or with
    --db), else yourself and the agents you dispatched (and theirs)."""
    found = on_database(db, lambda p: p.listed(None)) if db else cli_of().client.list_principals()
    cli_of().out.emit(
        {"principals": [p.to_dict() for p in found]},
        lambda: table(("NAME", "KIND", "ROLES", "PARENT"), [row(p) for p in found]),
    )


@verb(
    principal,
    "show",
    summary="Show NAME with its tokens' ids and times (never a secret).",
    example="tenure principal show jo\ntenure principal show jo/agent-1a2b3c --json",
)
@click.argument("name")
@DIRECT_DB
def principal_show(name: str, db: str | None) -> None:
    """Show NAME (kind, roles, parent) and its tokens: id, created, expires, revoked. Admins see
    anyone, a principal itself and the agents it dispatched (others: exit 1); exit 5 if there is
    no such principal."""
    if db:
        found, tokens = on_database(db, lambda p: p.show(None, name))
        doc = PrincipalInfo(found, tuple(tokens)).to_dict()
    else:
        doc = cli_of().client.get_principal(name).to_dict()
    cli_of().out.emit(doc, lambda: shown(doc))


def shown(doc: dict[str, Any]) -> Group:
    p = doc["principal"]
    head = pairs(
        [
            ("name", p["name"]),
            ("kind", p["kind"]),
            ("roles", ", ".join(p["roles"])),
            ("parent", p["parent"]),
        ]
    )
    tokens = table(
        ("TOKEN", "CREATED", "EXPIRES", "REVOKED"),
        [
            (t["token_id"], clock(t["created_at"]), expiry(t), clock(t["revoked_at"]))
            for t in doc["tokens"]
        ],
    )
    return Group(head, "", tokens)


def expiry(token: dict[str, Any]) -> str:
    if token["expires_at"] is None:
        return "never"
    return when(token["expires_at"])


@verb(
    principal,
    "set-roles",
    summary="Replace the roles of NAME (admins; no ROLE: none).",
    example="tenure principal set-roles jo admin\ntenure principal set-roles bob supervisor\n"
    "tenure principal set-roles bob",
)
@click.argument("name")
@click.argument("roles", nargs=-1, type=ROLE, metavar="[ROLE]...")
@DIRECT_DB
def principal_set_roles(name: str, roles: tuple[str, ...], db: str | None) -> None:
    """Replace the roles of NAME with ROLE… (admin, supervisor; none given: no roles), as an
    admin (others: exit 1). Recorded as a principal_roles_set event naming the old and new
    roles; the change applies to its next request."""
    if db:
        changed = on_database(db, lambda p: p.set_roles(None, name, list(roles)))
    else:
        changed = cli_of().client.set_roles(name, list(roles))
    now = f"roles {', '.join(changed.roles)}" if changed.roles else "no roles"
    cli_of().out.emit({"principal": changed.to_dict()}, f"{changed.name} now has {now}")


@verb(
    principal,
    "remove",
    summary="Remove NAME and revoke its tokens (admins, its ancestors).",
    example="tenure principal remove bob\ntenure principal remove jo/agent-1a2b3c --json",
)
@click.argument("name")
@DIRECT_DB
def principal_remove(name: str, db: str | None) -> None:
    """Remove NAME: its tokens are revoked at once and it is gone (its events stay). Admins
    remove anyone, a principal the agents it dispatched (others: exit 1). Its live leases are
    force-released with it (reason principal_removed). Refused with exit 3, naming them, while
    it is assigned an item that is not done or cancelled: reassign those first."""
    if db:
        gone, removal = on_database(db, lambda p: p.remove(None, name))
        revoked = list(removal.revoked)
    else:
        done = cli_of().client.remove_principal(name)
        gone, revoked = done.principal, list(done.revoked)
    tokens = f"; revoked its tokens {', '.join(revoked)}" if revoked else ""
    cli_of().out.emit(
        {"principal": gone.to_dict(), "revoked": revoked}, f"removed {gone.name}{tokens}"
    )
