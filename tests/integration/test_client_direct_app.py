"""Direct mode is the same client over an in-process transport to the server's own app: a
direct-mode call gets the bytes a server would answer (its routes, validation and problem
replies), and the principal it trusts travels where no network request can put it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import httpx
import pytest

import tenure
from tenure.client._call import Call, Reply
from tenure.verbs.call import Safety
from tenure.verbs.fields import TRUSTED_PRINCIPAL
from tenure.verbs.registry import VERBS

pytestmark = pytest.mark.usefixtures("live_server")


def raw(client: tenure.Client, method: str, path: str, body: dict[str, Any] | None) -> Reply:
    """One try of a request as ``client``'s transport carries it (no parsing, no retry)."""
    verb = next(v for v in VERBS if v.method == method and v.path == path)
    call: Call[Any] = Call(
        verb.name, method, path, lambda data: data, body=body, safety=Safety.UNSAFE
    )
    return client._transport.send(call, 10.0)


BAD = [
    ("POST", "/v1/leases/acquire", {"key": "jobs/x", "ttl_ms": 5}),
    ("POST", "/v1/leases/acquire", {"key": "jobs/x", "wait_ms": -1}),
    ("POST", "/v1/leases/acquire", {"key": "", "ttl_ms": 5000}),
    ("POST", "/v1/leases/renew", {"key": "jobs/x", "token": "nope"}),
    ("POST", "/v1/leases/release", {"key": "jobs/x", "bogus": 1}),
    ("POST", "/v1/items", {"title": 3}),
]


@pytest.mark.parametrize(("method", "path", "body"), BAD)
def test_a_refusal_from_direct_mode_is_the_servers_byte_for_byte(
    live_server: Any, method: str, path: str, body: dict[str, Any]
) -> None:
    with (
        tenure.Client(live_server.db, principal="root") as direct,
        tenure.Client(live_server.url, token=live_server.admin_token) as http,
    ):
        mine, theirs = raw(direct, method, path, body), raw(http, method, path, body)
    assert mine.status == theirs.status == 422, (mine.text, theirs.text)
    assert mine.text == theirs.text  # the same problem document, the same bytes


def test_a_verbs_reply_from_direct_mode_is_the_servers(live_server: Any) -> None:
    with (
        tenure.Client(live_server.db, principal="root") as direct,
        tenure.Client(live_server.url, token=live_server.admin_token) as http,
    ):
        assert raw(direct, "GET", "/v1/me", None).text == raw(http, "GET", "/v1/me", None).text
        lease = direct.acquire("jobs/same", ttl_ms=60_000, meta={"n": 1})
        mine = raw(direct, "POST", "/v1/leases/acquire", {"key": "jobs/same"})
        theirs = raw(http, "POST", "/v1/leases/acquire", {"key": "jobs/same"})
        assert mine.status == theirs.status == 409
        assert mine.data == theirs.data  # lease_held naming the same holder and session
        assert mine.data["session"] == direct.session and mine.data["holder"] == "root"
        assert lease.holder == "root"


def test_a_network_request_cannot_name_the_trusted_principal(live_server: Any) -> None:
    """The principal direct mode trusts is an ASGI scope key; a header named like it (or any
    other) is only a header: no token, no principal."""
    names = [TRUSTED_PRINCIPAL, "X-Tenure-Trusted-Principal", "Tenure-Principal"]
    with httpx.Client(base_url=live_server.url, trust_env=False) as http:
        for name in names:
            for path in ("/v1/me", "/v1/leases/acquire"):
                body = {"key": "jobs/forged"} if path.endswith("acquire") else None
                method = "POST" if body else "GET"
                sent = http.request(method, path, json=body, headers={name: "root"})
                assert sent.status_code == 401, (name, path, sent.text)
                assert sent.json()["code"] == "unauthenticated"
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        assert admin.list_leases() == []  # nothing was acquired


def test_async_direct_mode_goes_through_the_app(live_server: Any) -> None:
    async def main() -> None:
        async with tenure.AsyncClient(live_server.db, principal="stranger") as direct:
            with pytest.raises(tenure.InvalidRequest) as bad:
                await direct.acquire("jobs/a", ttl_ms=5)
            assert bad.value.field == "ttl_ms"
            lease = await direct.acquire("jobs/a", ttl_ms=5000)
            assert lease.holder == "stranger"
            assert (await direct.me()) == tenure.Principal("stranger")

    asyncio.run(main())


def test_the_direct_clients_of_one_database_share_its_app(live_server: Any) -> None:
    """One app per database in a process: its waiters see every release made through any of
    its clients; the last client to close stops it."""
    one = tenure.Client(live_server.db, principal="root")
    two = tenure.AsyncClient(live_server.db, principal="stranger")
    first = one._transport.backend.running
    assert two._transport.backend.running is first
    one.close()
    assert first.portal.call(lambda: _alive(first))  # still serving the other client
    asyncio.run(two.close())
    with pytest.raises(RuntimeError):
        first.portal.call(lambda: _alive(first))  # stopped with its last client
    with tenure.Client(live_server.db, principal="root") as three:
        assert three._transport.backend.running is not first
        assert three.me().name == "root"


async def _alive(running: Any) -> bool:
    return running.app.tenure is not None


def test_a_script_that_never_closes_its_direct_client_still_exits(tmp_path: Any) -> None:
    """The app's loop runs in a thread of its own: at exit it is stopped, not waited for."""
    script = (
        "import tenure\n"
        f"client = tenure.Client('sqlite:///{tmp_path}/t.db', principal='cron')\n"
        "print(client.acquire('jobs/left', ttl_ms=5000).holder)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "cron\n"), done.stderr
