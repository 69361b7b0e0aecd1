"""Everything stored reads back: every JSON value the validators accept (a lease's ``meta``, a
fenced ``value``, progress ``data``, an item's ``result``), near the bounds included, is stored
and then shown by every reply that includes it, encoded as the server encodes its replies, on
both backends. What cannot be shown is refused at the door, naming the field, and changes
nothing; a value an older version stored too deep is shown clipped instead of failing a read."""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenure import InvalidRequest, Service
from tenure.core.validate import MAX_JSON_DEPTH
from tenure.server.http.deps import dumps
from tenure.service.principals import Principals
from tenure.store.rows import MAX_STORED_DEPTH, TOO_DEEP
from tenure.verbs import items as iv
from tenure.verbs import leases as lv
from tenure.verbs import ops as ov
from tenure.verbs.table import Services, Verb

from ._items import ADMIN, ALICE, org, snapshot

TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=6)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.sampled_from([2**63 - 1, -(2**63), 2**64, 2**53 + 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
    | st.just("\\u0000 \\\\u0000 \t\n\u2028 \U0001f600")  # escapes that are only text
)
JSON = st.recursive(
    SCALARS,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=3),
    max_leaves=10,
)


def depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        kids = node.values() if isinstance(node, dict) else node
        stack.extend((k, level + 1) for k in kids if isinstance(k, dict | list))
    return deepest


def padded(value: Any, levels: int) -> Any:
    """``value`` wrapped in lists and objects until it nests ``levels`` deep (or as it is)."""
    for n in range(max(0, levels - depth(value))):
        value = [value] if n % 2 else {"k": value}
    return value


# values as deep as allowed (and a little less), and shallow ones
NEAR = st.builds(padded, JSON, st.integers(MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH))
VALUE = JSON | NEAR
# an object at most MAX_JSON_DEPTH levels deep: its members one level less
META = st.dictionaries(
    TEXT,
    JSON | st.builds(padded, JSON, st.integers(MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH - 1)),
    max_size=3,
)

READBACK = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_serial = itertools.count()


def wire(services: Services, verb: Verb[Any, Any], who: Any, **args: Any) -> Any:
    """The reply of ``verb`` as the server sends it (its JSON, by the server's encoder)."""
    out = verb(services, who, verb.input.model_validate(args))
    raw = out if isinstance(out, bytes) else dumps(out or {})
    return json.loads(raw)


@pytest.fixture
def services(make_service: Callable[..., Service]) -> Services:
    service = org(make_service)
    return Services(service, Principals(service.store))


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


@READBACK
@given(meta=META, value=VALUE, data=META, result=VALUE)
def test_every_accepted_value_is_shown_by_every_reply(
    services: Services, meta: dict[str, Any], value: Any, data: dict[str, Any], result: Any
) -> None:
    n = next(_serial)
    key, other = f"jobs/r{n}", f"jobs/o{n}"
    s = services
    lease = wire(s, lv.ACQUIRE, ALICE, key=key, meta=meta)["lease"]
    assert lease["meta"] == as_json(meta)
    token = lease["token"]
    wire(s, lv.ACQUIRE, ALICE, key=other, meta=meta)
    assert wire(s, lv.FENCED_WRITE, ALICE, key=key, token=token, value=value)["value"] == (
        as_json(value)
    )
    assert wire(s, lv.FENCED_READ, ALICE, key=key)["value"] == as_json(value)
    assert wire(s, lv.GET_LEASE, ALICE, key=key)["lease"]["meta"] == as_json(meta)
    listed = wire(s, lv.LIST_LEASES, ALICE, prefix=key)["leases"]
    assert [x["meta"] for x in listed] == [as_json(meta)]
    renewed = wire(s, lv.RENEW_ALL, ALICE, keys=[key])["renewed"]
    assert [x["meta"] for x in renewed] == [as_json(meta)]
    wire(s, lv.RENEW_ALL, ALICE)  # every live lease of alice's: SQLite writes this JSON itself
    forced = wire(s, lv.FORCE_RELEASE, ADMIN, key=other, reason="readback")
    assert forced["lease"]["meta"] == as_json(meta)

    item = wire(s, iv.CREATE_ITEM, ALICE, title=f"item {n}")["item"]["id"]
    epoch = wire(s, iv.CLAIM_ITEM, ALICE, id=item)["lease"]["token"]
    shown = wire(s, iv.PROGRESS_ITEM, ALICE, id=item, epoch=epoch, message="m", data=data)
    assert shown["item"]["progress"]["data"] == as_json(data)
    assert wire(s, iv.GET_ITEM, ALICE, id=item)["item"]["progress"]["data"] == as_json(data)
    wire(s, iv.LIST_ITEMS, ALICE)
    wire(s, iv.MY_QUEUE, ALICE)
    wire(s, iv.BRIEFING, ALICE)
    done = wire(s, iv.COMPLETE_ITEM, ALICE, id=item, epoch=epoch, result=result)
    assert done["item"]["result"] == as_json(result)
    assert wire(s, iv.GET_ITEM, ALICE, id=item)["item"]["result"] == as_json(result)
    wire(s, iv.LIST_ITEMS, ALICE, status="done")
    events = wire(s, ov.EVENTS, ADMIN, key=f"items/{item}", limit=1000)["events"]
    assert [e["data"]["data"] for e in events if e["type"] == "progress"] == [as_json(data)]
    assert TOO_DEEP not in json.dumps(wire(s, ov.EVENTS, ADMIN, limit=1000))  # nothing clipped
    wire(s, lv.RELEASE, ALICE, key=key)


def nested(levels: int) -> Any:
    return padded(1, levels)


REFUSED: list[tuple[str, Callable[[Service, int], object], str]] = [
    ("meta too deep", lambda s, t: s.acquire("alice", "jobs/x", meta={"m": nested(64)}), "meta"),
    (
        "meta far too deep",
        lambda s, t: s.acquire("alice", "jobs/x", meta={"m": nested(600)}),
        "meta",
    ),
    (
        "meta 100k deep",
        lambda s, t: s.acquire("alice", "jobs/x", meta={"m": nested(10**5)}),
        "meta",
    ),
    ("meta NUL", lambda s, t: s.acquire("alice", "jobs/x", meta={"a": ["\x00"]}), "meta"),
    ("meta NUL key", lambda s, t: s.acquire("alice", "jobs/x", meta={"a": {"\x00": 1}}), "meta"),
    ("meta int key", lambda s, t: s.acquire("alice", "jobs/x", meta={"a": {1: 1}}), "meta"),
    ("value too deep", lambda s, t: s.write("alice", "jobs/held", t, nested(65)), "value"),
    ("value 100k deep", lambda s, t: s.write("alice", "jobs/held", t, nested(10**5)), "value"),
    ("value NUL", lambda s, t: s.write("alice", "jobs/held", t, "a\x00"), "value"),
    ("value big int", lambda s, t: s.write("alice", "jobs/held", t, 10**5000), "value"),
]


@pytest.mark.parametrize(("call", "field"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_what_cannot_be_shown_is_refused_naming_the_field(
    service: Service, call: Callable[[Service, int], object], field: str
) -> None:
    token = service.acquire("alice", "jobs/held").token
    service.write("alice", "jobs/held", token, {"v": 1})
    before = (service.list(), service.read("jobs/held"), service.events(limit=1000))
    with pytest.raises(InvalidRequest) as caught:
        call(service, token)
    assert caught.value.field == field and caught.value.status == 422
    assert (service.list(), service.read("jobs/held"), service.events(limit=1000)) == before


def test_progress_and_results_too_deep_or_with_nul_are_refused(services: Services) -> None:
    s = services.leases
    item = s.items.create(ALICE, "job", id="job").id
    epoch = s.items.claim(ALICE, item).lease.token
    before = snapshot(s, item)
    for call, field in [
        (lambda: s.items.progress(ALICE, item, epoch, "m", data={"d": nested(64)}), "data"),
        (lambda: s.items.progress(ALICE, item, epoch, "m", data={"d": "\x00"}), "data"),
        (lambda: s.items.complete(ALICE, item, epoch, result=nested(65)), "result"),
        (lambda: s.items.complete(ALICE, item, epoch, result={"r": "\x00"}), "result"),
    ]:
        with pytest.raises(InvalidRequest) as caught:
            call()
        assert caught.value.field == field
        assert snapshot(s, item) == before
    wire(services, iv.LIST_ITEMS, ALICE)  # the listing that reads progress in SQL


def _poke(url: str, sql: str, text: str) -> None:
    """Write ``text`` into the database behind the service's back (an older version's row)."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(sql.replace("%s", "?"), (text,))
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql, (text,))  # type: ignore[arg-type]


def test_a_row_stored_too_deep_by_an_older_version_is_shown_clipped(
    make_service: Callable[..., Service], store_url: str
) -> None:
    service = org(make_service)
    s = Services(service, Principals(service.store))
    service.acquire("alice", "jobs/old")
    service.acquire("alice", "jobs/fine", meta={"ok": 1})
    token = service.acquire("alice", "jobs/value").token
    service.write("alice", "jobs/value", token, 1)
    deep = json.dumps({"x": nested(600), "y": 2})
    _poke(store_url, "UPDATE tenure_leases SET meta = %s WHERE key = 'jobs/old'", deep)
    _poke(store_url, "UPDATE tenure_fenced SET value = %s WHERE key = 'jobs/value'", deep)
    _poke(
        store_url,
        "UPDATE tenure_leases SET meta = %s WHERE key = 'jobs/value'",
        "[" * 5000 + "]" * 5000,
    )

    listed = {x["key"]: x["meta"] for x in wire(s, lv.LIST_LEASES, ALICE)["leases"]}
    assert listed["jobs/fine"] == {"ok": 1}  # the others still read as they are
    old = listed["jobs/old"]
    assert old["y"] == 2 and depth(old) == MAX_STORED_DEPTH and TOO_DEEP in json.dumps(old)
    assert listed["jobs/value"] == {"": TOO_DEEP}
    assert depth(wire(s, lv.FENCED_READ, ALICE, key="jobs/value")["value"]) == MAX_STORED_DEPTH
    forced = wire(s, lv.FORCE_RELEASE, ADMIN, key="jobs/old", reason="poisoned")
    assert forced["lease"]["key"] == "jobs/old"
