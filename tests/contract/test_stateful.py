"""Random sequences of lease operations: the service must agree with a small reference model.

The model below is written from the SPEC (sections 1-3), not from :mod:`tenure.core.decide`.
Hypothesis drives both with the same acquisitions, renewals, extends, releases,
force-releases, fenced writes, reaper passes and clock jumps (to, just before and just past
deadlines), by a few principals, each with a few sessions, on six keys (three of them a tree,
taken plain or as subtrees), and after every step
checks that results,
errors and the stored state agree, and that the invariants hold: one holder per key, tokens
that only grow, one recorded ending per lease, and no state change from refused input.

Each example runs on a database just as its migrations left it, of the backend under test: a new
SQLite file, or on PostgreSQL one database emptied back to that state between examples.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import tenure
from tenure import (
    ExtendResult,
    FencedValue,
    FencedWrite,
    ForceReleaseResult,
    Lease,
    Principal,
    ReleaseResult,
    TenureError,
)

pytestmark = pytest.mark.slow

START_MS = 1_700_000_000_000
MAX_EXAMPLES = 50
STEPS = 40

A = Principal("a")
B = Principal("b")
KID = Principal("a/kid", kind="agent", parent="a")  # dispatched by a
SUP = Principal("sup", roles=("supervisor",))
ADMIN = Principal("admin", kind="human", roles=("admin",))
PRINCIPALS = (A, B, KID, SUP, ADMIN)
BY_NAME = {p.name: p for p in PRINCIPALS}

KEYS = ("k1", "k2", "short/k3", "t/", "t/b/", "t/b/c")
# SPEC section 3 defaults, and a tighter policy under "short/".
DEFAULT = {"default_ttl": 30_000, "min_ttl": 1_000, "max_ttl": 600_000, "max_lease": 86_400_000}
SHORT = {"default_ttl": 2_000, "min_ttl": 500, "max_ttl": 5_000, "max_lease": 20_000}
POLICY = tenure.PolicySet().with_prefix("short/", **SHORT)


def limits(key: str) -> dict[str, int]:
    return SHORT if key.startswith("short/") else DEFAULT


whos = st.sampled_from([A, A, B, B, KID, SUP, ADMIN])
# Who force-releases: mostly an authority (admin, supervisor, the parent of "a/kid").
actors = st.sampled_from([ADMIN, ADMIN, SUP, SUP, A, A, B])
# Who calls the verbs of a lease: mostly its holder, or anyone.
callers = st.sampled_from(["holder", "holder", "holder", A, B, KID, SUP, ADMIN])
keys = st.sampled_from(KEYS)
# The key a lease verb targets: mostly the key acquired last ("last"), or any key.
targets = st.sampled_from([*KEYS, "last", "last", "last"])
ttls = st.sampled_from([None, 0, 499, 500, 1_000, 2_000, 5_000, 30_000, 600_000, 600_001])
tasks = st.sampled_from([None, "t1", "t2"])
metas = st.sampled_from([None, {}, {"n": 1}])
# An acquisition's scope: mostly the key alone; "subtree" (on a key not ending in "/": refused).
scopes = st.sampled_from([None, None, "key", "subtree"])
# Which token a call presents: the key's latest, an older one, one never issued, or 1.
picks = st.sampled_from(["current", "current", "current", "older", "newer", "one"])
values = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", None, [1, "z"]]))
op_ids = st.sampled_from([None, None, "op-1", "op-2"])
reasons = st.sampled_from(["stuck", "rebalancing"])
# The session a call names: mostly the default one (None), or one of two of each principal.
sessions = st.sampled_from([None, None, "s1", "s2"])
# renew-all: every session of the principal (None) or one.
renew_sessions = st.sampled_from([None, "", "s1", "s2"])


def same_json(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# the reference model -------------------------------------------------------------------------
@dataclass
class MLease:
    key: str
    holder: str
    task: str | None
    token: int
    ttl_ms: int
    acquired_at: int
    renewed_at: int
    expires_at: int
    renewals: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    ended: str | None = None  # "released" or "force_released"; lapsing is computed
    fence_open: bool = True
    session: str = ""
    scope: str = "key"

    def live(self, now: int) -> bool:
        return self.ended is None and now < self.expires_at

    def state(self, now: int) -> str:
        if self.ended is not None:
            return self.ended
        return "live" if self.live(now) else "expired"

    def view(self, now: int) -> Lease:
        return Lease(
            self.key,
            self.holder,
            self.task,
            self.token,
            self.ttl_ms,
            self.acquired_at,
            self.renewed_at,
            self.expires_at,
            self.renewals,
            dict(self.meta),
            self.state(now),  # type: ignore[arg-type]
            self.session,
            self.scope,  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class Err:
    """An expected error: its class and the fields it must carry."""

    cls: type[TenureError]
    fields: dict[str, Any]


def err(cls: type[TenureError], **fields: Any) -> Err:
    return Err(cls, fields)


class Model:
    def __init__(self) -> None:
        self.leases: dict[str, MLease] = {}
        self.issued: dict[str, list[int]] = {k: [] for k in KEYS}
        self.endings: dict[tuple[str, int], str] = {}  # how each superseded/ended lease ended
        self.conflicts: dict[str, int] = dict.fromkeys(KEYS, 0)
        self.register: dict[str, FencedValue] = {}
        self.ops: dict[tuple[str, int, str], tuple[FencedWrite, str]] = {}  # and its writer
        self.last_key = KEYS[0]  # the key of the latest acquisition
        self.subtree_tokens: dict[str, int] = {}  # prefix -> latest token of a subtree lease

    def grant_above(self, key: str) -> tuple[int, str | None]:
        """The latest subtree token on a prefix above ``key``, and that prefix."""
        above = [
            (t, p)
            for p, t in self.subtree_tokens.items()
            if len(key) > len(p) and key.startswith(p)
        ]
        return max(above) if above else (0, None)

    def tree_floor(self, key: str, scope: str) -> int:
        """What a new token must exceed besides the key's own: the subtree tokens above and,
        for a subtree, every token granted under it."""
        floor = self.grant_above(key)[0]
        if scope == "subtree":
            under = [
                t
                for k, ts in self.issued.items()
                if len(k) > len(key) and k.startswith(key)
                for t in ts
            ]
            floor = max([floor, *under])
        return floor

    @staticmethod
    def ttl(key: str, ttl_ms: int | None) -> int | Err:
        lim = limits(key)
        if ttl_ms is None:
            return lim["default_ttl"]
        if not lim["min_ttl"] <= ttl_ms <= lim["max_ttl"]:
            return err(tenure.InvalidRequest, field="ttl_ms")
        return ttl_ms

    def target(self, key: str) -> str:
        return self.last_key if key == "last" else key

    def caller(self, key: str, who: Principal | str) -> Principal:
        if isinstance(who, Principal):
            return who
        rec = self.leases.get(key)
        return BY_NAME[rec.holder] if rec else A

    def token_for(self, key: str, pick: str) -> int:
        rec = self.leases.get(key)
        latest = rec.token if rec else 0
        return {
            "current": max(latest, 1),
            "older": max(latest - 1, 1),
            "newer": latest + 1,
            "one": 1,
        }[pick]

    def ending(self, rec: MLease, now: int) -> str | None:
        """How ``rec`` ended, ``None`` while it is live."""
        return None if rec.live(now) else rec.state(now)

    def may_force(self, actor: Principal, holder: str) -> bool:
        if actor.is_admin:
            return True
        if actor.is_supervisor and not BY_NAME[holder].is_admin:
            return True
        ancestors, current = [], BY_NAME[holder]
        while current.parent is not None:
            ancestors.append(current.parent)
            current = BY_NAME[current.parent]
        return actor.name in ancestors

    def own_check(self, who: Principal, key: str, token: int, now: int) -> MLease | Err:
        """The lease ``who`` may renew or extend with ``token``, or why not."""
        rec = self.leases.get(key)
        if rec is None:
            return err(tenure.NotFound, key=key)
        if token > rec.token:
            return err(tenure.StaleToken, key=key, token=token, current_token=rec.token)
        if token < rec.token:
            return err(
                tenure.LeaseLost,
                key=key,
                token=token,
                reason=self.endings.get((key, token), "expired"),
            )
        if rec.live(now) and rec.holder != who.name:
            return self.not_holder(rec)
        if not rec.live(now):
            return err(tenure.LeaseLost, key=key, token=token, reason=rec.state(now))
        return rec

    @staticmethod
    def not_holder(rec: MLease) -> Err:
        return err(
            tenure.NotHolder,
            key=rec.key,
            holder=rec.holder,
            session=rec.session,
            task=rec.task,
            expires_at=rec.expires_at,
        )

    # operations: each returns the expected result or Err, updating the model on success
    def acquire(
        self,
        who: Principal,
        key: str,
        ttl_ms: int | None,
        task: str | None,
        meta: dict[str, Any] | None,
        now: int,
        session: str | None = None,
        scope: str | None = None,
    ) -> Any:
        ttl = self.ttl(key, ttl_ms)
        if isinstance(ttl, Err):
            return ttl
        wide = scope or "key"
        if wide == "subtree" and not key.endswith("/"):
            return err(tenure.InvalidRequest, field="scope")
        sid = session or ""
        rec = self.leases.get(key)
        if rec is not None and rec.live(now) and (rec.holder != who.name or rec.session != sid):
            # another session of the same principal is refused like a stranger
            self.conflicts[key] += 1
            return self.held(key, rec)
        blocker = self.blocker(who, key, wide, sid, now)
        if blocker is not None:
            return self.held(key, blocker)
        floor = self.tree_floor(key, wide)
        widens = rec is not None and wide == "subtree" and rec.scope != "subtree"
        if rec is not None and rec.live(now) and not (widens and floor >= rec.token):
            rec.scope = wide
            if wide == "subtree":
                self.subtree_tokens[key] = max(self.subtree_tokens.get(key, 0), rec.token)
            rec.renewed_at, rec.ttl_ms, rec.renewals = now, ttl, rec.renewals + 1
            rec.expires_at = max(rec.expires_at, now + ttl)
            if task is not None:
                rec.task = task
            if meta is not None:
                rec.meta = dict(meta)
            return rec.view(now)
        if rec is not None:  # lapsed, or live and widened with a new token (which releases it)
            self.endings[key, rec.token] = "released" if rec.live(now) else rec.state(now)
        token = max(rec.token if rec else 0, floor) + 1
        self.issued[key].append(token)
        if wide == "subtree":
            self.subtree_tokens[key] = max(self.subtree_tokens.get(key, 0), token)
        fresh = MLease(
            key, who.name, task, token, ttl, now, now, now + ttl, 0, dict(meta or {}), session=sid,
            scope=wide,
        )  # fmt: skip
        self.leases[key] = fresh
        self.last_key = key
        return fresh.view(now)

    @staticmethod
    def held(key: str, rec: MLease) -> Err:
        return err(
            tenure.LeaseHeld,
            key=key,
            holder=rec.holder,
            session=rec.session,
            task=rec.task,
            expires_at=rec.expires_at,
            token=rec.token,
            held_key=rec.key,
            scope=rec.scope,
        )

    def blocker(self, who: Principal, key: str, scope: str, sid: str, now: int) -> MLease | None:
        """The live lease of someone else on another key that a ``scope`` lease on ``key``
        would overlap: a subtree whose key is a prefix of ``key`` (the longest first), else
        (for a subtree) a lease on a longer key starting with ``key`` (the one that lapses
        last, then the smallest key)."""
        others = [
            r
            for k, r in self.leases.items()
            if k != key and r.live(now) and (r.holder, r.session) != (who.name, sid)
        ]
        above = [r for r in others if r.scope == "subtree" and key.startswith(r.key)]
        if above:
            return max(above, key=lambda r: len(r.key))
        below = [r for r in others if scope == "subtree" and r.key.startswith(key)]
        return min(below, key=lambda r: (-r.expires_at, r.key)) if below else None

    def renew(self, who: Principal, key: str, token: int, ttl_ms: int | None, now: int) -> Any:
        ttl = None if ttl_ms is None else self.ttl(key, ttl_ms)
        if isinstance(ttl, Err):
            return ttl
        rec = self.own_check(who, key, token, now)
        if isinstance(rec, Err):
            return rec
        term = ttl if ttl is not None else rec.ttl_ms
        rec.renewed_at, rec.ttl_ms, rec.renewals = now, term, rec.renewals + 1
        rec.expires_at = max(rec.expires_at, now + term)
        return rec.view(now)

    def extend(self, who: Principal, key: str, token: int, requested: int, now: int) -> Any:
        rec = self.own_check(who, key, token, now)
        if isinstance(rec, Err):
            return rec
        cap = now + limits(key)["max_lease"]
        granted = min(requested, cap)
        if granted <= rec.expires_at:  # nothing shortens a lease
            return ExtendResult(rec.view(now), False, requested > cap, requested, rec.expires_at)
        rec.expires_at = granted
        return ExtendResult(rec.view(now), True, requested > cap, requested, granted)

    def release(
        self, who: Principal, key: str, token: int | None, now: int, session: str | None = None
    ) -> Any:
        rec = self.leases.get(key)
        if rec is None:
            return ReleaseResult(False, None, "no_lease")
        if not rec.live(now):
            return ReleaseResult(False, rec.view(now), "ended")
        if rec.holder != who.name:
            return self.not_holder(rec)
        if token is not None and token != rec.token:
            return ReleaseResult(False, rec.view(now), "stale_token")
        if token is None and rec.session != (session or ""):  # no token: only its own session
            return self.not_holder(rec)
        rec.ended = "released"
        return ReleaseResult(True, rec.view(now))

    def force_release(self, actor: Principal, key: str, reason: str, now: int) -> Any:
        rec = self.leases.get(key)
        if rec is None or not rec.live(now):
            return err(tenure.NotFound, key=key)
        if not self.may_force(actor, rec.holder):
            return err(tenure.Forbidden, key=key, actor=actor.name, reason=reason)
        rec.ended, rec.fence_open = "force_released", False
        return ForceReleaseResult(rec.view(now), actor.name, reason)

    def write(
        self, who: Principal, key: str, token: int, value: Any, op_id: str | None, now: int
    ) -> Any:
        if op_id is not None and (key, token, op_id) in self.ops:
            first, writer = self.ops[key, token, op_id]
            if writer != who.name:
                return err(tenure.NotHolder, key=key, holder=writer)
            if not same_json(first.value, value):
                return err(tenure.IdempotencyConflict, key=key, op_id=op_id, token=token)
            return first
        rec = self.leases.get(key)
        top, prefix = self.grant_above(key)
        if prefix is not None and top > (rec.token if rec else 0):  # the subtree's token
            tree = self.leases.get(prefix)
            held = tree is not None and tree.token == top and tree.scope == "subtree"
            if token != top or tree is None or not held or not tree.fence_open:
                return err(tenure.StaleToken, key=key, token=token, current_token=top)
            rec = tree
        elif rec is None or token != rec.token or not rec.fence_open:
            current = rec.token if rec else None
            return err(tenure.StaleToken, key=key, token=token, current_token=current)
        if rec.holder != who.name:  # only the holder writes, whoever else knows the token
            return self.not_holder(rec)
        old = self.register.get(key)
        version = (old.version if old else 0) + 1
        self.register[key] = FencedValue(key, token, value, version, now)
        if op_id is not None:
            first = FencedWrite(key, token, value, version, duplicate=True)
            self.ops[key, token, op_id] = (first, who.name)
        return FencedWrite(key, token, value, version, duplicate=False)


# the machine ---------------------------------------------------------------------------------
class ServiceVsModel(RuleBasedStateMachine):
    """Subclassed per test with ``make_url`` set to the ``emptied_url`` fixture."""

    make_url: Callable[[], str]

    def __init__(self) -> None:
        super().__init__()
        self.clock = tenure.FakeClock(START_MS)
        self.store = tenure.open_store(self.make_url(), clock=self.clock)
        for principal in PRINCIPALS:
            self.store.add_principal(principal)
        self.service = tenure.Service(self.store, POLICY)
        self.model = Model()
        self.highest = dict.fromkeys(KEYS, 0)  # the highest token ever seen per key

    def teardown(self) -> None:
        self.store.close()

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def check(self, expected: Any, call: Callable[[], Any], label: str = "") -> Any:
        try:
            got = call()
        except TenureError as error:
            if label:
                event(f"{label}: {type(error).__name__}")
            assert isinstance(expected, Err), f"expected {expected!r}, got {error!r}"
            assert type(error) is expected.cls, f"expected {expected!r}, got {error!r}"
            for name, value in expected.fields.items():
                assert getattr(error, name) == value, (
                    f"{name}: expected {expected!r}, got {error!r}"
                )
            return None
        assert not isinstance(expected, Err), f"expected {expected!r}, got {got!r}"
        if label:
            event(f"{label}: ok")
        assert got == expected
        return got

    # rules -----------------------------------------------------------------------------------
    @initialize(who=whos, key=keys, ttl=st.sampled_from([None, 1_000, 5_000]), sid=sessions)
    def first_acquire(self, who: Principal, key: str, ttl: int | None, sid: str | None) -> None:
        expected = self.model.acquire(who, key, ttl, "first", None, self.now, sid)
        self.check(expected, lambda: self.service.acquire(who, key, ttl, "first", session=sid))

    @rule(who=whos, key=keys, ttl=ttls, task=tasks, meta=metas, sid=sessions, scope=scopes)
    def acquire(
        self,
        who: Principal,
        key: str,
        ttl: int | None,
        task: str | None,
        meta: dict[str, Any] | None,
        sid: str | None,
        scope: str | None,
    ) -> None:
        expected = self.model.acquire(who, key, ttl, task, meta, self.now, sid, scope)
        self.check(
            expected,
            lambda: self.service.acquire(who, key, ttl, task, meta, session=sid, scope=scope),
            "acquire",
        )

    @rule(
        who=callers,
        key=targets,
        pick=picks,
        ttl=st.sampled_from([None, None, None, 500, 1_000, 600_001]),
    )
    def renew(self, who: Principal | str, key: str, pick: str, ttl: int | None) -> None:
        key = self.model.target(key)
        who = self.model.caller(key, who)
        token = self.model.token_for(key, pick)
        expected = self.model.renew(who, key, token, ttl, self.now)
        self.check(expected, lambda: self.service.renew(who, key, token, ttl), "renew")

    @rule(
        who=callers, key=targets, by_ms=st.sampled_from([1, 1_000, 10_000, 3_600_000, 90_000_000])
    )
    def extend_by(self, who: Principal | str, key: str, by_ms: int) -> None:
        key = self.model.target(key)
        who = self.model.caller(key, who)
        token = self.model.token_for(key, "current")
        expected = self.model.extend(who, key, token, self.now + by_ms, self.now)
        self.check(expected, lambda: self.service.extend(who, key, token, by_ms=by_ms), "extend")

    @rule(
        who=callers,
        key=targets,
        pick=picks,
        offset=st.sampled_from([-5_000, 0, 1_000, 15_000, 60_000, 100_000_000]),
    )
    def extend_until(self, who: Principal | str, key: str, pick: str, offset: int) -> None:
        key = self.model.target(key)
        who = self.model.caller(key, who)
        token = self.model.token_for(key, pick)
        until = self.now + offset
        expected = self.model.extend(who, key, token, until, self.now)
        self.check(expected, lambda: self.service.extend(who, key, token, until=until), "extend")

    @rule(
        who=callers,
        key=targets,
        pick=st.sampled_from([None, None, "current", "older", "newer"]),
        sid=sessions,
    )
    def release(self, who: Principal | str, key: str, pick: str | None, sid: str | None) -> None:
        key = self.model.target(key)
        who = self.model.caller(key, who)
        token = None if pick is None else self.model.token_for(key, pick)
        expected = self.model.release(who, key, token, self.now, sid)
        self.check(expected, lambda: self.service.release(who, key, token, sid), "release")

    @rule(actor=actors, key=targets, reason=reasons)
    def force_release(self, actor: Principal, key: str, reason: str) -> None:
        key = self.model.target(key)
        expected = self.model.force_release(actor, key, reason, self.now)
        self.check(
            expected, lambda: self.service.force_release(actor, key, reason), "force_release"
        )

    @rule(who=callers, key=targets, pick=picks, value=values, op_id=op_ids)
    def write(
        self, who: Principal | str, key: str, pick: str, value: Any, op_id: str | None
    ) -> None:
        key = self.model.target(key)
        who = self.model.caller(key, who)
        token = self.model.token_for(key, pick)
        expected = self.model.write(who, key, token, value, op_id, self.now)
        self.check(expected, lambda: self.service.write(who, key, token, value, op_id), "write")

    @rule(who=whos, sid=renew_sessions)
    def renew_all(self, who: Principal, sid: str | None) -> None:
        now, session = self.now, sid or ""  # without one: the default session's, no other
        ours = sorted(
            (
                r
                for r in self.model.leases.values()
                if r.holder == who.name and r.session == session
            ),
            key=lambda r: r.key,
        )
        window = max(p.max_ttl for p in (POLICY.default, *(p for _, p in POLICY.overrides)))
        lost = [
            tenure.LostLease(r.key, r.state(now), r.token)
            for r in ours
            if r.state(now) in ("expired", "force_released") and r.expires_at > now - window
        ]
        expected = [self.model.renew(who, r.key, r.token, None, now) for r in ours if r.live(now)]
        result = self.service.renew_all(who, session=sid)
        assert list(result.renewed) == expected
        assert list(result.lost) == lost

    @rule()
    def reap(self) -> None:
        now = self.now
        for ev in self.service.reap():
            assert (ev.type, ev.at) == ("expired", now)
            rec = self.model.leases[ev.key]
            assert ev.token == rec.token and rec.state(now) == "expired", ev
            held = rec.expires_at - rec.acquired_at
            data: dict[str, Any] = {"held_ms": held, "deadline": rec.expires_at}
            if rec.session:
                data["session"] = rec.session
            assert (ev.holder, ev.data) == (rec.holder, data)

    @rule(ms=st.sampled_from([1, 499, 1_000, 1_000, 5_000, 5_000, 30_000, 90_000_000]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @precondition(lambda self: any(r.live(self.now) for r in self.model.leases.values()))
    @rule(key=keys, delta=st.sampled_from([-1, 0, 1]))
    def advance_to_deadline(self, key: str, delta: int) -> None:
        """Move the clock to just before, exactly to, or just past a live lease's deadline."""
        live = [r for r in self.model.leases.values() if r.live(self.now)]
        rec = next((r for r in live if r.key == key), live[0])
        self.clock.advance(max(0, rec.expires_at + delta - self.now))

    # invariants ------------------------------------------------------------------------------
    @invariant()
    def leases_agree(self) -> None:
        now = self.now
        for key in KEYS:
            rec = self.model.leases.get(key)
            if rec is None:
                self.check(err(tenure.NotFound, key=key), lambda key=key: self.service.get(key))
            else:
                got = self.service.get(key)
                assert got == rec.view(now)
                # Tokens only grow.
                assert got.token >= self.highest[key]
                self.highest[key] = got.token
            assert self.service.contention(key) == self.model.conflicts[key]
        # One holder: the live leases are exactly the model's, one per key.
        live = [r.view(now) for k, r in sorted(self.model.leases.items()) if r.live(now)]
        assert self.service.list() == live
        for holder in {p.name for p in PRINCIPALS}:
            assert self.service.list(holder=holder) == [x for x in live if x.holder == holder]

    @invariant()
    def register_agrees(self) -> None:
        for key in KEYS:
            expected = self.model.register.get(key)
            if expected is None:
                self.check(err(tenure.NotFound, key=key), lambda key=key: self.service.read(key))
            else:
                assert self.service.read(key) == expected

    @invariant()
    def every_ending_has_one_cause(self) -> None:
        now = self.now
        events = self.service.events(limit=1000)
        ids = [e.id for e in events]
        assert ids == sorted(set(ids)), "event ids must grow"
        for key in KEYS:
            mine = [e for e in events if e.key == key]
            acquired = [e.token for e in mine if e.type == "acquired"]
            assert acquired == sorted(set(acquired)), "tokens only grow"
            assert acquired == self.model.issued[key], "one acquisition per token, growing"
            endings: dict[int, list[str]] = {}
            for e in mine:
                if e.type in ("released", "expired", "force_released", "taken_over"):
                    assert e.token is not None
                    endings.setdefault(e.token, []).append(e.type)
            assert set(endings) <= set(acquired)
            for token in acquired[:-1]:
                assert endings.get(token) == [self.model.endings[key, token]], (key, token)
            if acquired:
                rec = self.model.leases[key]
                last = endings.get(rec.token, [])
                state = rec.state(now)
                if state == "live":
                    assert last == []
                elif state == "expired":
                    assert last in ([], ["expired"])  # recorded by the reaper or the next call
                else:
                    assert last == [state]


def test_service_matches_model(backend: str, emptied_url: Callable[[], str]) -> None:
    class Machine(ServiceVsModel):
        make_url = staticmethod(emptied_url)

    run_state_machine_as_test(
        Machine,
        settings=settings(
            max_examples=MAX_EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_model_sanity() -> None:
    """The model itself: a lapsed lease is superseded with the next token, recorded expired."""
    model = Model()
    first = model.acquire(A, "k1", 1_000, None, None, START_MS)
    assert isinstance(first, Lease) and first.token == 1
    held = model.acquire(B, "k1", None, None, None, START_MS + 999)
    assert isinstance(held, Err) and held.cls is tenure.LeaseHeld
    second = model.acquire(B, "k1", None, None, None, START_MS + 1_000)
    assert isinstance(second, Lease) and second.token == 2
    assert model.endings["k1", 1] == "expired" and model.conflicts["k1"] == 1
    lost = model.renew(A, "k1", 1, None, START_MS + 1_000)
    assert lost == err(tenure.LeaseLost, key="k1", token=1, reason="expired")
    assert model.may_force(A, "a/kid") and not model.may_force(SUP, "admin")
    # another session of the same principal is refused like anyone else
    mine = model.acquire(A, "k2", None, None, None, START_MS, "s1")
    assert isinstance(mine, Lease) and mine.session == "s1"
    sibling = model.acquire(A, "k2", None, "t", None, START_MS, "s2")
    assert isinstance(sibling, Err) and sibling.fields["session"] == "s1"
    assert model.leases["k2"].task is None
    assert replace(model.leases["k1"], ended="released").state(START_MS) == "released"
    # a subtree holds the keys under it, and is held off by them
    top = model.acquire(A, "t/b/", None, None, None, START_MS, None, "subtree")
    assert isinstance(top, Lease) and top.scope == "subtree"
    under = model.acquire(B, "t/b/c", None, None, None, START_MS)
    assert isinstance(under, Err) and under.fields["held_key"] == "t/b/"
    assert isinstance(model.acquire(A, "t/b/c", None, None, None, START_MS), Lease)  # mine
    above = model.acquire(B, "t/", None, None, None, START_MS, None, "subtree")
    assert isinstance(above, Err) and above.fields["held_key"] == "t/b/"
    bad = model.acquire(B, "k1", None, None, None, START_MS, None, "subtree")
    assert bad == err(tenure.InvalidRequest, field="scope")


@pytest.mark.parametrize("busy", ["writes", "conflicts"])
def test_lease_lost_names_the_ending_of_a_busy_old_lease(
    service: tenure.Service, busy: str
) -> None:
    """Found while writing the model: ``reason`` must not depend on how busy the lease was."""
    lease = service.acquire(A, "k1")
    for i in range(60):
        if busy == "writes":
            service.write(A, "k1", lease.token, i)
        else:
            with pytest.raises(tenure.LeaseHeld):
                service.acquire(B, "k1")
    service.release(A, "k1", lease.token)
    service.acquire(B, "k1")
    with pytest.raises(tenure.LeaseLost) as info:
        service.renew(A, "k1", lease.token)
    assert (info.value.reason, info.value.token) == ("released", lease.token)
