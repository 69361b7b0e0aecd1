"""renew-all without keys, its reply written by the database (``Service.renew_all_json``).

The reply must be, once parsed, exactly what ``renew_all(who).to_dict()`` gives for the same
state. Two databases of the backend get the same history at the same instants of one clock;
one is renewed by each path, and the replies and the rows after it are compared.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import tenure
from tenure import Service
from tenure.store.postgres import renew_json

ROOT = tenure.Principal("root", roles=("admin",))
NESTED = {
    "run": {"id": "r-1", "tries": [1, -2, 2.5, 0.30000000000000004, 1e-07, 2**62, 1e300]},
    "flags": [None, True, False],
    "empty": {"o": {}, "a": [], "s": ""},
    "ünïcødé ключ": '😀 "quoted" back\\slash\ttab\nnewline \u2028 \x7f',
}
LEASE_FIELDS = list(tenure.Lease("k", "h", None, 1, 1, 0, 0, 0, 0).to_dict())  # its order
Step = Callable[[Service], Any]


@pytest.fixture
def twins(
    make_store: Callable[..., tenure.Store], fresh_url: Callable[[], str]
) -> tuple[Service, Service]:
    """Two services on two new databases of the backend, on the same fake clock."""
    return Service(make_store()), Service(make_store(url=fresh_url()))


def both(twins: tuple[Service, Service], *steps: Step) -> None:
    for step in steps:
        for service in twins:
            step(service)


def strict(value: Any) -> str:
    """``value`` as canonical JSON: ``1 == 1.0 == True`` in Python, not here."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def renewed_json(
    service: Service, who: str, session: str | None = None, lost: list[str] | None = None
) -> list[dict[str, Any]]:
    """The leases a renew-all without keys renewed; the session's lapsed leases it reports
    ``lost`` are the keys ``lost`` (none by default)."""
    body = service.renew_all_json(who, session)
    assert isinstance(body, bytes)
    reply = json.loads(body)
    assert list(reply) == ["renewed", "lost"]
    assert [x["key"] for x in reply["lost"]] == (lost or [])
    renewed: list[dict[str, Any]] = reply["renewed"]
    return renewed


def renewals_counted(service: Service) -> int:
    text = service.metrics.render(service.stats())
    (line,) = [x for x in text.splitlines() if x.startswith("tenure_renewals_total ")]
    return int(line.split()[1])


def test_renew_all_json_is_renew_all_for_the_same_state(
    twins: tuple[Service, Service], clock: tenure.FakeClock
) -> None:
    odd_key = 'jobs/ünï "q" \\ 😀'
    sql_key = "x'); DROP TABLE tenure_leases; --\"}],%_"
    both(
        twins,
        lambda s: s.acquire("alice", "jobs/b", ttl_ms=10_000),
        lambda s: s.acquire("alice", "jobs/a", ttl_ms=60_000, task="run-1", meta=NESTED),
        lambda s: s.acquire("alice", odd_key, ttl_ms=20_000, task="задача ✓", meta={"k": "v"}),
        lambda s: s.acquire("alice", "lapsed", ttl_ms=1_000),
        lambda s: s.acquire("alice", "taken", ttl_ms=1_000),
        lambda s: s.acquire("alice", "gone", ttl_ms=10_000),
        lambda s: s.release("alice", "gone"),
        lambda s: s.acquire("alice", "forced", ttl_ms=10_000),
        lambda s: s.force_release(ROOT, "forced", reason="stuck"),
        lambda s: s.acquire("alice", "extended", ttl_ms=5_000),
        lambda s: s.extend("alice", "extended", s.get("extended").token, by_ms=100_000),
        lambda s: s.acquire("bob", "bobs", ttl_ms=10_000, meta={"x": 1}),
        lambda s: s.acquire("alice", "a-lower", ttl_ms=10_000),
        lambda s: s.acquire("alice", "B", ttl_ms=10_000),
        lambda s: s.acquire("alice", "A-upper", ttl_ms=10_000),
        lambda s: s.acquire("alice", sql_key, ttl_ms=10_000, task=sql_key, meta={sql_key: 1}),
        lambda s: s.acquire("alice", "sessions/1", ttl_ms=10_000, session='web "1" ✓'),
    )
    clock.advance(1_500)
    both(
        twins,
        lambda s: s.acquire("bob", "taken", ttl_ms=10_000),  # alice's lapsed, bob's now
        lambda s: s.acquire("alice", "jobs/b", ttl_ms=10_000),  # re-acquire: renews, same token
        lambda s: s.reap(),
    )
    clock.advance(500)
    fast, models = twins
    keys = ["jobs/b", "lapsed", "taken", "gone", "forced", "extended", "bobs", odd_key]
    before = {key: fast.get(key) for key in keys}

    got = renewed_json(fast, "alice", lost=["forced", "lapsed"])
    model = models.renew_all("alice").to_dict()
    want = model["renewed"]
    assert strict(got) == strict(want)
    assert model["lost"] == [
        {"key": "forced", "reason": "force_released", "token": 1},
        {"key": "lapsed", "reason": "expired", "token": 1},
    ]
    # code point order, as Python sorts (not a database collation's: "a-lower" comes last)
    assert [lease["key"] for lease in got] == [
        "A-upper",
        "B",
        "a-lower",
        "extended",
        "jobs/a",
        "jobs/b",
        odd_key,
        sql_key,
    ]  # not "sessions/1": another session's
    assert all(list(lease) == LEASE_FIELDS for lease in got)
    assert got[[x["key"] for x in got].index("jobs/a")]["meta"] == NESTED

    now = clock.now_ms()
    for lease in got:
        row = fast.get(lease["key"])
        assert row.to_dict() == lease  # what the reply says is what the database holds
        assert row == models.get(lease["key"])
        assert row.renewed_at == now and row.state == "live"
        old = before.get(lease["key"])
        if old is not None:
            assert row.renewals == old.renewals + 1
            assert row.expires_at == max(old.expires_at, now + row.ttl_ms)
    assert fast.get("extended").expires_at > now + 90_000  # nothing shortens a lease
    assert fast.get("jobs/b").expires_at == now + 10_000  # the deadline moved
    for key in ("lapsed", "taken", "gone", "forced", "bobs"):
        assert fast.get(key) == before[key] == models.get(key)  # not renewed, not touched
    assert renewals_counted(fast) == renewals_counted(models) == len(got) == 8
    assert fast.get("sessions/1").renewals == 0


def test_renew_all_json_of_one_session_renews_only_its_leases(
    twins: tuple[Service, Service], clock: tenure.FakeClock
) -> None:
    both(
        twins,
        lambda s: s.acquire("alice", "a/1", ttl_ms=10_000, session="live"),
        lambda s: s.acquire("alice", "a/2", ttl_ms=10_000, session="dead"),
        lambda s: s.acquire("alice", "a/3", ttl_ms=10_000),
    )
    clock.advance(5_000)
    fast, models = twins
    got = renewed_json(fast, "alice", "live")
    assert [(x["key"], x["session"]) for x in got] == [("a/1", "live")]
    assert strict(got) == strict(models.renew_all("alice", session="live").to_dict()["renewed"])
    assert [fast.get(k).renewals for k in ("a/1", "a/2", "a/3")] == [1, 0, 0]
    assert [x["key"] for x in renewed_json(fast, "alice", "")] == ["a/3"]


def test_renew_all_json_renews_again_and_counts_each_renewal(
    service: Service, clock: tenure.FakeClock
) -> None:
    service.acquire("alice", "k2", ttl_ms=10_000, meta={"n": [1, {"m": None}]})
    service.acquire("alice", "k1", ttl_ms=30_000, task="t")
    for round_ in (1, 2):
        clock.advance(5_000)
        now = clock.now_ms()
        got = renewed_json(service, "alice")
        assert [(x["key"], x["renewals"], x["renewed_at"]) for x in got] == [
            ("k1", round_, now),
            ("k2", round_, now),
        ]
        assert [service.get(k).expires_at for k in ("k1", "k2")] == [now + 30_000, now + 10_000]
    assert renewals_counted(service) == 4
    clock.advance(10_001)  # k2 lapses
    assert [x["key"] for x in renewed_json(service, "alice", lost=["k2"])] == ["k1"]
    assert service.get("k2").state == "expired"


def test_renew_all_json_with_nothing_held(service: Service, clock: tenure.FakeClock) -> None:
    assert service.renew_all_json("alice") == b'{"renewed":[],"lost":[]}'
    service.acquire("bob", "bobs", ttl_ms=10_000)
    service.acquire("alice", "short", ttl_ms=1_000)
    service.acquire("alice", "released", ttl_ms=10_000)
    service.release("alice", "released")
    clock.advance(1_000)
    lost = b'{"renewed":[],"lost":[{"key":"short","reason":"expired","token":1}]}'
    assert service.renew_all_json("alice") == lost
    assert service.get("bobs").renewals == 0 and service.get("short").renewals == 0
    assert renewals_counted(service) == 0


def test_renew_all_json_of_many_leases_is_in_key_order(
    twins: tuple[Service, Service], clock: tenure.FakeClock
) -> None:
    keys = [f"many/{(i * 7919) % 500:03d}" for i in range(500)]  # acquired out of order
    both(twins, *[lambda s, k=k: s.acquire("alice", k, ttl_ms=60_000) for k in keys])
    clock.advance(1_000)
    fast, models = twins
    got = renewed_json(fast, "alice")
    assert [x["key"] for x in got] == sorted(keys)
    assert strict(got) == strict(models.renew_all("alice").to_dict()["renewed"])


def test_renew_all_json_in_several_parts_is_one_reply(
    twins: tuple[Service, Service], clock: tenure.FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL sends the reply in parts (``renew_json.PART`` leases each), joined in order;
    parts of 7 make a last part shorter than the others. SQLite: the same reply in one piece."""
    monkeypatch.setattr(renew_json, "PART", 7)
    keys = [f"parts/{(i * 31) % 40:02d}" for i in range(40)]
    both(twins, *[lambda s, k=k: s.acquire("alice", k, ttl_ms=60_000) for k in keys])
    clock.advance(1_000)
    fast, models = twins
    got = renewed_json(fast, "alice")
    assert [x["key"] for x in got] == sorted(keys)
    assert strict(got) == strict(models.renew_all("alice").to_dict()["renewed"])
    assert renewals_counted(fast) == len(keys)


def test_renew_all_json_with_lapsed_leases_filling_whole_parts(
    twins: tuple[Service, Service], clock: tenure.FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL renews part by part (``renew_json.PART`` locked rows each): a part whose
    leases all lapsed adds nothing to the reply, first, in the middle or last."""
    monkeypatch.setattr(renew_json, "PART", 3)
    lapsing = {0, 1, 2, 6, 7, 8, 12, 13}  # the first and third parts, most of the last
    for i in range(14):
        ttl = 1_000 if i in lapsing else 60_000
        both(twins, lambda s, i=i, ttl=ttl: s.acquire("alice", f"p/{i:02d}", ttl_ms=ttl))
    clock.advance(1_000)
    fast, models = twins
    lapsed = [f"p/{i:02d}" for i in sorted(lapsing)]
    got = renewed_json(fast, "alice", lost=lapsed)
    assert [x["key"] for x in got] == [f"p/{i:02d}" for i in range(14) if i not in lapsing]
    assert strict(got) == strict(models.renew_all("alice").to_dict()["renewed"])
    assert renewals_counted(fast) == 14 - len(lapsing)
