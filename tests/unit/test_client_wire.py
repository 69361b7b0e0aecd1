"""The pure half of the client: requests, replies, errors, retry rules; the retry loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

import tenure
from tenure.client import _item_requests as ic
from tenure.client import _transport as tr
from tenure.client import _wire as sh
from tenure.client._transport import RetryPolicy
from tenure.client._wire import Call, Reply, Safety, TransportError
from tenure.client.aio import AsyncHttpTransport
from tenure.client.sync import HttpTransport
from tenure.core.models import (
    Event,
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    Lease,
    LostLease,
    Principal,
    ReleaseResult,
    RenewAllResult,
)
from tenure.verbs import items as iv
from tenure.verbs import leases as lv
from tenure.verbs import principals as pv
from tenure.verbs.ops import Filters

LEASE = Lease("jobs/a", "jo", "run-1", 7, 30_000, 1, 2, 30_002, 3, {"x": [1]}, "live")
FAST = RetryPolicy(attempts=4, budget=5.0, backoff=0.001, max_backoff=0.002)


# requests -----------------------------------------------------------------------------------
def test_keys_in_paths_are_one_encoded_segment() -> None:
    assert lv.GET_LEASE.call(key="jobs/a b?#%").path == "/v1/leases/jobs%2Fa%20b%3F%23%25"
    assert lv.FENCED_READ.call(key="ü").path == "/v1/fenced/%C3%BC"
    assert lv.GET_LEASE.call(key=".").path == "/v1/leases/%2E"
    assert lv.GET_LEASE.call(key="..").path == "/v1/leases/%2E%2E"
    assert lv.GET_LEASE.call(key="a/b").path_args == {"key": "a/b"}
    assert (
        pv.REVOKE_TOKEN.call(name="jo/x", token_id="abc").path == "/v1/principals/jo%2Fx/tokens/abc"
    )
    with pytest.raises(tenure.InvalidRequest) as err:
        lv.GET_LEASE.call(key="")
    assert err.value.field == "key"


def test_bodies_leave_out_what_was_not_given() -> None:
    assert lv.ACQUIRE.call(key="k").body == {"key": "k"}
    call = lv.ACQUIRE.call(key="k", ttl_ms=5000, task="t", meta={"a": 1}, wait_ms=2500)
    assert call.body == {"key": "k", "ttl_ms": 5000, "task": "t", "meta": {"a": 1}, "wait_ms": 2500}
    assert call.wait_s == 2.5
    assert lv.RENEW.call(key="k", token=3).body == {"key": "k", "token": 3}
    assert lv.RENEW_ALL.call().body == {}
    assert lv.RENEW_ALL.call(keys=("a", "b")).body == {"keys": ["a", "b"]}
    assert sh.release("k").body == {"key": "k"}
    assert lv.FENCED_WRITE.call(key="k", token=1, value=None).body == {
        "key": "k",
        "token": 1,
        "value": None,
    }
    assert lv.LIST_LEASES.call(prefix="jobs/").params == {"prefix": "jobs/"}
    expired = sh.events(5, Filters(type="expired"))
    assert expired.params == {"after": 5, "type": "expired", "limit": 100}
    assert pv.ADD_PRINCIPAL.call(name="bo", kind="agent", roles=("admin",)).body == {
        "name": "bo",
        "kind": "agent",
        "roles": ["admin"],
    }
    assert pv.REVOKE_TOKEN.call(name="bo", token_id="t1").method == "DELETE"


def test_sessions_go_with_acquire_claim_dispatch_renew_all_and_tokenless_releases() -> None:
    assert lv.ACQUIRE.call(key="k", session="s1").body == {"key": "k", "session": "s1"}
    assert lv.ACQUIRE.call(key="k", session="").body == {
        "key": "k",
        "session": "",
    }  # the default one
    assert lv.RENEW_ALL.call(session="s1").body == {"session": "s1"}
    assert lv.RENEW_ALL.call(keys=["a"], session="s1").body == {"keys": ["a"], "session": "s1"}
    assert sh.release("k", None, "s1").body == {"key": "k", "session": "s1"}
    assert sh.release("k", 3, "s1").body == {"key": "k", "token": 3}  # the token says which
    assert iv.CLAIM_ITEM.call(id="42", session="s1").body == {"session": "s1"}
    assert iv.DISPATCH_ITEM.call(id="42", agent="r1", session="s2").body == {
        "agent": "r1",
        "session": "s2",
    }
    with_epoch, without = ic.release_item("42", 7, "s1"), ic.release_item("42", None, "s1")
    assert (with_epoch.body, without.body) == ({"epoch": 7}, {"session": "s1"})
    assert (with_epoch.safety, without.safety) == (Safety.IDEMPOTENT, Safety.UNSAFE)


def test_extend_takes_epoch_ms_or_an_aware_datetime() -> None:
    when = datetime(2030, 1, 1, tzinfo=UTC)
    assert lv.EXTEND.call(key="k", token=1, until=when).body == {
        "key": "k",
        "token": 1,
        "until": int(when.timestamp() * 1000),
    }
    assert lv.EXTEND.call(key="k", token=1, by_ms=10).body == {"key": "k", "token": 1, "by_ms": 10}
    with pytest.raises(tenure.InvalidRequest) as err:
        lv.EXTEND.call(key="k", token=1, until=datetime(2030, 1, 1))
    assert err.value.field == "until"


def test_how_safe_each_call_is_to_repeat() -> None:
    unsafe = [
        lv.ACQUIRE.call(key="k"),
        sh.release("k"),
        lv.FORCE_RELEASE.call(key="k", reason="why"),
        lv.FENCED_WRITE.call(key="k", token=1, value=2),
        pv.ADD_PRINCIPAL.call(name="p"),
        pv.REVOKE_TOKEN.call(name="p", token_id="t"),
    ]
    safe = [
        lv.RENEW.call(key="k", token=1),
        lv.RENEW_ALL.call(),
        lv.EXTEND.call(key="k", token=1, by_ms=5),
        sh.release("k", 1),
        lv.FENCED_WRITE.call(key="k", token=1, value=2, op_id="op"),
        lv.GET_LEASE.call(key="k"),
        lv.LIST_LEASES.call(),
        lv.FENCED_READ.call(key="k"),
        sh.events(),
        pv.WHOAMI.call(),
    ]
    assert all(c.safety is Safety.UNSAFE for c in unsafe)
    assert all(c.safety is Safety.IDEMPOTENT for c in safe)


def test_bodies_that_are_not_json_name_the_field() -> None:
    with pytest.raises(tenure.InvalidRequest) as err:
        sh.encode_body({"key": "k", "token": 1, "value": float("nan")})
    assert err.value.field == "value"
    with pytest.raises(tenure.InvalidRequest) as err:
        sh.encode_body({"key": "k", "meta": {"x": object()}})
    assert err.value.field == "meta"
    assert json.loads(sh.encode_body({"key": "ü"})) == {"key": "ü"}


# replies ------------------------------------------------------------------------------------
def ok(call: Call[Any], data: Any) -> Any:
    return sh.interpret(call, Reply(200, json.loads(json.dumps(data))))


def test_replies_parse_into_the_frozen_models() -> None:
    lost = LostLease("jobs/b", "expired", 4)
    assert ok(lv.ACQUIRE.call(key="k"), {"lease": LEASE.to_dict()}) == LEASE
    theirs = replace(LEASE, session="py:web-1:42:ab")
    assert theirs.to_dict()["session"] == "py:web-1:42:ab"
    assert ok(lv.GET_LEASE.call(key="k"), {"lease": theirs.to_dict()}) == theirs
    assert ok(lv.LIST_LEASES.call(), {"leases": [LEASE.to_dict()]}).entries == [LEASE]
    both = RenewAllResult((LEASE,), (lost,))
    assert ok(lv.RENEW_ALL.call(), both.to_dict()) == both
    ext = ExtendResult(LEASE, True, False, 5, 6)
    assert ok(lv.EXTEND.call(key="k", token=1, by_ms=1), ext.to_dict()) == ext
    for rel in (ReleaseResult(True, LEASE), ReleaseResult(False, None)):
        assert ok(sh.release("k"), rel.to_dict()) == rel
    forced = ForceReleaseResult(LEASE, "root", "stuck")
    assert ok(lv.FORCE_RELEASE.call(key="k", reason="stuck"), forced.to_dict()) == forced
    write = FencedWrite("k", 7, {"v": [1, 2]}, 3, True)
    assert ok(lv.FENCED_WRITE.call(key="k", token=7, value=1), write.to_dict()) == write
    value = FencedValue("k", 7, "x", 3, 99)
    assert ok(lv.FENCED_READ.call(key="k"), value.to_dict()) == value
    event = Event(1, 2, "acquired", "k", "jo", None, 7, "jo", None, {"ttl_ms": 5})
    assert ok(sh.events(), {"events": [event.to_dict()], "next": 1}) == [event]
    me = Principal("jo", "human", ("admin",), None)
    assert ok(pv.WHOAMI.call(), {"principal": me.to_dict()}) == me
    issued = ok(
        pv.ADD_PRINCIPAL.call(name="jo"),
        {"principal": me.to_dict(), "token": "tnr_x", "token_id": "x"},
    )
    assert issued == sh.IssuedToken(me, "x", "tnr_x")
    assert sh.interpret(pv.REVOKE_TOKEN.call(name="jo", token_id="x"), Reply(204)) is None


def test_replies_with_more_fields_still_parse() -> None:
    data = {"lease": {**LEASE.to_dict(), "new_field": 1}, "other": 2}
    assert ok(lv.GET_LEASE.call(key="k"), data) == LEASE
    older = {k: v for k, v in LEASE.to_dict().items() if k != "session"}
    assert ok(lv.GET_LEASE.call(key="k"), {"lease": older}) == LEASE  # a server without sessions


ERRORS = [
    tenure.LeaseHeld("held", key="k", holder="bo", task="t", expires_at=9, token=3),
    tenure.LeaseHeld(
        "held", key="k", holder="bo", session="py:h:1:ab", task="t", expires_at=9, token=3
    ),
    tenure.NotHolder("nh", key="k", holder="bo", session="run:h:2:cd", task=None, expires_at=9),
    tenure.IdempotencyConflict("again", key="k", op_id="op-1", token=4, version=2),
    tenure.StaleToken("stale", key="k", token=1, current_token=2),
    tenure.NotHolder("nh", key="k", holder="bo", task=None, expires_at=9),
    tenure.LeaseLost("gone", key="k", reason="force_released", token=4),
    tenure.InvalidRequest("bad", field="ttl_ms"),
    tenure.TooLarge("big", field="meta", limit=4096, size=5000),
    tenure.Unauthenticated("who"),
    tenure.Forbidden("no", actor="bo", reason="admin role required"),
    tenure.NotFound("none", key="k", what="lease"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: e.code)
def test_problem_replies_raise_the_servers_error_with_its_fields(
    error: tenure.TenureError,
) -> None:
    reply = Reply(error.status, json.loads(json.dumps(error.to_problem())), "")
    with pytest.raises(type(error)) as raised:
        sh.interpret(lv.GET_LEASE.call(key="k"), reply)
    assert type(raised.value) is type(error)
    assert raised.value.info() == error.info()
    assert raised.value.detail == error.detail


def test_failures_without_a_problem_document_are_unexpected_replies() -> None:
    reply = tr.reply_from(502, "text/html", b"<h1>Bad Gateway</h1>", None)
    with pytest.raises(sh.UnexpectedReply) as raised:
        sh.interpret(lv.RENEW.call(key="k", token=1), reply)
    assert raised.value.http_status == 502
    assert "Bad Gateway" in (raised.value.body or "")
    assert isinstance(raised.value, TransportError) and isinstance(raised.value, tenure.TenureError)
    with pytest.raises(sh.UnexpectedReply):
        sh.interpret(lv.RENEW.call(key="k", token=1), Reply(200, {"nope": 1}))


def test_loss_verdicts() -> None:
    assert sh.is_loss(tenure.LeaseLost(reason="expired"))
    assert sh.loss_reason(tenure.LeaseLost(reason="expired")) == "expired"
    assert sh.loss_reason(tenure.LeaseLost()) == "lease_lost"
    assert sh.loss_reason(tenure.NotHolder(holder="bo")) == "not_holder"
    assert sh.is_loss(tenure.StaleToken()) and sh.is_loss(tenure.NotFound())
    # a revoked token can renew nothing (a dispatched agent's ends with its claim)
    assert sh.is_loss(tenure.Unauthenticated())
    assert sh.loss_reason(tenure.Unauthenticated()) == "unauthenticated"
    assert not sh.is_loss(tenure.Forbidden())
    assert not sh.is_loss(TransportError(sent=True))


# retry rules --------------------------------------------------------------------------------
def test_which_failures_are_retried() -> None:
    acquire, renew = lv.ACQUIRE.call(key="k"), lv.RENEW.call(key="k", token=1)
    never_sent, maybe_sent = TransportError(sent=False), TransportError(sent=True)
    for call in (acquire, renew):
        assert tr.retryable(call, error=never_sent)
        assert tr.retryable(call, reply=Reply(429))
        assert tr.retryable(call, reply=Reply(503))
        assert not tr.retryable(call, reply=Reply(409))
        assert not tr.retryable(call, error=tenure.LeaseHeld())
        assert not tr.retryable(call, error=sh.UnexpectedReply(sent=True))
    assert tr.retryable(renew, error=maybe_sent)
    assert not tr.retryable(acquire, error=maybe_sent)
    for status in (500, 502, 504):
        assert tr.retryable(renew, reply=Reply(status))
        assert not tr.retryable(acquire, reply=Reply(status))


def test_backoff_grows_with_jitter_and_stops_at_the_budget() -> None:
    policy = RetryPolicy(attempts=10, budget=3.0, backoff=0.1, max_backoff=1.0)
    assert policy.delay(1, lambda: 0.0) == pytest.approx(0.05)
    assert policy.delay(1, lambda: 1.0) == pytest.approx(0.1)
    assert policy.delay(3, lambda: 1.0) == pytest.approx(0.4)
    assert policy.delay(30, lambda: 1.0) == pytest.approx(1.0)
    renew = lv.RENEW.call(key="k", token=1)
    error = TransportError(sent=True)
    assert policy.next_delay(renew, 1, 0.0, error=error) is not None
    assert policy.next_delay(renew, 10, 0.0, error=error) is None  # out of attempts
    assert policy.next_delay(renew, 2, 2.95, error=error, rng=lambda: 1.0) is None  # budget
    slow = Reply(503, retry_after=1.5)
    assert policy.next_delay(renew, 1, 0.0, reply=slow) == pytest.approx(1.5)
    assert policy.next_delay(renew, 1, 2.0, reply=slow) is None
    assert tr.retry_after("2") == 2.0 and tr.retry_after("Wed, 21 Oct 2015") is None
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


class Scripted:
    """A transport that answers from a script: a Reply, or an exception to raise."""

    def __init__(self, *script: Reply | BaseException) -> None:
        self.script = list(script)
        self.calls: list[tuple[Call[Any], float]] = []

    def _next(self, call: Call[Any], timeout: float) -> Reply:
        self.calls.append((call, timeout))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, BaseException):
            raise step
        return step

    def send(self, call: Call[Any], timeout: float) -> Reply:
        return self._next(call, timeout)

    def close(self) -> None:
        pass


class AsyncScripted(Scripted):
    async def send(self, call: Call[Any], timeout: float) -> Reply:  # type: ignore[override]
        return self._next(call, timeout)

    async def close(self) -> None:  # type: ignore[override]
        pass


LEASE_REPLY = Reply(200, {"lease": LEASE.to_dict()})


def client(transport: Scripted, retry: RetryPolicy = FAST) -> tenure.Client:
    return tenure.Client("http://tenure.test", token="t", retry=retry, transport=transport)


def test_renew_is_retried_after_an_ambiguous_failure() -> None:
    transport = Scripted(TransportError(sent=True), Reply(502, None, "bad gateway"), LEASE_REPLY)
    assert client(transport).renew("jobs/a", 7) == LEASE
    assert len(transport.calls) == 3


def test_acquire_is_not_retried_once_it_may_have_reached_the_server() -> None:
    transport = Scripted(TransportError("read timeout", sent=True), LEASE_REPLY)
    with pytest.raises(TransportError) as raised:
        client(transport).acquire("jobs/a")
    assert raised.value.sent is True
    assert len(transport.calls) == 1
    transport = Scripted(Reply(500, {"code": "error", "detail": "boom"}), LEASE_REPLY)
    with pytest.raises(tenure.TenureError):
        client(transport).acquire("jobs/a")
    assert len(transport.calls) == 1


def test_acquire_is_retried_when_the_request_never_arrived_or_was_refused() -> None:
    transport = Scripted(TransportError(sent=False), Reply(429, None), Reply(503), LEASE_REPLY)
    assert client(transport).acquire("jobs/a") == LEASE
    assert len(transport.calls) == 4


def test_retries_stop_after_the_attempts() -> None:
    transport = Scripted(TransportError("down", sent=False))
    with pytest.raises(TransportError):
        client(transport).renew("k", 1)
    assert len(transport.calls) == FAST.attempts
    transport = Scripted(Reply(503, {"code": "error", "detail": "busy"}))
    with pytest.raises(tenure.TenureError) as raised:
        client(transport).renew("k", 1)
    assert raised.value.detail == "busy"
    assert len(transport.calls) == FAST.attempts


def test_refusals_are_never_retried() -> None:
    held = tenure.LeaseHeld("held", key="k", holder="bo", task="t", expires_at=9, token=1)
    transport = Scripted(Reply(409, held.to_problem()), LEASE_REPLY)
    with pytest.raises(tenure.LeaseHeld) as raised:
        client(transport).acquire("k")
    assert (raised.value.holder, raised.value.task, raised.value.expires_at) == ("bo", "t", 9)
    assert len(transport.calls) == 1


def test_timeouts_reach_the_transport() -> None:
    transport = Scripted(LEASE_REPLY)
    tenure.Client("http://x", token="t", timeout=3.5, transport=transport).get_lease("k")
    assert transport.calls[0][1] == 3.5


def test_async_client_retries_alike() -> None:
    async def main() -> None:
        transport = AsyncScripted(TransportError(sent=True), LEASE_REPLY)
        async with tenure.AsyncClient("http://x", retry=FAST, transport=transport) as c:
            assert await c.renew("jobs/a", 7) == LEASE
            assert len(transport.calls) == 2
            transport.script = [TransportError(sent=True), LEASE_REPLY]
            with pytest.raises(TransportError):
                await c.acquire("jobs/a")

    asyncio.run(main())


# where the client connects --------------------------------------------------------------------
def test_target_reads_url_and_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENURE_URL", "http://lease.example:7000/")
    monkeypatch.setenv("TENURE_TOKEN", "tnr_env")
    assert tr.target(None, None, None) == tr.Target("http://lease.example:7000", "tnr_env")
    assert tr.target("http://lease.example:7000", None, None).token == "tnr_env"
    assert tr.target(None, "tnr_mine", None).token == "tnr_mine"
    # the environment's token never goes to a server it was not configured for
    assert tr.target("http://elsewhere:1", None, None).token is None
    monkeypatch.delenv("TENURE_URL")
    monkeypatch.delenv("TENURE_TOKEN")
    assert tr.target(None, None, None) == tr.Target("http://127.0.0.1:7676", None)


def test_target_checks_direct_mode_arguments() -> None:
    direct = tr.target("sqlite:///x.db", None, "cron")
    assert direct.direct and direct.principal == "cron"
    assert tr.target("postgresql://db/x", None, "cron").direct
    with pytest.raises(ValueError, match="principal"):
        tr.target("sqlite:///x.db", None, None)
    with pytest.raises(ValueError, match="token"):
        tr.target("sqlite:///x.db", "tnr_x", "cron")
    with pytest.raises(ValueError, match="principal"):
        tr.target("http://x", "t", "cron")
    with pytest.raises(ValueError, match="unsupported"):
        tr.target("ftp://x", "t", None)


# HTTP details ---------------------------------------------------------------------------------
def mock(handler: Callable[[httpx.Request], httpx.Response]) -> tenure.Client:
    transport = HttpTransport("http://tenure.test", "tnr_secret", http=httpx.MockTransport(handler))
    return tenure.Client(
        "http://tenure.test", token="tnr_secret", transport=transport, retry=FAST, session="s-1"
    )


def test_http_requests_carry_the_token_and_json() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/v1/leases":
            return httpx.Response(200, json={"leases": []})
        return httpx.Response(200, json={"lease": LEASE.to_dict()})

    assert mock(handler).acquire("jobs/a", ttl_ms=5000, wait_ms=2000) == LEASE
    request = seen[0]
    assert request.headers["authorization"] == "Bearer tnr_secret"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("tenure-python/")
    body = json.loads(request.content)
    assert body == {"key": "jobs/a", "ttl_ms": 5000, "wait_ms": 2000, "session": "s-1"}
    assert request.extensions["timeout"]["read"] == pytest.approx(12.0)  # 10 s + the long poll
    mock(handler).get_lease("a/b c")
    assert seen[1].url.raw_path == b"/v1/leases/a%2Fb%20c"
    assert mock(handler).list_leases(prefix="jobs/", holder="jo") == []
    assert seen[2].url.params == httpx.QueryParams({"prefix": "jobs/", "holder": "jo"})


def test_http_failures_become_transport_errors() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(TransportError) as raised:
        mock(refuse).renew("k", 1)
    assert raised.value.sent is False and raised.value.path == "/v1/leases/renew"

    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(TransportError) as raised:
        mock(hang).acquire("k")
    assert raised.value.sent is True


def test_problem_documents_over_http() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        err = tenure.StaleToken("stale", key="k", token=1, current_token=5)
        return httpx.Response(
            409, json=err.to_problem(), headers={"content-type": "application/problem+json"}
        )

    with pytest.raises(tenure.StaleToken) as raised:
        mock(handler).fenced_write("k", 1, {"v": 1})
    assert raised.value.current_token == 5


def test_async_http_transport() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/me":
            return httpx.Response(200, json={"principal": Principal("jo").to_dict()})
        raise httpx.ConnectTimeout("no", request=request)

    async def main() -> None:
        transport = AsyncHttpTransport("http://t", "tok", http=httpx.MockTransport(handler))
        async with tenure.AsyncClient("http://t", token="tok", transport=transport) as c:
            assert await c.me() == Principal("jo")
            with pytest.raises(TransportError) as raised:
                await c.get_lease("k")
            assert raised.value.sent is False

    asyncio.run(main())
