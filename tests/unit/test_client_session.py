"""Each client object is a session of its own, and says so on the calls that need it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import tenure
from tenure.client._session import new_session
from tenure.client._transport import RetryPolicy
from tenure.client._wire import Call, Reply
from tenure.core.items import Item
from tenure.core.models import Lease, Principal

FAST = RetryPolicy(attempts=1)
LEASE = Lease("items/42", "jo", None, 5, 30_000, 1, 1, 30_001, 0, session="s")
ITEM = Item("42", "t", status="in_progress", assignee="jo", epoch=5, created_by="jo")


class Recorder:
    """Answers every verb the session rules touch with a canned reply, and keeps the calls."""

    def __init__(self) -> None:
        self.calls: list[Call[Any]] = []
        self.lock = threading.Lock()

    def reply(self, call: Call[Any]) -> Reply:
        with self.lock:
            self.calls.append(call)
        lease, item = LEASE.to_dict(), ITEM.to_dict()
        replies: dict[str, Any] = {
            "acquire": {"lease": {**lease, "key": "k"}},
            "renew": {"lease": {**lease, "key": "k"}},
            "renew_item": {"lease": lease},
            "renew_all": {"renewed": [], "lost": []},
            "release": {"released": True, "lease": None},
            "claim_item": {"item": item, "lease": lease},
            "release_item": {"released": True, "item": item},
            "dispatch_item": {
                "item": item,
                "lease": lease,
                "agent": {**Principal("jo/a", "agent", (), "jo").to_dict(), "token": "tnr_a"},
            },
        }
        return Reply(200, replies[call.op])

    def bodies(self, op: str) -> list[dict[str, Any]]:
        return [dict(c.body or {}) for c in self.calls if c.op == op]

    def send(self, call: Call[Any], timeout: float) -> Reply:
        return self.reply(call)

    def close(self) -> None:
        pass


class AsyncRecorder(Recorder):
    async def send(self, call: Call[Any], timeout: float) -> Reply:  # type: ignore[override]
        return self.reply(call)

    async def close(self) -> None:  # type: ignore[override]
        pass


def test_a_client_object_is_a_random_session_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TENURE_SESSION", raising=False)
    one, two = (tenure.Client("http://127.0.0.1:9", token="t") for _ in range(2))
    assert one.session != two.session
    assert one.session.startswith("py:") and len(one.session.encode()) <= 128
    given = tenure.Client("http://127.0.0.1:9", token="t", session="cron:nightly")
    assert given.session == "cron:nightly"
    assert tenure.Client("http://127.0.0.1:9", token="t", session="").session == ""  # default
    monkeypatch.setenv("TENURE_SESSION", "run:host:7:ab")
    assert tenure.Client("http://127.0.0.1:9", token="t").session == "run:host:7:ab"
    aclient = tenure.AsyncClient("http://127.0.0.1:9", token="t")
    assert aclient.session == "run:host:7:ab"
    asyncio.run(aclient.close())
    for client in (one, two, given):
        client.close()


@pytest.mark.parametrize("bad", ["x" * 129, "line\nbreak", 7])
def test_a_bad_session_is_refused_at_once(bad: Any) -> None:
    with pytest.raises(tenure.InvalidRequest) as err:
        tenure.Client("http://127.0.0.1:9", token="t", session=bad)
    assert err.value.field == "session"


def test_new_sessions_name_the_kind_host_and_process() -> None:
    kind, host, pid, tail = new_session("run").split(":")
    assert kind == "run" and host and pid.isdigit() and len(tail) == 8
    assert len(new_session("cli", pid=False).split(":")) == 3


def test_the_client_sends_its_session_where_it_decides_the_outcome() -> None:
    fake = Recorder()
    client = tenure.Client("http://fake", token="t", retry=FAST, transport=fake, session="s")
    client.acquire("k", ttl_ms=1000)
    client.renew_all()
    client.release("k")
    client.release("k", token=5)
    client.items.claim("42")
    client.items.release("42")
    client.items.release("42", epoch=5)
    client.items.dispatch("42", agent="a")
    client.items.dispatch("42", agent="a", session="agent:h:1")
    assert fake.bodies("acquire") == [{"key": "k", "ttl_ms": 1000, "session": "s"}]
    assert fake.bodies("renew_all") == [{"session": "s"}]
    assert fake.bodies("release") == [{"key": "k", "session": "s"}, {"key": "k", "token": 5}]
    assert fake.bodies("claim_item") == [{"session": "s"}]
    assert fake.bodies("release_item") == [{"session": "s"}, {"epoch": 5}]
    assert [b["session"] for b in fake.bodies("dispatch_item")] == ["s", "agent:h:1"]


def test_held_leases_and_claims_use_the_session_and_release_by_token_and_epoch() -> None:
    fake = Recorder()
    client = tenure.Client("http://fake", token="t", retry=FAST, transport=fake, session="s")
    with client.lease("k", ttl=30):
        pass
    with client.items.work("42", ttl=30):
        pass
    with client.items.work("42", ttl=30) as work:
        work.release()
    assert fake.bodies("acquire")[0]["session"] == "s"
    assert fake.bodies("release") == [{"key": "k", "token": 5}]
    assert fake.bodies("claim_item") == [{"ttl_ms": 30_000, "session": "s"}] * 2
    assert fake.bodies("release_item") == [{"epoch": 5}, {"epoch": 5}]  # never the session's


def test_the_async_client_alike() -> None:
    fake = AsyncRecorder()

    async def main() -> None:
        async with tenure.AsyncClient(
            "http://fake", token="t", retry=FAST, transport=fake, session="s"
        ) as client:
            await client.acquire("k")
            await client.renew_all(["k"])
            await client.release("k")
            await client.items.claim("42")
            await client.items.dispatch("42")
            async with client.lease("k", ttl=30):
                pass
            async with client.items.work("42", ttl=30):
                pass

    asyncio.run(main())
    assert [b["session"] for b in fake.bodies("acquire")] == ["s", "s"]
    assert fake.bodies("renew_all") == [{"keys": ["k"], "session": "s"}]
    assert fake.bodies("release") == [{"key": "k", "session": "s"}, {"key": "k", "token": 5}]
    assert [b["session"] for b in fake.bodies("claim_item")] == ["s", "s"]
    assert fake.bodies("dispatch_item") == [{"session": "s"}]
    assert fake.bodies("release_item") == [{"epoch": 5}]
