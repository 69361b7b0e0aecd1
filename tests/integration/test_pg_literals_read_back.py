"""The literals of :mod:`tenure.store.postgres.literals` read back by a real PostgreSQL as the
values they were written from, and the store's text that needs escaping kept exactly."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenure import Service
from tenure.store.postgres import tx as postgres_tx
from tenure.store.postgres.literals import literals
from tenure.store.postgres.store import PostgresStore

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
BIGINT = st.integers(-(2**63), 2**63 - 1)
ROW = st.tuples(
    st.none() | TEXT,
    st.none() | BIGINT,
    st.none() | st.booleans(),
    st.lists(st.none() | TEXT, max_size=5),
    st.lists(st.none() | BIGINT, max_size=5),
    st.lists(st.none() | st.booleans(), max_size=5),
)
PREPARE = (
    "PREPARE echo AS"
    " SELECT $1::text, $2::bigint, $3::boolean, $4::text[], $5::bigint[], $6::boolean[]"
)


@pytest.fixture(scope="module")
def conn(pg_server_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(pg_server_url, autocommit=True, prepare_threshold=None) as c:
        c.execute(PREPARE)
        yield c


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(row=ROW)
def test_every_value_reads_back_as_written(
    conn: psycopg.Connection[Any], row: tuple[Any, ...]
) -> None:
    got = conn.execute(f"EXECUTE echo({literals(row)})".encode(), prepare=False).fetchone()
    assert got == row


def test_text_that_looks_like_sql_is_only_text(conn: psycopg.Connection[Any]) -> None:
    evil = "x'); DROP TABLE pg_class; --\\'\""
    got = conn.execute(f"EXECUTE echo({literals([evil, 1, True, [evil], [], []])})".encode())
    assert got.fetchone() == (evil, 1, True, [evil], [], [])


on_postgres = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


@on_postgres
def test_keys_tasks_and_meta_that_need_escaping_are_kept_exactly(
    make_service: Callable[..., Service],
) -> None:
    service = make_service()
    assert isinstance(service.store, PostgresStore)
    key, task = 'jobs/it\'s \\ "quoted" {a,b}', "task'); DROP TABLE tenure_leases; --"
    meta = {"note": 'it\'s \\ "quoted"', "list": ["NULL", None, "{}"]}
    lease = service.acquire("o'brien", key, ttl_ms=10_000, task=task, meta=meta)
    service.renew("o'brien", key, lease.token)
    got = service.get(key)
    assert got is not None
    assert (got.key, got.holder, got.task, got.meta) == (key, "o'brien", task, meta)
    assert [e.key for e in service.events(limit=10)] == [key]


@on_postgres
def test_a_batch_turns_standard_conforming_strings_back_on(
    make_service: Callable[..., Service],
) -> None:
    """The literals double quotes and leave backslashes alone: right only with
    standard_conforming_strings on, so a connection where it was turned off gets it back."""
    service = make_service()
    store = service.store
    assert isinstance(store, PostgresStore)
    with store.pool.connection() as c:
        postgres_tx.Batch(c)  # prepared: the next batch would not prepare again
        c.execute("SET standard_conforming_strings = off")
        batch = postgres_tx.Batch(c)
        assert c.pgconn.parameter_status(b"standard_conforming_strings") == b"on"
        assert batch.ask("lock_lease", {"key": "a\\'b"}) is None
