"""The history checker of tests/checker.py can fail: deliberately broken histories are caught.

Each broken history differs from a sound one by one thing, so a check that passes the sound
history and flags the broken one is proven to look at that thing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import tenure
from checker import Op, Recorder, check, check_durable, load
from tenure.client import TransportError

T0 = 1_700_000_000_000


def op(kind: str, who: str, t: float, *, key: str = "k", took: float = 0.01, **fields: Any) -> Op:
    """An acknowledged operation sent at monotonic ``t``; ``ok`` and the rest by keyword."""
    ok = fields.pop("ok", True)
    return Op(who, who, kind, key, t, t + took, ok, **fields)


def acq(who: str, t: float, token: int, at: int, ttl: int = 1000, **kw: Any) -> Op:
    return op("acquire", who, t, token=token, acquired_at=at, expires_at=at + ttl, holder=who, **kw)


def sound() -> list[Op]:
    """a holds k (token 1), writes, releases; b acquires (token 2), writes, lets it expire; a
    takes it back (token 3) after the expiry."""
    return [
        acq("a", 1.0, 1, T0),
        op("renew", "a", 1.2, token=1, acquired_at=T0, expires_at=T0 + 1200, holder="a"),
        op("write", "a", 1.3, token=1, value="a1", version=1, duplicate=False),
        op("release", "a", 1.4, token=1, released=True),
        acq("b", 1.5, 2, T0 + 500),
        op("write", "b", 1.6, token=2, value="b1", version=2, duplicate=False),
        op("write", "a", 1.7, token=1, value="late", ok=False, code="stale_token", current_token=2),
        acq("a", 3.0, 3, T0 + 2000),
        op("write", "a", 3.1, token=3, value="a3", version=3, duplicate=False),
    ]


EVENTS = [
    {"type": "acquired", "key": "k", "token": 1, "holder": "a"},
    {"type": "released", "key": "k", "token": 1, "holder": "a"},
    {"type": "acquired", "key": "k", "token": 2, "holder": "b"},
    {"type": "expired", "key": "k", "token": 2, "holder": "b"},
    {"type": "acquired", "key": "k", "token": 3, "holder": "a"},
]
REGISTER = {"k": {"key": "k", "token": 3, "value": "a3", "version": 3}}


def flagged(history: list[Op], mark: str) -> list[str]:
    bad = check(history)
    assert bad, "the checker passed a broken history"
    assert all(line.startswith(mark) for line in bad), bad
    return bad


def test_a_sound_history_passes() -> None:
    assert check(sound()) == []
    assert check_durable(sound(), EVENTS, REGISTER) == []


# (a) one holder --------------------------------------------------------------------------
def test_a_two_holders_at_once_are_caught() -> None:
    history = sound()
    del history[3]  # a never released token 1: b's acquisition at +500 overlaps it
    bad = flagged(history, "(a)")
    assert "b acquired token 2" in bad[0] and "a's token 1" in bad[0]


def test_a_a_renewal_that_stretches_a_lease_over_the_next_one_is_caught() -> None:
    history = [
        acq("a", 1.0, 1, T0),
        acq("b", 2.0, 2, T0 + 1500),  # after a's first deadline: fine so far
        op("renew", "a", 2.1, token=1, acquired_at=T0, expires_at=T0 + 2000, holder="a"),
    ]
    flagged(history, "(a)")


def test_a_a_release_sent_after_the_takeover_does_not_excuse_it() -> None:
    history = sound()
    history[3] = op("release", "a", 1.55, token=1, released=True)  # sent after b's reply at 1.51
    flagged(history, "(a)")


def test_a_an_unknown_release_may_have_ended_the_lease() -> None:
    history = sound()
    history[3] = op("release", "a", 1.4, token=1, ok=None, code="transport_error")
    assert check(history) == []  # it may have happened: nothing to prove
    history[3] = op("release", "a", 1.4, token=1, released=False)  # it did not: overlap
    flagged(history, "(a)")


def test_a_a_retried_release_that_finds_its_lease_released_may_have_ended_it() -> None:
    """The first attempt committed and its reply was lost (server killed); the client's retry
    after the restart hears ``released: false`` about the lease that attempt released."""
    history = sound()
    retried = op("release", "a", 1.4, token=1, released=False)
    retried.state, retried.holder, retried.current_token = "released", "a", 1
    history[3] = retried
    assert check(history) == []
    for state, holder, token in (("live", "a", 1), ("released", "b", 1), ("released", "a", 2)):
        other = op("release", "a", 1.4, token=1, released=False)
        other.state, other.holder, other.current_token = state, holder, token
        history[3] = other  # not this lease released by its holder: proves nothing
        flagged(history, "(a)")


def test_a_a_force_release_ends_anyones_lease() -> None:
    history = sound()
    history[3] = op("force_release", "admin", 1.4, token=1, holder="a")
    assert check(history) == []


# (b) tokens grow -------------------------------------------------------------------------
def test_b_a_token_that_goes_down_is_caught() -> None:
    history = sound()
    history[7] = acq("a", 3.0, 2, T0 + 2000)  # token 2 again, later, to another holder
    bad = check(history)
    assert any(line.startswith("(b)") for line in bad), bad


def test_b_tokens_out_of_real_time_order_are_caught() -> None:
    history = [
        acq("a", 1.0, 2, T0, ttl=100),
        op("release", "a", 1.1, token=2, released=True),
        acq("b", 1.2, 1, T0 + 200),  # started after a's reply, got a smaller token
    ]
    bad = flagged(history, "(b)")
    assert any("got token 1 after a had been granted 2" in line for line in bad), bad


def test_b_one_token_for_two_principals_is_caught() -> None:
    history = [acq("a", 1.0, 1, T0, ttl=100), acq("b", 2.0, 1, T0 + 1000)]
    bad = check(history)
    assert any("granted to a and to b" in line for line in bad), bad


def test_b_a_re_acquisition_of_ones_own_lease_keeps_the_token() -> None:
    history = [acq("a", 1.0, 1, T0), acq("a", 1.1, 1, T0, ttl=1100)]
    assert check(history) == []


# (c) fencing -----------------------------------------------------------------------------
def test_c_a_stale_write_that_was_accepted_is_caught() -> None:
    history = sound()
    history[6] = op("write", "a", 1.7, token=1, value="late", version=3, duplicate=False)
    history[8].version = 4
    bad = check(history)
    assert any(line.startswith("(c)") and "token 1 accepted after token 2" in line for line in bad)


def test_c_a_write_after_a_force_release_is_caught() -> None:
    history = [
        acq("a", 1.0, 1, T0),
        op("force_release", "admin", 1.1, token=1, holder="a"),
        op("write", "a", 1.2, token=1, value="x", version=1, duplicate=False),
    ]
    flagged(history, "(c)")


def test_c_versions_that_go_back_in_token_order_are_caught() -> None:
    history = sound()
    history[5].version, history[2].version = 1, 2  # b's write (token 2) before a's (token 1)
    flagged(history, "(c)")


def test_c_one_version_for_two_writes_is_caught() -> None:
    history = sound()
    history[5].version = 1
    flagged(history, "(c)")


def test_c_a_duplicate_by_op_id_is_no_new_write() -> None:
    history = sound()
    dup = op("write", "b", 1.65, token=2, value="b1", version=2, duplicate=True, op_id="x")
    history.insert(6, dup)
    assert check(history) == []


# (d) durability --------------------------------------------------------------------------
def test_d_a_lost_acquisition_is_caught() -> None:
    bad = check_durable(sound(), EVENTS[:2] + EVENTS[3:], REGISTER)
    assert bad == ["(d) k: acknowledged acquisition of token 2 by b lost"]


def test_d_a_lost_release_is_caught() -> None:
    bad = check_durable(sound(), [EVENTS[0], *EVENTS[2:]], REGISTER)
    assert bad == ["(d) k: acknowledged release of token 1 lost"]


def test_d_a_reused_token_is_caught() -> None:
    events = [*EVENTS, {"type": "acquired", "key": "k", "token": 3, "holder": "b"}]
    bad = check_durable(sound(), events, REGISTER)
    assert any("token 3 issued 2 times" in line for line in bad), bad


def test_d_a_lost_or_rolled_back_write_is_caught() -> None:
    assert check_durable(sound(), EVENTS, {}) != []
    older = {"k": {"key": "k", "token": 2, "value": "b1", "version": 2}}
    assert check_durable(sound(), EVENTS, older) == ["(d) k: register at version 2, acknowledged 3"]
    changed = {"k": {"key": "k", "token": 3, "value": "other", "version": 3}}
    assert len(check_durable(sound(), EVENTS, changed)) == 1


def test_d_a_write_only_an_unknown_operation_could_have_made_is_allowed() -> None:
    later = {"k": {"key": "k", "token": 3, "value": "a4", "version": 4}}
    assert len(check_durable(sound(), EVENTS, later)) == 1
    unknown = op("write", "a", 3.2, token=3, value="a4", ok=None, code="transport_error")
    assert check_durable([*sound(), unknown], EVENTS, later) == []


# recording and merging -------------------------------------------------------------------
class FakeClient:
    """Answers like tenure.Client, from a tiny in-memory model of one key."""

    def __init__(self) -> None:
        self.token = 0
        self.fail_next: Exception | None = None

    def _maybe_fail(self) -> None:
        if self.fail_next is not None:
            exc, self.fail_next = self.fail_next, None
            raise exc

    def acquire(self, key: str, ttl_ms: int | None = None, **kw: Any) -> tenure.Lease:
        self._maybe_fail()
        self.token += 1
        at = T0 + self.token * 10_000
        return tenure.Lease(key, "a", None, self.token, 1000, at, at, at + 1000, 0, {}, "live")

    def fenced_write(self, key: str, token: int, value: Any, op_id: str | None) -> Any:
        self._maybe_fail()
        if token != self.token:
            raise tenure.StaleToken("stale", key=key, token=token, current_token=self.token)
        return tenure.FencedWrite(key, token, value, token, False)


def test_records_go_to_one_file_per_process_and_merge(tmp_path: Path) -> None:
    client = FakeClient()
    one = Recorder(client, "a", tmp_path / "one.jsonl")
    two = Recorder(client, "a", tmp_path / "two.jsonl", name="two")
    lease = one.acquire("k", 1000)
    one.write("k", lease.token, {"n": 1})
    with pytest.raises(tenure.StaleToken):
        two.write("k", 0, "old")
    client.fail_next = TransportError("cut", method="POST", path="/", sent=True)
    with pytest.raises(TransportError):
        two.acquire("k", 1000)
    client.fail_next = KeyboardInterrupt()  # the process dies waiting: only the intent stays
    with pytest.raises(KeyboardInterrupt):
        two.write("k", 1, "lost?", "op-9")
    with open(tmp_path / "two.jsonl", "a") as f:
        f.write('{"client": "two", "op": "acq')  # a line cut short by kill -9
    history = load(tmp_path)
    assert [(o.client, o.op, o.ok, o.code) for o in history] == [
        (f"a@{os.getpid()}", "acquire", True, None),
        (f"a@{os.getpid()}", "write", True, None),
        ("two", "write", False, "stale_token"),
        ("two", "acquire", None, "transport_error"),
        ("two", "write", None, "in_flight"),
    ]
    assert history[-1].received == float("inf") and history[-1].op_id == "op-9"
    assert history[0].token == 1 and history[0].expires_at == T0 + 11_000
    assert history[1].version == 1 and history[1].value == {"n": 1}
    assert history[2].current_token == 1
    assert all(o.sent <= o.received for o in history)
    assert load(one.ops, two.ops) == history[:-1]
    assert check(history) == []
