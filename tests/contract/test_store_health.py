"""A store whose database is known to be down refuses at once, and its probe says why.

A server's watch (:mod:`tenure.server.runtime.dbwatch`) writes what ``probe()`` finds in the
store's ``health``; while ``health.down`` is set, reads and writes fail at once with the
driver's outage error (``503`` on a server) instead of waiting for the database: PostgreSQL's
pool hands out no connection (it would wait 30 s for one), SQLite opens no transaction. Once
it is cleared the same store serves again.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tenure
from tenure.store.errors import failure


def test_a_store_known_to_be_down_refuses_at_once_and_serves_once_it_is_back(
    make_service: Callable[..., tenure.Service],
) -> None:
    service = make_service()
    store = service.store
    service.acquire("alice", "k")
    store.probe()  # the database answers: no error
    assert store.health.down is None

    assert store.health.mark("OperationalError: connection refused")
    assert store.health.since is not None
    for call in (lambda: service.get("k"), lambda: service.acquire("bob", "other")):
        with pytest.raises(Exception) as raised:
            call()
        found = failure(raised.value)
        assert found is not None and found.down, raised.value  # an outage: 503, not 500
        assert "connection refused" in str(raised.value)

    assert store.health.mark(None) and store.health.since is None
    assert service.get("k").holder == "alice"
    assert service.acquire("bob", "other").token > 0
