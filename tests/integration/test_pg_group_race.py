"""Two PostgreSQL servers' group commits racing on the same keys (invariants 1, 2 and 4).

This test found the flaw of an experiment (fast groups, 2026-11-24, reverted: see
docs/performance.md): groups that decided on an instant a few ms ahead of the database's clock
let the next ordinary group record an earlier one, a release at 858 followed by an acquisition
at 857.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import threading
import time
from functools import partial
from typing import Any

import pytest

from tenure import (
    Lease,
    LeaseHeld,
    LeaseLost,
    NotHolder,
    Policy,
    PolicySet,
    Service,
    StaleToken,
)
from tenure.core.models import FencedWrite
from tenure.server.runtime.executor import PgGroupExecutor
from tenure.store.postgres.store import PostgresStore

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


def test_two_servers_racing_on_short_leases_never_grant_a_live_lease(pg: PostgresStore) -> None:
    """Two servers' group threads (their own stores on one database), a reaper and many
    holders race on three keys with leases of 20-60 ms, so that groups of both servers decide
    on the same rows around their deadlines. By the recorded instants, every grant comes after
    the lease before it ended: released first, or lapsed at the latest deadline any of its
    holder's grants or renewals was given (invariant 1). Fenced writes keep their tokens in
    order."""
    policy = PolicySet(Policy(min_ttl=20, default_ttl=50))
    second = PostgresStore(pg.url)
    services = [Service(pg, policy), Service(second, policy)]
    executors = [PgGroupExecutor(s) for s in services]
    keys = ["race/a", "race/b", "race/c"]
    granted: dict[tuple[str, int], int] = {}  # (key, token) -> the latest deadline given
    writes: list[FencedWrite] = []
    stop = threading.Event()

    def reap() -> None:
        while not stop.wait(0.005):
            services[0].reap()

    async def holder(name: str, rnd: random.Random, until: float) -> None:
        while time.monotonic() < until:
            key, i = rnd.choice(keys), rnd.randrange(2)
            ex, svc, ttl = executors[i], services[i], rnd.randint(20, 60)
            try:
                lease = await ex.run(partial(svc.acquire, name, key, ttl_ms=ttl), key)
            except LeaseHeld:
                await asyncio.sleep(rnd.uniform(0, 0.01))
                continue
            seen(lease)
            with contextlib.suppress(LeaseLost, NotHolder, StaleToken):  # it lapsed meanwhile
                for _ in range(rnd.randint(0, 2)):
                    await asyncio.sleep(rnd.uniform(0, 0.03))
                    seen(await ex.run(partial(svc.renew, name, key, lease.token, ttl), key))
                    value = [name, lease.token]
                    writes.append(
                        await ex.run(partial(svc.write, name, key, lease.token, value), key)
                    )
                if rnd.random() < 0.6:
                    await ex.run(partial(svc.release, name, key, lease.token), key)

    def seen(lease: Lease) -> None:
        at = (lease.key, lease.token)
        granted[at] = max(granted.get(at, 0), lease.expires_at)

    async def main() -> None:
        until = time.monotonic() + 3.0
        rnds = [random.Random(i) for i in range(12)]
        await asyncio.gather(*(holder(f"h{i}", rnds[i], until) for i in range(12)))

    reaper = threading.Thread(target=reap, daemon=True)
    reaper.start()
    try:
        asyncio.run(main())
    finally:
        stop.set()
        reaper.join(5)
        for ex in executors:
            ex.close()
        second.close()
    events: list[Any] = []
    while page := services[0].events(after=events[-1].id if events else 0, limit=1000):
        events += page
    events = [e for e in events if e.key in keys]
    for key in keys:
        acquired = [e for e in events if e.key == key and e.type == "acquired"]
        tokens = [e.token for e in acquired]
        assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), key
        released = {e.token: e.at for e in events if e.key == key and e.type == "released"}
        for before, after in itertools.pairwise(acquired):
            assert before.token is not None
            # every grant was one of the holders' own: its deadlines were seen
            ended = released.get(before.token, granted[(key, before.token)])
            assert after.at >= ended, (key, before, after, ended)
    for a, b in itertools.pairwise(sorted(writes, key=lambda w: (w.key, w.version))):
        if a.key == b.key:
            assert a.token <= b.token, (a, b)
    assert len(events) > 100 and writes
    print(f"{len(events)} events, {len(writes)} writes")
