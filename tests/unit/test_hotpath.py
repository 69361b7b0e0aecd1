"""The lean path of the hot lease verbs takes only bodies the route's strict model accepts;
everything else goes on to FastAPI (which answers with its own problem response)."""

from __future__ import annotations

import json

import pytest

from tenure.server.hotpath import bearer, json_body, parse
from tenure.server.schemas import MAX_INT, MAX_WAIT_MS

ACQUIRE, RENEW, RELEASE = "/v1/leases/acquire", "/v1/leases/renew", "/v1/leases/release"


def body(**fields: object) -> bytes:
    return json.dumps(fields).encode()


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        (ACQUIRE, body(key="k")),
        (ACQUIRE, body(key="k", ttl_ms=1, task="t", meta={"a": [1]}, wait_ms=0)),
        (ACQUIRE, body(key="k", ttl_ms=MAX_INT, task=None, meta=None, wait_ms=MAX_WAIT_MS)),
        (RENEW, body(key="k", token=1)),
        (RENEW, body(key="k", token=MAX_INT, ttl_ms=5)),
        (RELEASE, body(key="k")),
        (RELEASE, body(key="k", token=None)),
    ],
)
def test_takes_what_the_model_accepts(path: str, raw: bytes) -> None:
    assert parse(path, raw) == json.loads(raw)


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        (ACQUIRE, b"not json"),
        (ACQUIRE, b"[]"),
        (ACQUIRE, body()),
        (ACQUIRE, body(key=None)),
        (ACQUIRE, body(key=1)),
        (ACQUIRE, body(key="k", extra=1)),
        (ACQUIRE, body(key="k", ttl_ms=0)),
        (ACQUIRE, body(key="k", ttl_ms=MAX_INT + 1)),
        (ACQUIRE, body(key="k", ttl_ms=True)),
        (ACQUIRE, body(key="k", ttl_ms=30.0)),
        (ACQUIRE, body(key="k", ttl_ms="30")),
        (ACQUIRE, body(key="k", wait_ms=-1)),
        (ACQUIRE, body(key="k", wait_ms=MAX_WAIT_MS + 1)),
        (ACQUIRE, body(key="k", meta=[])),
        (ACQUIRE, body(key="k", task=5)),
        (RENEW, body(key="k")),
        (RENEW, body(key="k", token=0)),
        (RENEW, body(key="k", token=None)),
        (RENEW, body(key="k", token=False)),
        (RELEASE, body(key="k", token=-1)),
        (RELEASE, body(key="k", ttl_ms=5)),
    ],
)
def test_leaves_everything_else_to_fastapi(path: str, raw: bytes) -> None:
    assert parse(path, raw) is None


def test_bearer_and_content_type_as_fastapi_reads_them() -> None:
    def scope(*headers: tuple[bytes, bytes]) -> dict[str, object]:
        return {"headers": list(headers)}

    assert bearer(scope((b"authorization", b"Bearer tnr_x"))) == "tnr_x"
    assert bearer(scope((b"authorization", b"bearer tnr_x"))) == "tnr_x"
    assert bearer(scope((b"authorization", b"Basic abc"))) is None
    assert bearer(scope((b"authorization", b"Bearer"))) is None
    assert bearer(scope()) is None
    assert json_body(scope())
    assert json_body(scope((b"content-type", b"application/json")))
    assert not json_body(scope((b"content-type", b"application/x-www-form-urlencoded")))
    assert not json_body(scope((b"content-type", b"text/plain")))


@pytest.mark.parametrize(
    "raw",
    [
        b'{"key": "k", "meta": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
        b"[" * 5_000 + b"]" * 5_000,
        b'{"key": "\xff\xfe"}',
        b'{"key": "k\\ud800"}',
        b'{"key": "k\\uD83D\\uDE00"}',
    ],
    ids=["deep-meta", "deep", "invalid-utf8", "lone-surrogate", "surrogate-pair"],
)
def test_hostile_bodies_go_to_fastapi(raw: bytes) -> None:
    assert parse(ACQUIRE, raw) is None
