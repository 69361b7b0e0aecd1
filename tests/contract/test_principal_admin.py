"""Operating on principals, on each backend: list, show with tokens, set roles, remove. Each change
is an event (``principal_roles_set``; ``token_revoked`` and ``principal_removed``); removing a
principal force-releases its live leases; one that is assigned an open item is refused, naming them,
and changes nothing; adding an existing principal with other roles is refused instead of printing a
new token that ignores them."""

from __future__ import annotations

import pytest

import tenure
from tenure import Service
from tenure.errors import Conflict, Forbidden, NotFound, Unauthenticated
from tenure.service.principals import Principals

from ._items import ADMIN, AGENT, ALICE, BOB, SUB


def types(svc: Service, after: int) -> list[tuple[str, str | None, str | None]]:
    return [(e.type, e.holder, e.actor) for e in svc.events(after=after, limit=1000)]


def test_list_and_show_with_tokens_never_secrets(svc: Service, clock: tenure.FakeClock) -> None:
    principals = Principals(svc.store)
    issued = principals.bootstrap("ci", "service", ttl_ms=60_000)
    principals.revoke(ADMIN, "ci", issued.token_id)
    second = principals.bootstrap("ci")
    assert [p.name for p in principals.listed(ADMIN)] == sorted(
        p.name for p in svc.store.list_principals()
    )
    assert [p.name for p in principals.listed(ALICE)] == ["alice", "alice/agent", "alice/agent/sub"]
    found, tokens = principals.show(ADMIN, "ci")
    assert found.kind == "service"
    made = [(issued.token_id, clock.now_ms() + 60_000, True), (second.token_id, None, False)]
    # both made at one instant of the fake clock: compare in the ids' order
    assert sorted((t.token_id, t.expires_at, t.revoked_at is not None) for t in tokens) == sorted(
        made
    )
    assert all(t.created_at == clock.now_ms() for t in tokens)
    assert "token" not in tokens[0].to_dict() and issued.token not in str(tokens)
    assert principals.show(ALICE, "alice/agent/sub")[0] == SUB
    with pytest.raises(Forbidden):
        principals.show(BOB, "ci")
    with pytest.raises(NotFound):
        principals.show(ADMIN, "nobody")


def test_set_roles_is_an_event_and_admins_only(svc: Service) -> None:
    principals = Principals(svc.store)
    start = svc.store.last_event_id()
    changed = principals.set_roles(ADMIN, "bob", ["supervisor", "admin", "admin"])
    assert changed.roles == ("supervisor", "admin")
    assert svc.store.get_principal("bob") == changed
    [event] = svc.events(after=start)
    assert (event.type, event.holder, event.actor) == ("principal_roles_set", "bob", "root")
    assert event.data == {"from": [], "to": ["supervisor", "admin"]}
    assert principals.set_roles(None, "bob", []).roles == ()
    with pytest.raises(Forbidden):
        principals.set_roles(ALICE, "alice", ["admin"])
    with pytest.raises(NotFound):
        principals.set_roles(ADMIN, "nobody", [])
    assert svc.store.get_principal("alice") == ALICE


def test_remove_revokes_its_tokens_and_records_it(svc: Service) -> None:
    principals = Principals(svc.store)
    issued = principals.bootstrap("carl")
    start = svc.store.last_event_id()
    gone, removal = principals.remove(ADMIN, "carl")
    assert gone.name == "carl" and removal.removed and removal.revoked == (issued.token_id,)
    assert svc.store.get_principal("carl") is None
    assert types(svc, start) == [
        ("token_revoked", "carl", "root"),
        ("principal_removed", "carl", "root"),
    ]
    with pytest.raises(Unauthenticated):
        principals.authenticate(issued.token)
    again = principals.bootstrap("carl")  # the name is free again
    assert principals.authenticate(again.token).name == "carl"


def test_remove_is_refused_while_it_is_assigned_open_items(svc: Service) -> None:
    """Its live leases would end with it, but not an item assigned to it: reassign it first."""
    principals = Principals(svc.store)
    svc.acquire(BOB, "jobs/nightly")
    svc.items.claim(BOB, "job")
    before = (svc.store.last_event_id(), svc.store.list_principals(), svc.list())
    with pytest.raises(Conflict) as refused:
        principals.remove(ADMIN, "bob")
    assert "holds live leases" not in str(refused.value)
    assert "bob is assigned open items job" in str(refused.value)
    assert (svc.store.last_event_id(), svc.store.list_principals(), svc.list()) == before
    with pytest.raises(Forbidden):
        principals.remove(BOB, "alice")


def test_remove_is_refused_while_it_has_dispatched_principals(svc: Service) -> None:
    """Rights follow names: a principal added later under a removed parent's name would be an
    ancestor of the old agents. So the agents go first."""
    principals = Principals(svc.store)
    before = (svc.store.last_event_id(), svc.store.list_principals())
    with pytest.raises(Conflict) as refused:
        principals.remove(ADMIN, "alice/agent")
    assert "has dispatched principals alice/agent/sub" in str(refused.value)
    assert "remove its principals before it" in str(refused.value)
    assert (svc.store.last_event_id(), svc.store.list_principals()) == before
    assert principals.remove(ADMIN, "alice/agent/sub")[1].removed
    assert principals.remove(ADMIN, "alice/agent")[1].removed


def test_an_ancestor_removes_its_agent(svc: Service) -> None:
    principals = Principals(svc.store)
    gone, removal = principals.remove(ALICE, "alice/agent/sub")
    assert gone == SUB and removal.removed
    with pytest.raises(Forbidden):
        principals.remove(AGENT, "alice")


def test_adding_an_existing_principal_with_other_roles_is_refused(svc: Service) -> None:
    principals = Principals(svc.store)
    start = svc.store.last_event_id()
    with pytest.raises(Conflict) as refused:
        principals.bootstrap("bob", roles=["admin"])
    assert "tenure principal set-roles bob admin" in str(refused.value)
    with pytest.raises(Conflict):
        principals.bootstrap("alice/agent", "agent", parent="bob")
    assert svc.store.last_event_id() == start
    assert principals.bootstrap("root", roles=["admin"]).principal == ADMIN  # same roles: a token
    assert principals.bootstrap("bob").principal == BOB  # no roles asked: a new token
