"""A grant that raced its waiter's departure is released at once, with a recorded reason.

The server's app is driven in process (on each backend) with an ASGI ``receive`` that says
``http.disconnect`` only once the grant has committed (the executor's answer is held until the
departure was seen): the waiting acquisition was granted, but its client had gone before the
reply could reach it. The route must answer nobody and end the
lease through the service (a ``released`` event with reason ``waiter_gone``), so the key is free
for the next waiter instead of held for the grant's ten minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from tenure.compose import create_app
from tenure.service.principals import Principals
from tenure.settings import Settings

KEY = "deploy/prod"


async def raced_grant(
    url: str, chunked: bool, held: bool = False
) -> tuple[list[Any], list[Any], Any]:
    """What was sent to the departed client, the key's events, and its lease afterwards."""
    app = create_app(Settings(db=url))
    async with app.router.lifespan_context(app):
        st = app.tenure
        assert st is not None
        token = Principals(st.service.store).bootstrap("bo", "agent", (), None).token
        if held:  # bo's session holds the key already: the acquisition renews it
            st.service.acquire("bo", KEY, ttl_ms=60_000)
        committed, seen = asyncio.Event(), asyncio.Event()
        run = st.executor.run

        async def grant_then_leave(call: Callable[[], Any], key: str | None = None) -> Any:
            out = await run(call, key)
            if not committed.is_set():  # the acquisition: its client leaves before the reply
                committed.set()
                with contextlib.suppress(TimeoutError):  # a route that never looks goes on
                    await asyncio.wait_for(seen.wait(), 5)
            return out

        st.executor.run = grant_then_leave  # type: ignore[method-assign]
        body = json.dumps({"key": KEY, "ttl_ms": 600_000, "wait_ms": 60_000}).encode()
        received = 0

        async def receive() -> dict[str, Any]:
            nonlocal received
            received += 1
            if received == 1:
                return {"type": "http.request", "body": body, "more_body": False}
            await committed.wait()
            seen.set()
            return {"type": "http.disconnect"}

        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        headers = [(b"authorization", f"Bearer {token}".encode())]
        headers.append((b"content-type", b"application/json"))
        if not chunked:  # without a length the hot path leaves it to FastAPI's route
            headers.append((b"content-length", str(len(body)).encode()))
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": "/v1/leases/acquire", "raw_path": b"/v1/leases/acquire",
            "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8080),
        }  # fmt: skip
        await asyncio.wait_for(app(scope, receive, send), 30)
        events = st.service.events(after=0, key=KEY)
        lease = st.service.get(KEY)
    return sent, events, lease


@pytest.mark.parametrize("chunked", [False, True], ids=["hot-asgi", "fastapi"])
def test_a_grant_whose_waiter_left_is_released_with_a_reason(store_url: str, chunked: bool) -> None:
    sent, events, lease = asyncio.run(raced_grant(store_url, chunked))
    bodies = [m for m in sent if m["type"] == "http.response.body" and m.get("body")]
    assert not bodies  # nobody was there to answer
    assert lease.state == "released"
    kinds = [(e.type, e.holder, e.reason) for e in events]
    assert kinds == [("acquired", "bo", None), ("released", "bo", "waiter_gone")]
    assert events[1].token == events[0].token == lease.token


def test_a_renewal_whose_waiter_left_keeps_the_lease(store_url: str) -> None:
    """The session held the key before it asked: its lease is not the departed waiter's grant."""
    _, events, lease = asyncio.run(raced_grant(store_url, chunked=False, held=True))
    assert lease.state == "live"
    assert [e.type for e in events] == ["acquired"]
