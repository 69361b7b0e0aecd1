"""The clients' principal calls, with the same names sync, async and direct: list, show (tokens
without secrets), set roles, remove (its live leases are force-released with it)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from tenure.client import AsyncClient, Client
from tenure.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from conftest import LiveServer


def exercise(client: Client, bob: Client) -> None:
    assert [p.name for p in client.list_principals()] == ["bob", "root"]
    assert [p.name for p in bob.list_principals()] == ["bob"]
    info = client.get_principal("bob")
    assert info.principal.name == "bob" and len(info.tokens) == 1
    assert info.tokens[0].revoked_at is None
    assert client.set_roles("bob", ["supervisor"]).roles == ("supervisor",)
    with pytest.raises(Forbidden):
        bob.set_roles("bob", ["admin"])
    bob.acquire("jobs/x")
    removed = client.remove_principal("bob")  # its leases end with it
    assert removed.principal.name == "bob" and removed.revoked == (info.tokens[0].token_id,)
    assert client.get_lease("jobs/x").state == "force_released"
    with pytest.raises(NotFound):
        client.get_principal("bob")


def test_the_sync_client(live_server: LiveServer) -> None:
    bob_token = live_server.token_for("bob", "human")
    url = live_server.url
    with Client(url, token=live_server.admin_token) as root, Client(url, token=bob_token) as bob:
        exercise(root, bob)


def test_direct_mode(store_url: str, live_server: LiveServer) -> None:
    live_server.token_for("bob", "human")
    with Client(store_url, principal="root") as root, Client(store_url, principal="bob") as bob:
        exercise(root, bob)


def test_the_async_client(live_server: LiveServer) -> None:
    live_server.token_for("carol", "human")

    async def go() -> None:
        async with AsyncClient(live_server.url, token=live_server.admin_token) as root:
            assert [p.name for p in await root.list_principals()] == ["carol", "root"]
            info = await root.get_principal("carol")
            assert len(info.tokens) == 1
            assert (await root.set_roles("carol", ["admin"])).roles == ("admin",)
            removed = await root.remove_principal("carol")
            assert removed.revoked == (info.tokens[0].token_id,)

    asyncio.run(go())
