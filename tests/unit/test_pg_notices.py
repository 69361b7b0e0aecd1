"""The payloads of PostgreSQL's NOTIFY (one per transaction) and how a listener reads them."""

from __future__ import annotations

from tenure.core.models import EventDraft
from tenure.store.postgres.listen import MAX_PAYLOAD, Listener, notices


def ev(kind: str, key: str) -> EventDraft:
    return EventDraft(kind, key, "alice", None, 1)


def test_a_transaction_sends_one_notice_with_every_key_it_freed() -> None:
    events = [
        ev("acquired", "a"),
        ev("released", "b"),
        ev("expired", "c"),
        ev("released", "b"),
        ev("force_released", "d"),
        ev("conflict", "e"),
    ]
    assert notices(events) == ["e\nk:b\nk:c\nk:d"]
    assert notices([ev("acquired", "a")]) == ["e"]
    assert notices([]) == []


def test_keys_past_the_size_limit_go_in_more_notices() -> None:
    keys = [f"{i:04d}" + "x" * 995 for i in range(20)]  # about 1 kB a line
    payloads = notices([ev("released", k) for k in keys])
    assert len(payloads) > 1
    assert all(len(p.encode()) <= MAX_PAYLOAD for p in payloads)
    lines = [line for p in payloads for line in p.split("\n")]
    assert lines == ["e", *(f"k:{k}" for k in keys)]
    too_long = "y" * MAX_PAYLOAD  # no notice can hold it: its waiters wait for the deadline
    assert notices([ev("released", too_long), ev("released", "z")]) == ["e\nk:z"]


def test_a_listener_wakes_the_log_and_every_key_of_a_notice() -> None:
    woke: list[str] = []
    listener = Listener("postgresql://unused", lambda: woke.append("events"), woke.append)
    for payload in notices([ev("released", "b"), ev("expired", "k:odd")]):
        listener._dispatch(payload)
    assert woke == ["events", "b", "k:odd"]
