"""PostgreSQL connections of the store read the SQL text it writes as it was meant, whatever
client encoding the environment or the role asks for, and commit synchronously whatever the
database's default.

The store writes the values of its batches into the SQL text itself; in SJIS, BIG5 or GBK the
second byte of a character can be a backslash (0x5c), which would swallow an escape. The
connections pin ``client_encoding`` to UTF8 and a batch refuses to run if it is not.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenure import Service
from tenure.store.postgres import tx as postgres_tx
from tenure.store.postgres.store import PostgresStore

# each ends in 0x5c (a backslash) in one of SJIS, BIG5, GBK; and what SQL text escapes
TRICKY = "ソ表能予十功許乗圽媆" + "'\"\\{},; " + "aé€𝄞"
TEXT = st.text(st.sampled_from(TRICKY), min_size=1, max_size=12)
EXAMPLES = itertools.count()
on_postgres = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


@pytest.fixture
def sjis_service(make_service: Callable[..., Service], monkeypatch: pytest.MonkeyPatch) -> Service:
    monkeypatch.setenv("PGCLIENTENCODING", "SJIS")  # what libpq asks the server for
    return make_service()


@on_postgres
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=TEXT, holder=TEXT, task=TEXT, session=TEXT, note=TEXT)
def test_text_columns_read_back_exactly_under_a_non_utf8_client_encoding(
    sjis_service: Service, key: str, holder: str, task: str, session: str, note: str
) -> None:
    service = sjis_service
    # a key of its own for each example; none of them blank
    key, holder, task = f"enc/{next(EXAMPLES)}/{key}", f"h{holder}", f"t{task}"
    meta = {note: [note, None], "n": note}
    lease = service.acquire(holder, key, ttl_ms=60_000, task=task, meta=meta, session=session)
    got = service.get(key)
    assert (got.key, got.holder, got.task, got.meta, got.session) == (
        key,
        holder,
        task,
        meta,
        session,
    )
    service.release(holder, key, lease.token, session=session)
    kinds = [(e.type, e.key, e.holder, e.task) for e in service.events(key=key, limit=10)]
    assert kinds == [("acquired", key, holder, task), ("released", key, holder, task)]


@on_postgres
def test_every_connection_is_utf8_and_a_batch_refuses_another_encoding(
    sjis_service: Service,
) -> None:
    store = sjis_service.store
    assert isinstance(store, PostgresStore)
    with store.pool.connection() as conn:
        assert conn.execute("SHOW client_encoding").fetchone() == ("UTF8",)
        postgres_tx.Batch(conn)  # prepared
        conn.execute("SET client_encoding = 'SJIS'")
        batch = postgres_tx.Batch(conn)  # sets it back before anything is sent
        assert conn.execute("SHOW client_encoding").fetchone() == ("UTF8",)
        assert batch.ask("lock_lease", {"key": "ソ'\\"}) is None


@on_postgres
def test_a_batch_refuses_to_run_if_the_encoding_cannot_be_set(
    sjis_service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sjis_service.store
    assert isinstance(store, PostgresStore)
    with store.pool.connection() as conn:
        conn.execute("SET client_encoding = 'SJIS'")
        monkeypatch.setattr(postgres_tx, "PREPARE_ALL", b"SELECT 1")  # it would not be set back
        with pytest.raises(psycopg.InterfaceError, match="refusing to send values in SQL text"):
            postgres_tx.Batch(conn)
        conn.execute("SET client_encoding = 'UTF8'")


@on_postgres
def test_commits_are_synchronous_whatever_the_database_default(
    make_service: Callable[..., Service], store_url: str
) -> None:
    dbname = psycopg.conninfo.conninfo_to_dict(store_url)["dbname"]
    with psycopg.connect(store_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{dbname}" SET synchronous_commit = off')
        with psycopg.connect(store_url) as plain:  # what a connection gets without the store
            assert plain.execute("SHOW synchronous_commit").fetchone() == ("off",)
    store: Any = make_service().store
    with store.pool.connection() as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
