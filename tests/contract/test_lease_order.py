"""Lists of leases are in code point order of their keys on every backend, whatever the
database's collation: pages, prefixes and the keys under a subtree agree."""

from __future__ import annotations

import pytest

from contract._items import ALICE, BOB
from tenure import Service
from tenure.errors import LeaseHeld
from tenure.store.postgres.store import PostgresStore

# A linguistic collation (en_US and the like) ignores punctuation and case at first:
# "a-lower" before "a/b" before "aB"; in code point order upper case comes first and "-" < "/".
KEYS = ["b", "a/b", "aB", "a-lower", "A-upper", "a_b", "a/b/c", "é", "a.b", "Z"]


def test_lists_are_in_code_point_order(svc: Service) -> None:
    for key in KEYS:
        svc.acquire(ALICE, key)
    assert [lease.key for lease in svc.list()] == sorted(KEYS)


def test_pages_follow_code_point_order(svc: Service) -> None:
    for key in KEYS:
        svc.acquire(ALICE, key)
    keys, after = [], None
    while page := svc.list(limit=3, after=after):
        keys += [lease.key for lease in page]
        after = page[-1].key
    assert keys == sorted(KEYS)
    assert [lease.key for lease in svc.list(after="a-lower")] == [
        k for k in sorted(KEYS) if k > "a-lower"
    ]


def test_a_subtree_finds_the_keys_under_it_and_no_neighbour(svc: Service) -> None:
    """Neighbours of ``a/`` in code point order (``a.b``, ``a0``) and in a linguistic order
    (``a-lower``, ``aB``) are not under it; ``a/b/c`` is."""
    for key in ["a.b", "a0", "a-lower", "aB", "A/x"]:
        svc.acquire(BOB, key)
    lease = svc.acquire(ALICE, "a/", scope="subtree")
    svc.release(ALICE, "a/", lease.token)
    svc.acquire(BOB, "a/b/c")
    with pytest.raises(LeaseHeld, match="a/b/c"):
        svc.acquire(ALICE, "a/", scope="subtree")


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_keys_compare_in_byte_order_on_postgresql(svc: Service) -> None:
    """On PostgreSQL, the order above holds whatever the database's collation because the key
    column's is "C" (byte order); the test server's own collation is byte order already, so the
    lists above would pass without it."""
    store = svc.store
    assert isinstance(store, PostgresStore)
    with store.pool.connection() as conn:
        (collation,) = conn.execute(
            "SELECT collation_name FROM information_schema.columns"
            " WHERE table_name = 'tenure_leases' AND column_name = 'key'"
        ).fetchone() or (None,)
    assert collation == "C"
