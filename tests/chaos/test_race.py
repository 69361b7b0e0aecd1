"""Several processes race for one key: one holder at a time, tokens grow in acquisition order.

Invariants 1 and 2 of SPEC section 2, checked by three independent observers:

1. A shared log that each holder appends to (under ``flock``) right after ``acquire`` returns and
   right before it calls ``release``. Its lines are in real-time order, so with one holder at a
   time it reads ``enter t1, exit t1, enter t2, exit t2, …`` with growing tokens. Two holders
   overlapping show up as two ``enter`` lines in a row (``hold_ms`` keeps each window open long
   enough for a second, wrongly granted holder to land in it).
2. The children's own reports (token and ``CLOCK_MONOTONIC`` interval of every lease they held):
   each child's tokens grow, no token is handed out twice, and the intervals sorted by start are
   disjoint.
3. The store's event log. On SQLite event ids are in commit order, so ``acquired`` and
   ``released`` must alternate strictly, with every ``conflict`` and ``written`` inside the
   window of the lease they name. On every backend (PostgreSQL included, where we do not lean on
   id order) each token has exactly one ``acquired`` and one ``released`` event, and sorted by
   token the leases' ``[acquired at, released at]`` intervals on the store's clock are disjoint
   and in order.

The checkers are plain functions; the ``test_checker_*`` tests feed them histories of a broken
store to show they fail when holders overlap or tokens repeat.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import tenure

pytestmark = pytest.mark.slow

WORKERS = Path(__file__).with_name("_workers.py")
KEY = "race/one-key"
PROCESSES = 4
TARGET = 40  # acquisitions per process (each process also stops after SECONDS)
SECONDS = 5.0
HOLD_MS = 3.0


@dataclass(frozen=True)
class Held:
    """One lease as its holder saw it: monotonic instants after acquire and before release."""

    holder: str
    token: int
    entered: int
    left: int


class Violation(AssertionError):
    pass


def _fail(message: str) -> None:
    raise Violation(message)


# checkers -------------------------------------------------------------------------------------
def check_log(lines: Sequence[str]) -> list[tuple[str, int]]:
    """The shared log alternates enter/exit of one lease at a time, with growing tokens."""
    leases: list[tuple[str, int]] = []
    inside: tuple[str, int] | None = None
    last_token, last_ns = 0, 0
    for number, line in enumerate(lines, 1):
        kind, name, token_text, ns_text = line.split()
        token, ns = int(token_text), int(ns_text)
        if ns < last_ns:
            _fail(f"log line {number} goes back in time: {line!r}")
        last_ns = ns
        if kind == "enter":
            if inside is not None:
                _fail(f"log line {number}: {name} entered with {token} while {inside} held")
            if token <= last_token:
                _fail(f"log line {number}: token {token} after {last_token}")
            inside, last_token = (name, token), token
            leases.append(inside)
        elif kind == "exit":
            if inside != (name, token):
                _fail(f"log line {number}: {name} left with {token} but {inside} held")
            inside = None
        else:
            _fail(f"log line {number}: unknown {line!r}")
    if inside is not None:
        _fail(f"the log ends with {inside} still inside")
    return leases


def check_reports(reports: Sequence[dict[str, Any]]) -> list[Held]:
    """Each child's tokens grow; no token twice; intervals sorted by start never overlap."""
    held: list[Held] = []
    for report in reports:
        if report["errors"]:
            _fail(f"{report['name']} saw errors: {report['errors']}")
        tokens = [t for t, *_ in report["held"]]
        if tokens != sorted(set(tokens)):
            _fail(f"{report['name']} got tokens out of order or twice: {tokens}")
        for token, entered, left, _expires in report["held"]:
            if left < entered:
                _fail(f"{report['name']} left {token} before entering it")
            held.append(Held(report["name"], token, entered, left))
    tokens = [h.token for h in held]
    if len(tokens) != len(set(tokens)):
        dupes = sorted({t for t in tokens if tokens.count(t) > 1})
        _fail(f"tokens issued more than once: {dupes}")
    held.sort(key=lambda h: h.entered)
    for before, after in pairwise(held):
        if after.entered <= before.left:
            _fail(f"{after} overlaps {before}")
        if after.token <= before.token:
            _fail(f"{after} acquired after {before} with a smaller token")
    return held


def check_commit_order(events: Sequence[tenure.Event]) -> list[tuple[str, int]]:
    """Events in id (= commit) order: acquired/released alternate, tokens grow."""
    leases: list[tuple[str, int]] = []
    current: tenure.Event | None = None
    last = 0
    for e in events:
        if e.type == "acquired":
            if current is not None:
                _fail(f"event {e.id}: {e.holder} acquired {e.token} while {current.holder} held")
            if e.token is None or e.token <= last:
                _fail(f"event {e.id}: token {e.token} after {last}")
            current, last = e, e.token
            leases.append((e.holder or "", e.token))
        elif e.type == "released":
            if current is None or (e.holder, e.token) != (current.holder, current.token):
                _fail(f"event {e.id}: release of {e.holder}/{e.token} without that lease")
            current = None
        elif e.type in ("conflict", "written"):
            if current is None or (e.holder, e.token) != (current.holder, current.token):
                _fail(f"event {e.id}: {e.type} names {e.holder}/{e.token}, held: {current}")
        else:
            _fail(f"event {e.id}: unexpected {e.type} ({e})")
    if current is not None:
        _fail(f"lease {current.token} never ended")
    return leases


def check_by_token(events: Sequence[tenure.Event]) -> list[tuple[str, int]]:
    """Without trusting id order: one acquisition and one release per token, and the leases,
    sorted by token, occupy disjoint, ordered intervals of the store's clock."""
    acquired: dict[int, tenure.Event] = {}
    ended: dict[int, tenure.Event] = {}
    for e in events:
        if e.type == "acquired":
            assert e.token is not None
            if e.token in acquired:
                _fail(f"token {e.token} acquired twice: {acquired[e.token]} and {e}")
            acquired[e.token] = e
        elif e.type in ("released", "expired", "force_released", "taken_over"):
            assert e.token is not None
            if e.type != "released" or e.token in ended:
                _fail(f"token {e.token} ended unexpectedly: {e}")
            ended[e.token] = e
    if set(acquired) != set(ended):
        _fail(f"acquired {sorted(acquired)} but ended {sorted(ended)}")
    previous: tuple[tenure.Event, tenure.Event] | None = None
    for token in sorted(acquired):
        start, end = acquired[token], ended[token]
        if start.holder != end.holder or end.at < start.at:
            _fail(f"token {token}: acquired {start}, ended {end}")
        if previous is not None and start.at < previous[1].at:
            _fail(f"token {token} acquired at {start.at} before {previous[1].token} ended")
        previous = (start, end)
    return [(acquired[t].holder or "", t) for t in sorted(acquired)]


# the race -------------------------------------------------------------------------------------
def all_events(service: tenure.Service, key: str) -> list[tenure.Event]:
    out: list[tenure.Event] = []
    while True:
        page = service.events(after=out[-1].id if out else 0, key=key, limit=1000)
        if not page:
            return out
        out.extend(page)


def run_race(url: str, log: Path) -> list[dict[str, Any]]:
    start_ns = time.monotonic_ns() + 1_500_000_000  # after every child has imported tenure
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(WORKERS),
                "race",
                url,
                KEY,
                f"racer-{i}",
                str(log),
                f"--start-ns={start_ns}",
                f"--target={TARGET}",
                f"--seconds={SECONDS}",
                f"--hold-ms={HOLD_MS}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    reports = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=SECONDS + 30)
            assert proc.returncode == 0, f"racer exited {proc.returncode}: {err[-2000:]}"
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return reports


def test_processes_race_for_one_key(backend: str, store_url: str, tmp_path: Path) -> None:
    log = tmp_path / "holders.log"
    log.touch()
    reports = run_race(store_url, log)

    held = check_reports(reports)
    from_log = check_log(log.read_text().splitlines())
    store = tenure.open_store(store_url)
    try:
        service = tenure.Service(store)
        events = all_events(service, KEY)
        from_events = check_by_token(events)
        if backend == "sqlite":  # ids are handed out in commit order there
            assert check_commit_order(events) == from_events
        final = service.get(KEY)
        register = service.read(KEY)
        contention = service.contention(KEY)
    finally:
        store.close()

    # The three observers saw the same leases, in the same order.
    reported = [(h.holder, h.token) for h in held]
    assert from_log == reported
    assert from_events == reported

    # The race was a race: every process held the key, and holders changed hands often.
    counts = {r["name"]: len(r["held"]) for r in reports}
    assert all(n > 0 for n in counts.values()), counts
    handovers = sum(a[0] != b[0] for a, b in pairwise(reported))
    assert handovers >= PROCESSES, reported
    conflicts = sum(r["conflicts"] for r in reports)
    assert conflicts > 0
    assert contention == conflicts  # every refused acquisition was counted once
    # (a requester's refusals on the key within a window are one event counting them)
    assert sum(e.data.get("repeats", 1) for e in events if e.type == "conflict") == conflicts

    # The last lease ended by release and the register holds the last holder's write.
    last_holder, last_token = reported[-1]
    assert (final.state, final.token, final.holder) == ("released", last_token, last_holder)
    assert register.token == last_token
    assert register.value == {"holder": last_holder, "token": last_token}
    assert register.version == len(reported)
    print(f"{backend}: {len(reported)} acquisitions, {conflicts} conflicts, {counts}")


# the checkers fail on a broken store ----------------------------------------------------------
def _event(id: int, type: str, holder: str, token: int, at: int) -> tenure.Event:
    return tenure.Event(id, at, type, KEY, holder, None, token, holder, None, {})


def _report(name: str, *held: tuple[int, int, int]) -> dict[str, Any]:
    return {"name": name, "held": [[t, a, b, 0] for t, a, b in held], "errors": []}


def test_checkers_accept_a_correct_history() -> None:
    assert check_log(["enter a 1 10", "exit a 1 20", "enter b 2 21", "exit b 2 30"]) == [
        ("a", 1),
        ("b", 2),
    ]
    assert len(check_reports([_report("a", (1, 10, 20)), _report("b", (2, 21, 30))])) == 2
    events = [
        _event(1, "acquired", "a", 1, 100),
        _event(2, "conflict", "a", 1, 101),
        _event(3, "released", "a", 1, 102),
        _event(4, "acquired", "b", 2, 102),
        _event(5, "released", "b", 2, 110),
    ]
    assert check_commit_order(events) == check_by_token(events) == [("a", 1), ("b", 2)]


def test_checker_rejects_two_holders_at_once() -> None:
    # b was granted the key while a still held it (a store without the row lock)
    with pytest.raises(Violation):
        check_log(["enter a 1 10", "enter b 2 12", "exit a 1 20", "exit b 2 30"])
    with pytest.raises(Violation):
        check_reports([_report("a", (1, 10, 20)), _report("b", (2, 12, 30))])
    overlapping = [
        _event(1, "acquired", "a", 1, 100),
        _event(2, "acquired", "b", 2, 103),
        _event(3, "released", "a", 1, 105),
        _event(4, "released", "b", 2, 110),
    ]
    with pytest.raises(Violation):
        check_commit_order(overlapping)
    with pytest.raises(Violation):
        check_by_token(overlapping)
    # the same history with ids committed out of order (PostgreSQL without id-order promises)
    shuffled = [overlapping[i] for i in (1, 3, 0, 2)]
    with pytest.raises(Violation):
        check_by_token(shuffled)


def test_checker_rejects_repeated_or_shrinking_tokens() -> None:
    with pytest.raises(Violation):
        check_log(["enter a 2 10", "exit a 2 20", "enter b 2 21", "exit b 2 30"])
    with pytest.raises(Violation):
        check_log(["enter a 2 10", "exit a 2 20", "enter b 1 21", "exit b 1 30"])
    with pytest.raises(Violation):
        check_reports([_report("a", (2, 10, 20)), _report("b", (2, 21, 30))])
    with pytest.raises(Violation):
        check_reports([_report("a", (2, 10, 20)), _report("b", (1, 21, 30))])
    twice = [
        _event(1, "acquired", "a", 2, 100),
        _event(2, "released", "a", 2, 101),
        _event(3, "acquired", "b", 2, 102),
        _event(4, "released", "b", 2, 103),
    ]
    with pytest.raises(Violation):
        check_commit_order(twice)
    with pytest.raises(Violation):
        check_by_token(twice)
    # tokens out of acquisition order: b's larger token was granted before a's smaller one
    backwards = [
        _event(1, "acquired", "b", 3, 100),
        _event(2, "released", "b", 3, 101),
        _event(3, "acquired", "a", 2, 102),
        _event(4, "released", "a", 2, 103),
    ]
    with pytest.raises(Violation):
        check_commit_order(backwards)
    with pytest.raises(Violation):
        check_by_token(backwards)


def test_checker_rejects_a_lease_that_expired_mid_hold() -> None:
    events = [_event(1, "acquired", "a", 1, 100), _event(2, "expired", "a", 1, 200)]
    with pytest.raises(Violation):
        check_commit_order(events)
    with pytest.raises(Violation):
        check_by_token(events)
