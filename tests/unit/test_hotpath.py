"""The lean path of the hot lease verbs takes only bodies the route's strict model accepts;
everything else goes on to FastAPI (which answers with its own problem response)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tenure.core.models import Lease, Principal, ReleaseResult
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import InvalidRequest
from tenure.server.http.deps import dumps
from tenure.server.http.hotpath import HotIn, bearer, job, json_body, parse
from tenure.service.leases import Service
from tenure.verbs.fields import MAX_INT

ACQUIRE, RENEW, RELEASE = "/v1/leases/acquire", "/v1/leases/renew", "/v1/leases/release"
P = Principal("p")


def body(**fields: object) -> bytes:
    return json.dumps(fields).encode()


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        (ACQUIRE, body(key="k")),
        (ACQUIRE, body(key="k", ttl_ms=1, task="t", meta={"a": [1]}, wait_ms=0)),
        (ACQUIRE, body(key="k", ttl_ms=MAX_INT, task=None, meta=None, wait_ms=MAX_WAIT_MS)),
        (ACQUIRE, body(key="k", session="web-2")),
        (ACQUIRE, body(key="k", session="")),
        (ACQUIRE, body(key="k", session=None)),
        (RENEW, body(key="k", token=1)),
        (RENEW, body(key="k", token=MAX_INT, ttl_ms=5)),
        (RELEASE, body(key="k")),
        (RELEASE, body(key="k", token=None)),
        (RELEASE, body(key="k", session="web-2")),
        (RELEASE, body(key="k", token=3, session="")),
    ],
)
def test_takes_what_the_model_accepts(path: str, raw: bytes) -> None:
    args = parse(path, raw)
    assert args is not None
    assert args.model_dump(exclude_unset=True) == json.loads(raw)


def test_the_model_decides_alike_on_whole_floats() -> None:
    """``30.0`` for an integer: the model takes it as ``30`` (its route answers the same)."""
    args = parse(ACQUIRE, body(key="k", ttl_ms=30.0))
    assert args is not None
    assert args.model_dump(exclude_unset=True) == {"key": "k", "ttl_ms": 30}


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
        (ACQUIRE, body(key="k", ttl_ms=30.5)),
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
        (ACQUIRE, body(key="k", session=1)),
        (ACQUIRE, body(key="k", session=["web-2"])),
        (ACQUIRE, body(key="k", session=True)),
        (RELEASE, body(key="k", session={"id": "web-2"})),
        (RENEW, body(key="k", token=1, session="web-2")),  # renew is by token: no session
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
    ],
    ids=["deep-meta", "deep", "invalid-utf8", "lone-surrogate"],
)
def test_hostile_bodies_go_to_fastapi(raw: bytes) -> None:
    assert parse(ACQUIRE, raw) is None


def test_a_surrogate_pair_is_the_character_it_encodes() -> None:
    args = parse(ACQUIRE, b'{"key": "k\\uD83D\\uDE00"}')
    assert args is not None and args.key == "k\U0001f600"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
leases = st.builds(
    Lease,
    key=st.text(min_size=1),
    holder=st.text(min_size=1),
    session=st.text(max_size=8),
    task=st.none() | st.text(),
    token=st.integers(1, MAX_INT),
    ttl_ms=st.integers(1, MAX_INT),
    acquired_at=st.integers(0, MAX_INT),
    renewed_at=st.integers(0, MAX_INT),
    expires_at=st.integers(0, MAX_INT),
    renewals=st.integers(0, MAX_INT),
    meta=st.dictionaries(st.text(), json_values, max_size=4),
    state=st.sampled_from(["live", "released", "expired", "force_released", "taken_over"]),
)


def state_of(service: object, me: Principal) -> object:
    """What :func:`job` reads of the server's state."""
    return SimpleNamespace(
        services=SimpleNamespace(leases=service),
        executor=SimpleNamespace(principal=lambda token, auth: me),
        waiters=SimpleNamespace(notify=lambda key: None),
    )


def args_of(path: str, **fields: object) -> HotIn:
    args = parse(path, body(**fields))
    assert args is not None
    return args


@settings(max_examples=300, deadline=None)
@given(leases)
def test_lease_replies_are_what_the_generic_encoder_writes(lease: Lease) -> None:
    state = state_of(SimpleNamespace(acquire=lambda *a: lease, renew=lambda *a: lease), P)
    for path, fields in ((ACQUIRE, {}), (RENEW, {"token": 1})):
        call = job(state, path, P, args_of(path, key="k", **fields))  # type: ignore[arg-type]
        assert call() == dumps({"lease": lease.to_dict()})


@settings(max_examples=100, deadline=None)
@given(st.booleans(), st.none() | leases)
def test_release_replies_are_what_the_generic_encoder_writes(
    released: bool, lease: Lease | None
) -> None:
    state = state_of(SimpleNamespace(release=lambda *a: ReleaseResult(released, lease)), P)
    call = job(state, RELEASE, P, args_of(RELEASE, key="k"))  # type: ignore[arg-type]
    assert call() == dumps(ReleaseResult(released, lease).to_dict())


@pytest.mark.parametrize("session", [None, "", "web-2"])
def test_the_session_reaches_the_service(session: str | None) -> None:
    """Acquire and release pass the body's ``session`` on (absent: ``None``, the default)."""
    calls: list[tuple[object, ...]] = []
    lease = Lease("k", "p", None, 7, 1, 1, 1, 1, 0, session=session or "")

    def acquire(*args: object) -> Lease:
        calls.append(("acquire", *args[1:]))
        return lease

    def release(*args: object) -> ReleaseResult:
        calls.append(("release", *args[1:]))
        return ReleaseResult(True, lease)

    state = state_of(SimpleNamespace(acquire=acquire, release=release), P)
    extra = {} if session is None else {"session": session}
    got = job(state, ACQUIRE, P, args_of(ACQUIRE, key="k", ttl_ms=5, **extra))()  # type: ignore[arg-type]
    assert json.loads(got)["lease"]["session"] == (session or "")
    job(state, RELEASE, P, args_of(RELEASE, key="k", **extra))()  # type: ignore[arg-type]
    acquired = ("acquire", "k", 5, None, None, session, None)  # (scope: absent)
    assert calls == [acquired, ("release", "k", None, session)]


def test_a_meta_the_encoder_refuses_is_refused_alike() -> None:
    lease = Lease("k", "h", None, 1, 1, 1, 1, 1, 0, {"x": float("nan")})
    with pytest.raises(ValueError):
        dumps({"lease": lease.to_dict()})
    state = state_of(SimpleNamespace(acquire=lambda *a: lease), P)
    with pytest.raises(ValueError):
        job(state, ACQUIRE, P, args_of(ACQUIRE, key="k"))()  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["sqlite"])  # the refusal is the service's, on any store
def test_an_item_key_is_refused_and_nothing_changes(service: Service) -> None:
    """The hot path's acquire, renew and release of an ``items/`` key: ``invalid_request``
    naming the key and the item's own verb, before anything changes."""
    alice = Principal("alice", "human")
    service.items.create(alice, "t", id="job")
    epoch = service.items.claim(alice, "job", ttl_ms=60_000).lease.token
    state = state_of(service, alice)
    before = (service.get("items/job"), service.events(0, limit=1000))
    for path, fields, verb in (
        (ACQUIRE, {"ttl_ms": 5000}, "claim"),
        (RENEW, {"token": epoch}, "renew"),
        (RELEASE, {"token": epoch}, "release"),
        (RELEASE, {}, "release"),
    ):
        for key in ("items/job", "items/other"):
            call = job(state, path, alice, args_of(path, key=key, **fields))  # type: ignore[arg-type]
            with pytest.raises(InvalidRequest) as refused:
                call()
            assert (refused.value.field, refused.value.status) == ("key", 422)
            assert f"/v1/items/{key[6:]}/{verb}" in refused.value.detail
    assert (service.get("items/job"), service.events(0, limit=1000)) == before
