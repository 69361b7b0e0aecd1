"""Random sequences of lease operations through HTTP agree with the reference model.

The model of tests/contract/test_stateful.py (written from the SPEC), driven against a real
server through :class:`tenure.Client`, one client per principal (``a``, ``b``, ``a/kid``
dispatched by ``a``, the supervisor ``sup``, the admin ``admin``). The server's clock cannot be
moved, so the design is clock-free: ttls are 30 s or more and a run lasts seconds, so no lease
lapses; the model is told the instants the server chose, and only what does not depend on the
clock is compared (holders, tokens, terms, renewal counts, states, errors and their fields,
register versions). Each example works on keys of its own on one server per backend.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import tenure
from contract.test_stateful import (
    ADMIN,
    BY_NAME,
    KID,
    PRINCIPALS,
    SUP,
    A,
    B,
    Err,
    Model,
)
from tenure import (
    ExtendResult,
    FencedWrite,
    ForceReleaseResult,
    Lease,
    Principal,
    ReleaseResult,
    TenureError,
)

if TYPE_CHECKING:
    from conftest import LiveServer

pytestmark = pytest.mark.slow

KEYS = ("k1", "k2")  # the model's keys under the default policy (its "short/" one needs a clock)
EXAMPLES = 12
STEPS = 25
LEASE_FIELDS = ("holder", "task", "token", "ttl_ms", "renewals", "meta", "state")

whos = st.sampled_from([A, A, B, B, KID, SUP, ADMIN])
callers = st.sampled_from(["holder", "holder", A, B, KID, SUP, ADMIN])
keys = st.sampled_from(KEYS)
ttls = st.sampled_from([None, 30_000, 600_000])
picks = st.sampled_from(["current", "current", "older", "newer", "one"])
values = st.one_of(st.integers(-3, 3), st.sampled_from(["x", None, [1, "z"]]))
op_ids = st.sampled_from([None, None, "op-1", "op-2"])


def lease_facts(lease: Lease) -> tuple[Any, ...]:
    return tuple(getattr(lease, name) for name in LEASE_FIELDS)


class HttpVsModel(RuleBasedStateMachine):
    """Subclassed per test with ``clients`` (principal name -> tenure.Client) and ``examples``
    (a counter giving each example keys of its own)."""

    clients: dict[str, tenure.Client]
    examples: Iterator[int]

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.prefix = f"e{next(self.examples)}/"

    def real(self, key: str) -> str:
        return self.prefix + key

    def now(self) -> int:
        return int(time.time() * 1000)  # only liveness depends on it, and nothing lapses

    def call(self, who: Principal, expected: Any, run: Callable[[tenure.Client], Any]) -> Any:
        try:
            got = run(self.clients[who.name])
        except TenureError as exc:
            assert isinstance(expected, Err), f"{who.name}: {exc!r}, model: {expected!r}"
            assert type(exc) is expected.cls, (exc, expected)
            for name, value in expected.fields.items():
                if name == "expires_at":
                    continue  # the clock's
                want = self.real(value) if name in ("key", "held_key") else value
                assert getattr(exc, name) == want, (name, exc, expected)
            return None
        assert not isinstance(expected, Err), f"{who.name}: got {got!r}, model: {expected!r}"
        self.compare(got, expected)
        return got

    def compare(self, got: Any, expected: Any) -> None:
        if isinstance(expected, Lease):
            assert got.key == self.real(expected.key)
            assert lease_facts(got) == lease_facts(expected), (got, expected)
        elif isinstance(expected, ExtendResult):
            assert (got.extended, got.capped) == (expected.extended, expected.capped)
            self.compare(got.lease, expected.lease)
        elif isinstance(expected, ReleaseResult):
            assert got.released == expected.released, (got, expected)
            assert (got.lease is None) == (expected.lease is None)
            if expected.lease is not None:
                self.compare(got.lease, expected.lease)
        elif isinstance(expected, ForceReleaseResult):
            assert (got.actor, got.reason) == (expected.actor, expected.reason)
            self.compare(got.lease, expected.lease)
        elif isinstance(expected, FencedWrite):
            assert got.key == self.real(expected.key)
            facts = ("token", "value", "version", "duplicate")
            assert [getattr(got, f) for f in facts] == [getattr(expected, f) for f in facts]
        else:
            raise AssertionError(f"unexpected model result {expected!r}")

    def sync(self, key: str, lease: Any) -> None:
        """The model adopts the instants the server chose."""
        if isinstance(lease, ExtendResult):
            lease = lease.lease
        rec = self.model.leases.get(key)
        if isinstance(lease, Lease) and rec is not None and rec.token == lease.token:
            rec.acquired_at, rec.renewed_at = lease.acquired_at, lease.renewed_at
            rec.expires_at = lease.expires_at

    @rule(who=whos, key=keys, ttl=ttls, task=st.sampled_from([None, "t1", "t2"]))
    def acquire(self, who: Principal, key: str, ttl: int | None, task: str | None) -> None:
        expected = self.model.acquire(who, key, ttl, task, None, self.now())
        got = self.call(who, expected, lambda c: c.acquire(self.real(key), ttl, task))
        self.sync(key, got)

    @rule(who=callers, key=keys, pick=picks)
    def renew(self, who: Principal | str, key: str, pick: str) -> None:
        me = self.model.caller(key, who)
        token = self.model.token_for(key, pick)
        expected = self.model.renew(me, key, token, None, self.now())
        got = self.call(me, expected, lambda c: c.renew(self.real(key), token))
        self.sync(key, got)

    @rule(who=callers, key=keys, pick=picks)
    def extend(self, who: Principal | str, key: str, pick: str) -> None:
        me = self.model.caller(key, who)
        token = self.model.token_for(key, pick)
        by_ms = 1_800_000  # past any deadline of a run, far below max_lease: never capped
        expected = self.model.extend(me, key, token, self.now() + by_ms, self.now())
        got = self.call(me, expected, lambda c: c.extend(self.real(key), token, by_ms=by_ms))
        self.sync(key, got)

    @rule(who=callers, key=keys, pick=st.one_of(st.none(), picks))
    def release(self, who: Principal | str, key: str, pick: str | None) -> None:
        me = self.model.caller(key, who)
        token = None if pick is None else self.model.token_for(key, pick)
        expected = self.model.release(me, key, token, self.now())
        self.call(me, expected, lambda c: c.release(self.real(key), token))

    @rule(actor=st.sampled_from([ADMIN, SUP, A, B]), key=keys)
    def force_release(self, actor: Principal, key: str) -> None:
        expected = self.model.force_release(actor, key, "stuck", self.now())
        self.call(actor, expected, lambda c: c.force_release(self.real(key), "stuck"))

    @rule(who=callers, key=keys, pick=picks, value=values, op_id=op_ids)
    def write(
        self, who: Principal | str, key: str, pick: str, value: Any, op_id: str | None
    ) -> None:
        me = self.model.caller(key, who)
        token = self.model.token_for(key, pick)
        expected = self.model.write(me, key, token, value, op_id, self.now())
        self.call(me, expected, lambda c: c.fenced_write(self.real(key), token, value, op_id))

    @invariant()
    def server_agrees(self) -> None:
        client = self.clients[ADMIN.name]
        for key in KEYS:
            rec = self.model.leases.get(key)
            if rec is None:
                with pytest.raises(tenure.NotFound):
                    client.get_lease(self.real(key))
                continue
            got = client.get_lease(self.real(key))
            assert lease_facts(got) == lease_facts(rec.view(self.now())), (got, rec)
            assert got.expires_at == rec.expires_at
            reg = self.model.register.get(key)
            if reg is not None:
                read = client.fenced_read(self.real(key))
                assert (read.token, read.value, read.version) == (reg.token, reg.value, reg.version)


def test_http_agrees_with_the_model(live_server: LiveServer) -> None:
    tokens = {ADMIN.name: live_server.token_for(ADMIN.name, "human", ("admin",))}
    for p in PRINCIPALS:
        if p is not ADMIN:
            tokens[p.name] = live_server.token_for(p.name, p.kind, p.roles, p.parent)
    assert set(tokens) == set(BY_NAME)
    # The model's principals act from their default session (a client has a session of its own
    # unless told otherwise, which the model does not know).
    clients = {
        name: tenure.Client(live_server.url, token=t, session="") for name, t in tokens.items()
    }
    machine = type("Machine", (HttpVsModel,), {"clients": clients, "examples": itertools.count()})
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=EXAMPLES,
                stateful_step_count=STEPS,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
    finally:
        for client in clients.values():
            client.close()
