"""Threads race plain and subtree acquisitions (and releases) over overlapping keys, each on a
store of its own (its own connections), some of them in group commits as a server makes them
(on PostgreSQL with their keys locked ahead, as the server's executor does): two leases that
conflict through a subtree are never live at the same instant.

Checked two ways after every round: the live leases at its end pairwise (by a query), and every
lease the round granted, from the event log: the ``[acquired, released)`` intervals on the
store's clock of two leases that conflict (one a subtree over the other's key, different
holders) never overlap. The ``test_checker_*`` test shows the check fails on a broken history.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

import pytest

import tenure
from tenure import LeaseHeld
from tenure.store.postgres.store import PostgresStore

pytestmark = pytest.mark.slow

THREADS = 6
ROUNDS = 12
OPS = 25  # per thread and round
TTL_MS = 120_000  # nothing expires during a round
TREE = ("", "a/", "a/b/", "a/b/c", "a/b/d", "a/e", "f/", "f/g")


@dataclass(frozen=True)
class Granted:
    key: str
    scope: str
    holder: str
    start: int
    end: int | None  # None: still live


def overlaps(a: Granted, b: Granted) -> bool:
    """``a`` and ``b`` conflict through a subtree and were live at a common instant."""
    if a.holder == b.holder or a.key == b.key:
        return False
    over = (a.scope == "subtree" and b.key.startswith(a.key)) or (
        b.scope == "subtree" and a.key.startswith(b.key)
    )
    if not over:
        return False
    a_end = a.end if a.end is not None else 2**62
    b_end = b.end if b.end is not None else 2**62
    return a.start < b_end and b.start < a_end


def check(granted: list[Granted]) -> None:
    for i, a in enumerate(granted):
        for b in granted[i + 1 :]:
            assert not overlaps(a, b), f"two conflicting leases at once: {a} and {b}"


def history(service: tenure.Service, prefix: str) -> list[Granted]:
    """Every lease granted under ``prefix``, from the event log."""
    starts: dict[tuple[str, int], tuple[str, str, int]] = {}
    ends: dict[tuple[str, int], int] = {}
    after = 0
    while page := service.events(after=after, limit=1000):
        after = page[-1].id
        for e in page:
            if not e.key or not e.key.startswith(prefix) or e.token is None:
                continue
            if e.type == "acquired":
                scope = str(e.data.get("scope", "key"))
                starts[e.key, e.token] = (scope, e.holder or "", e.at)
            elif e.type in ("released", "expired", "force_released"):
                ends[e.key, e.token] = e.at
    return [
        Granted(key, scope, holder, at, ends.get((key, token)))
        for (key, token), (scope, holder, at) in starts.items()
    ]


def grouping(service: tenure.Service, keys: list[str]) -> AbstractContextManager[None]:
    store = service.store
    if isinstance(store, PostgresStore):
        return store.group(keys)  # the server's executor: keys (and prefixes) locked ahead
    return service.group()


def worker(
    url: str, index: int, prefix: str, start: threading.Barrier, errors: list[BaseException]
) -> None:
    store = tenure.open_store(url)
    service = tenure.Service(store)
    rng = random.Random(index * 7919 + len(prefix))
    who, held = f"p{index}", set[str]()

    def run(ops: list[tuple[str, str]]) -> set[str]:
        """The ops (key, "release" | scope) in order: what ``who`` holds after them."""
        now_held = set(held)
        for key, what in ops:
            if what == "release":
                service.release(who, key)
                now_held.discard(key)
                continue
            try:
                service.acquire(who, key, TTL_MS, scope=what)
                now_held.add(key)
            except LeaseHeld:
                pass
        return now_held

    try:
        start.wait(30)
        for _ in range(OPS):
            keys = list(dict.fromkeys(prefix + rng.choice(TREE) for _ in range(rng.choice((1, 3)))))
            # a held key is released, never re-acquired (a renewal records no event)
            ops = [(k, "release" if k in held else _scope(k, rng)) for k in keys]
            if len(ops) == 1:
                held = run(ops)
                continue
            try:
                with grouping(service, keys):
                    after = run(ops)
            except Exception:  # the group's transaction failed (a deadlock): nothing happened
                after = run(ops)  # each call on its own, as the server's executor does
            held = after
    except BaseException as exc:  # reported by the test
        errors.append(exc)
    finally:
        store.close()


def _scope(key: str, rng: random.Random) -> str:
    return "subtree" if key.endswith("/") and rng.random() < 0.7 else "key"


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_plain_and_subtree_acquisitions_race(backend: str, fresh_url: Callable[[], str]) -> None:
    url = fresh_url()
    observer = tenure.Service(tenure.open_store(url))
    subtrees = 0
    try:
        for round_ in range(ROUNDS):
            prefix = f"race{round_}/"
            start = threading.Barrier(THREADS)
            errors: list[BaseException] = []
            threads = [
                threading.Thread(target=worker, args=(url, i, prefix, start, errors))
                for i in range(THREADS)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors, errors
            live = observer.list(prefix=prefix)
            check([Granted(x.key, x.scope, x.holder, 0, None) for x in live])
            granted = history(observer, prefix)
            assert len(granted) >= len(live)
            subtrees += sum(g.scope == "subtree" for g in granted)
            check(granted)
        assert subtrees > 0
    finally:
        observer.store.close()


def test_checker_rejects_conflicting_leases_at_once() -> None:
    top = Granted("t/", "subtree", "p1", 10, 20)
    check([top, Granted("t/x", "key", "p2", 20, None), Granted("u/x", "key", "p2", 0, None)])
    check([top, Granted("t/x", "key", "p1", 12, 15)])  # its own holder
    with pytest.raises(AssertionError):
        check([top, Granted("t/x", "key", "p2", 19, 30)])
    with pytest.raises(AssertionError):
        check([top, Granted("t/a/", "subtree", "p2", 0, 11)])
