"""The hot path counts the bytes of a body instead of trusting its ``Content-Length``.

An HTTP server in front frames requests by their length, so a body longer than it says cannot
arrive over a socket; the ASGI app still must not rely on that (another server, a proxy, a
bug). Driven through the app's own ASGI interface with its lifespan running on a real database.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.testclient import TestClient

import tenure
from tenure.server import create_app
from tenure.service.principals import Principals
from tenure.settings import Settings

CHUNK = b" " * 65_536


async def drive(app: Any, token: str, claimed: int, chunks: list[bytes]) -> tuple[int, int, Any]:
    """POST acquire with ``Content-Length: claimed`` and ``chunks`` as the body: the status, how
    many chunks the app read, and the reply's JSON."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/leases/acquire",
        "raw_path": b"/v1/leases/acquire",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(claimed).encode()),
            (b"authorization", f"Bearer {token}".encode()),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
    }
    read = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        read += 1
        if read > len(chunks):
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunks[read - 1], "more_body": read < len(chunks)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, read, json.loads(body)


def test_a_body_longer_than_its_length_is_refused_unread(store_url: str) -> None:
    store = tenure.open_store(store_url)
    try:
        token = Principals(store).bootstrap("jo", "agent", (), None).token
    finally:
        store.close()
    app = create_app(Settings(db=store_url))
    with TestClient(app) as client:
        assert client.portal is not None
        body = b'{"key": "k"}'
        chunks = [body, *([CHUNK] * 64)]  # 4 MiB after a 12-byte Content-Length
        status, read, problem = client.portal.call(drive, app, token, len(body), chunks)
        assert status == 400 and problem["code"] == "invalid_request"
        assert problem["field"] == "body" and "Content-Length" in problem["detail"]
        assert read <= 2  # refused at the first byte past the length, not after all of it
        status, read, reply = client.portal.call(drive, app, token, len(body), [body])
        assert status == 200 and reply["lease"]["key"] == "k"  # an honest body is served
