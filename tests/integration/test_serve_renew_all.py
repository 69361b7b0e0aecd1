"""``POST /v1/leases/renew-all`` without keys against a real ``tenure serve``, on each backend.

The server passes on the JSON the database wrote for the renewed leases, unparsed: the bytes
must be valid JSON of the documented shape and say what the database now holds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from procs import Serve, cli

META = {"nested": {"list": [1, 2.5, None, True], "empty": {}}, "ünï": '😀 "q" \\ \n'}


@pytest.fixture
def server(store_url: str) -> Iterator[tuple[Serve, dict[str, str]]]:
    tokens = {
        name: cli("principal", "add", name, "--db", store_url).stdout.strip()
        for name in ("alice", "bob", "carol")
    }
    serve = Serve(store_url)
    try:
        yield serve, tokens
    finally:
        serve.kill()


def strict_json(raw: bytes) -> Any:
    """``raw`` parsed as JSON that any parser takes: UTF-8, no NaN or Infinity."""

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(raw.decode("utf-8"), parse_constant=refuse)


def renewals_total(serve: Serve) -> int:
    text = httpx.get(f"{serve.url}/metrics", timeout=30).text
    (line,) = [x for x in text.splitlines() if x.startswith("tenure_renewals_total ")]
    return int(line.split()[1])


def steady(lease: dict[str, Any]) -> dict[str, Any]:
    """A lease without what a renewal changes."""
    return {k: v for k, v in lease.items() if k not in ("renewed_at", "expires_at", "renewals")}


def test_renew_all_without_keys_returns_the_database_json(
    server: tuple[Serve, dict[str, str]],
) -> None:
    serve, tokens = server
    with serve.http(tokens["alice"]) as alice, serve.http(tokens["bob"]) as bob:
        keys = [f"jobs/{(i * 37) % 120:03d}" for i in range(120)]  # out of key order
        for i, key in enumerate(keys):
            body: dict[str, Any] = {"key": key, "ttl_ms": 60_000}
            if i % 3 == 0:
                body.update(task=f"run-{i} ✓", meta={**META, "i": i})
            assert alice.post("/v1/leases/acquire", json=body).status_code == 200
        for key in ("jobs/short", "jobs/gone"):
            assert alice.post("/v1/leases/acquire", json={"key": key, "ttl_ms": 1_000}).is_success
        assert alice.post("/v1/leases/release", json={"key": "jobs/gone"}).is_success
        assert bob.post("/v1/leases/acquire", json={"key": "bobs", "ttl_ms": 60_000}).is_success
        time.sleep(1.05)  # jobs/short lapses

        before = renewals_total(serve)
        reply = alice.post("/v1/leases/renew-all", json={})
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"] == "application/json"
        assert int(reply.headers["content-length"]) == len(reply.content)
        got = strict_json(reply.content)
        assert list(got) == ["renewed", "lost"]
        assert got["lost"] == [{"key": "jobs/short", "reason": "expired", "token": 1}]
        renewed = got["renewed"]
        assert [lease["key"] for lease in renewed] == sorted(keys)
        assert all(lease["renewals"] == 1 and lease["state"] == "live" for lease in renewed)
        assert renewed[0]["meta"] == {**META, "i": 0} and renewed[0]["task"] == "run-0 ✓"
        assert renewals_total(serve) == before + len(keys)

        # What the reply says is what the database holds now, field by field.
        live = alice.get("/v1/leases", params={"holder": "alice"}).json()["leases"]
        assert renewed == live
        assert alice.get("/v1/leases/jobs%2Fshort").json()["lease"]["state"] == "expired"
        assert alice.get("/v1/leases/bobs").json()["lease"]["renewals"] == 0

        # The same call with keys goes through the models; both say the same of one lease.
        again = alice.post("/v1/leases/renew-all", json={"keys": None}).json()["renewed"]
        listed = alice.post("/v1/leases/renew-all", json={"keys": [keys[0]]}).json()
        assert [x["renewals"] for x in again] == [2] * len(keys)
        (one,) = listed["renewed"]
        assert list(one) == list(renewed[0]) and one["renewals"] == 3
        assert steady(one) == steady(next(x for x in again if x["key"] == keys[0]))

    with serve.http(tokens["carol"]) as carol:
        nothing = carol.post("/v1/leases/renew-all", json={})
        assert nothing.status_code == 200 and nothing.content == b'{"renewed":[],"lost":[]}'
