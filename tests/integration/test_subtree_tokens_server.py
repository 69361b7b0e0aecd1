"""Through a real server (its group commits): a subtree lease supersedes the older tokens
under it in the fenced register, and keys under it acquired in parallel afterwards get tokens
above it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from conftest import LiveServer


def test_a_subtree_takeover_over_a_per_file_holder(live_server: LiveServer) -> None:
    jo = live_server.http(live_server.token_for("jo"))
    bo = live_server.http(live_server.token_for("bo"))
    with jo, bo:
        old = jo.post("/v1/leases/acquire", json={"key": "a/x"}).json()["lease"]["token"]
        assert jo.post("/v1/fenced/write", json={"key": "a/x", "token": old, "value": 1}).is_success
        jo.post("/v1/leases/release", json={"key": "a/x", "token": old})
        tree = bo.post("/v1/leases/acquire", json={"key": "a/", "scope": "subtree"}).json()
        t = tree["lease"]["token"]
        assert t > old
        stale = jo.post("/v1/fenced/write", json={"key": "a/x", "token": old, "value": 2})
        assert stale.status_code == 409 and stale.json()["current_token"] == t
        mine = bo.post("/v1/fenced/write", json={"key": "a/x", "token": t, "value": 3})
        assert mine.status_code == 200, mine.text
        bo.post("/v1/leases/release", json={"key": "a/", "token": t})

        def take(i: int) -> int:
            reply = jo.post("/v1/leases/acquire", json={"key": f"a/k{i}"})
            assert reply.status_code == 200, reply.text
            return int(reply.json()["lease"]["token"])

        with ThreadPoolExecutor(8) as pool:  # in the server's groups
            tokens = list(pool.map(take, range(32)))
        assert min(tokens) > t
        assert jo.get("/v1/fenced/a/x").json()["value"] == 3
