"""The PostgreSQL store: a connection pool, row locks, and the database's clock.

Every server sharing the database reads instants from PostgreSQL's ``clock_timestamp()``, so
their deadlines agree. A key's transaction holds the key's row lock (``SELECT … FOR UPDATE``);
a new key first gets a placeholder row (``INSERT … ON CONFLICT DO NOTHING``) so there is a row
to lock, and concurrent first acquisitions queue on it.

A key's transaction runs in pipeline mode (:meth:`PostgresStore._pipelined`): statements are
sent without waiting for their results, and the client waits only where it needs one. A verb is
two round trips: BEGIN, the row lock and the instant; then the update, the notices, the events
and the COMMIT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg.errors import DivisionByZero
from psycopg_pool import ConnectionPool

from tenure.core.clock import Clock
from tenure.core.decide import reaped_event
from tenure.core.items import Item, Transfer
from tenure.core.models import (
    Event,
    EventDraft,
    EventQuery,
    FencedValue,
    FencedWrite,
    KeyRecord,
    Principal,
)
from tenure.store import rows
from tenure.store.postgres_listen import Listener, notices
from tenure.store.postgres_stats import PostgresStats
from tenure.store.sqlfiles import migrations, queries

Q = queries("postgres")
MIGRATION_LOCK = (7468, 0)


def _record(row: Sequence[Any] | None) -> KeyRecord | None:
    if row is None or row[1] == 0:  # token 0: the placeholder of a key being created
        return None
    return rows.record_from(row)


class _PgKeyTx:
    """One key's transaction, on a connection in pipeline mode. A write is sent without waiting
    for its result (an error surfaces at a later statement or at the commit, and rolls the
    whole transaction back); a read waits for its result, and so for every write before it.
    The events are sent at the commit (:meth:`queue_commit`)."""

    def __init__(
        self, conn: psycopg.Connection[Any], key: str, now: int, record: KeyRecord | None
    ) -> None:
        self.conn, self.key, self.now, self.record = conn, key, now, record
        self.cur = conn.cursor()
        self.events: list[EventDraft] = []

    def register(self) -> FencedValue | None:
        row = self.cur.execute(Q["get_register"], {"key": self.key}).fetchone()
        return rows.register_from(row) if row else None

    def find_op(self, op_id: str) -> FencedWrite | None:
        row = self.cur.execute(Q["find_op"], {"key": self.key, "op_id": op_id}).fetchone()
        return rows.op_from(row) if row else None

    def save(self, record: KeyRecord) -> None:
        # An update that would lower the token fails in the server, which aborts the
        # transaction before its COMMIT (see save_lease in queries.sql); key_tx raises then.
        self.cur.execute(Q["save_lease"], rows.record_params(record, rows.dumps(record.meta)))

    def save_register(self, write: FencedWrite, op_id: str | None) -> None:
        params = {
            "key": write.key,
            "token": write.token,
            "value": rows.dumps(write.value),
            "version": write.version,
            "now": self.now,
        }
        self.cur.execute(Q["save_register"], params)
        if op_id is not None:
            del params["now"]
            self.cur.execute(Q["save_op"], {**params, "op_id": op_id})

    def append(self, events: Sequence[EventDraft]) -> None:
        self.events.extend(events)  # sent with the COMMIT, so the event lock is held briefly

    def item(self, item_id: str) -> Item | None:
        row = self.cur.execute(Q["get_item"], {"id": item_id}).fetchone()
        return rows.item_from(row) if row else None

    def save_item(self, item: Item) -> None:
        self.cur.execute(Q["save_item"], rows.item_params(item))

    def add_transfers(self, transfers: Sequence[Transfer]) -> None:
        for t in transfers:
            self.cur.execute(Q["insert_transfer"], rows.transfer_params(t))

    def find_item_op(self, item_id: str, op_id: str) -> Any:
        row = self.cur.execute(Q["find_item_op"], {"item": item_id, "op_id": op_id}).fetchone()
        return None if row is None else rows.loads_text(row[0])

    def save_item_op(self, item_id: str, op_id: str, result: Any) -> None:
        params = {"item": item_id, "op_id": op_id, "result": rows.dumps(result)}
        self.cur.execute(Q["save_item_op"], params)

    def add_principal(self, principal: Principal, token_hash: str, token_id: str) -> None:
        params = {
            **principal.to_dict(),
            "roles": rows.dumps(list(principal.roles)),
            "now": self.now,
        }
        self.cur.execute(Q["add_principal"], params)
        token = {
            "id": token_id,
            "principal": principal.name,
            "token_hash": token_hash,
            "now": self.now,
        }
        self.cur.execute(Q["add_token"], token)

    def send_events(self) -> None:
        """Send the events right before the COMMIT, in the same batch: the event lock is held
        for the server's work and the commit, not for round trips to this client."""
        if not self.events:
            return
        params = [rows.event_params(e, self.now, rows.dumps(e.data)) for e in self.events]
        # The notices first: PostgreSQL delivers them at the commit wherever they are sent in
        # the transaction, and each statement sent after the event lock is client time under it.
        for payload in notices(self.events):
            self.cur.execute(Q["notify"], {"payload": payload})
        self.cur.execute(Q["serialize_events"])
        for event in params:  # ids are handed out here, under the event lock
            self.cur.execute(Q["insert_event"], event)


def insert_events(cur: psycopg.Cursor[Any], events: Sequence[EventDraft], now: int) -> list[Event]:
    """Append ``events`` in the open transaction of ``cur`` (not pipelined), with their ids."""
    if not events:
        return []
    cur.execute(Q["serialize_events"])
    out = []
    for e in events:
        row = cur.execute(
            Q["insert_event"], rows.event_params(e, now, rows.dumps(e.data))
        ).fetchone()
        assert row is not None
        out.append(
            Event(row[0], now, e.type, e.key, e.holder, e.task, e.token, e.actor, e.reason, e.data)
        )
    for payload in notices(events):  # delivered to every listening server on commit
        cur.execute(Q["notify"], {"payload": payload})
    return out


class PostgresStore(PostgresStats):
    """A store in one PostgreSQL database, shareable by several servers."""

    def __init__(
        self,
        url: str,
        *,
        clock: Clock | None = None,
        min_size: int = 2,
        max_size: int = 10,
        timeout: float = 30.0,
    ) -> None:
        self.url = url
        self.clock = clock
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            open=False,
            name="tenure",
        )
        self.pool.open(wait=True, timeout=timeout)
        try:
            self._migrate()
        except BaseException:
            self.pool.close()
            raise

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[Any]]:
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    def _now(self, cur: psycopg.Cursor[Any]) -> int:
        if self.clock is not None:
            return self.clock.now_ms()
        row = cur.execute(Q["now_ms"]).fetchone()
        assert row is not None
        return int(row[0])

    def _migrate(self) -> None:
        with self._tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
            cur.execute(
                "CREATE TABLE IF NOT EXISTS tenure_schema (version integer PRIMARY KEY,"
                " name text NOT NULL, applied_at bigint NOT NULL)"
            )
            row = cur.execute("SELECT coalesce(max(version), 0) FROM tenure_schema").fetchone()
            have = int(row[0]) if row else 0
            known = migrations("postgres")
            if have > len(known):
                raise RuntimeError(f"the database has schema {have}, newer than this tenure")
            for version, name, sql in known[have:]:
                cur.execute(sql.encode())
                cur.execute(
                    "INSERT INTO tenure_schema VALUES (%s, %s, %s)", (version, name, self._now(cur))
                )

    def schema_version(self) -> int:
        row = self._one("SELECT max(version) FROM tenure_schema", {})
        return int(row[0]) if row else 0

    def _one(self, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        with self.pool.connection() as conn:
            return conn.execute(sql.encode(), params).fetchone()

    def _all(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self.pool.connection() as conn:
            return conn.execute(sql.encode(), params).fetchall()

    # the protocol --------------------------------------------------------------------------
    def now_ms(self) -> int:
        if self.clock is not None:
            return self.clock.now_ms()
        row = self._one(Q["now_ms"], {})
        assert row is not None
        return int(row[0])

    @contextmanager
    def key_tx(self, key: str, *, create: bool = False) -> Iterator[_PgKeyTx]:
        try:
            with self._pipelined() as (conn, pipeline):
                # One round trip: BEGIN, the row lock, the instant. The server runs a
                # pipeline's statements in order, so the instant is read once the row lock is
                # granted (a waiter reads it after the holder committed): it orders with the
                # commit, as if the client had waited for the lock before asking.
                locked = conn.execute(Q["lock_lease"], {"key": key})
                clock = self._ask_now(conn)
                pipeline.sync()
                row = locked.fetchone()
                if row is None and create:  # a new key: one more round trip, the same way
                    conn.execute(Q["create_lease_row"], {"key": key})
                    locked = conn.execute(Q["lock_lease"], {"key": key})
                    clock = self._ask_now(conn)
                    pipeline.sync()
                    row = locked.fetchone()
                tx = _PgKeyTx(conn, key, self._read_now(clock), _record(row))
                yield tx
                tx.send_events()  # with the COMMIT, in the round trip that ends the pipeline
        except DivisionByZero as err:  # save_lease refused to lower the token
            raise RuntimeError(f"refused to lower the token of {key!r}") from err

    @contextmanager
    def _pipelined(self) -> Iterator[tuple[psycopg.Connection[Any], psycopg.Pipeline]]:
        """A transaction on a pooled connection in pipeline mode: BEGIN is sent first, the block
        sends its statements and last a COMMIT, which the sync that ends the pipeline sends off
        and waits for. Any error (the database's, raised at whichever later statement or sync
        received it, or the block's) rolls the transaction back."""
        with self.pool.connection() as conn:
            try:
                with conn.pipeline() as pipeline:
                    conn.execute(b"BEGIN")
                    yield conn, pipeline
                    commit = conn.execute(b"COMMIT")
                # Leaving the pipeline synced it: every statement sent has run, and an error
                # of any of them was raised. A COMMIT of a failed transaction rolls it back and
                # says so: that cannot pass for a commit.
                if commit.statusmessage != "COMMIT":
                    raise psycopg.OperationalError(f"the COMMIT said {commit.statusmessage}")
            except BaseException:
                _rollback(conn)
                raise

    def _ask_now(self, conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any] | None:
        """Send the query of the instant (pipeline mode), unless a clock was given."""
        return None if self.clock is not None else conn.execute(Q["now_ms"])

    def _read_now(self, asked: psycopg.Cursor[Any] | None) -> int:
        if asked is None:
            assert self.clock is not None
            return self.clock.now_ms()
        row = asked.fetchone()
        assert row is not None
        return int(row[0])

    @contextmanager
    def group(self) -> Iterator[None]:
        """Each write is its own transaction on its own pooled connection: writes of different
        keys commit in parallel, so there is nothing to batch here."""
        yield

    def renew_all(self, holder: str, keys: Sequence[str] | None) -> tuple[int, list[KeyRecord]]:
        with self._tx() as cur:
            params: dict[str, Any] = {
                "holder": holder,
                "keys": None if keys is None else list(keys),
            }
            locked = [row[0] for row in cur.execute(Q["lock_holder_leases"], params)]
            now = self._now(cur)  # once the rows are locked, so it orders with the commit
            if not locked:
                return now, []
            params.update(now=now, locked=locked)
            return now, [rows.record_from(r) for r in cur.execute(Q["renew_all"], params)]

    def renew_all_json(self, holder: str) -> tuple[int, bytes, int]:
        with self._tx() as cur:
            params: dict[str, Any] = {"holder": holder, "keys": None}
            locked = [row[0] for row in cur.execute(Q["lock_holder_leases"], params)]
            now = self._now(cur)  # once the rows are locked, so it orders with the commit
            if not locked:
                return now, b"", 0
            params.update(now=now, locked=locked)
            row = cur.execute(Q["renew_all_json"], params).fetchone()
            assert row is not None
            return now, (row[1] or "").encode(), int(row[0])

    def get(self, key: str) -> KeyRecord | None:
        return _record(self._one(Q["get_lease"], {"key": key}))

    def live(
        self,
        now: int,
        prefix: str | None = None,
        holder: str | None = None,
        task: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[KeyRecord]:
        params = {
            "now": now,
            "prefix": prefix or None,
            "holder": holder,
            "task": task,
            "after": after,
            "limit": limit,
        }
        return [rows.record_from(r) for r in self._all(Q["live_leases"], params)]

    def read_register(self, key: str) -> FencedValue | None:
        row = self._one(Q["get_register"], {"key": key})
        return rows.register_from(row) if row else None

    def events(self, query: EventQuery) -> list[Event]:
        params = {
            "after": query.after,
            "key": query.key,
            "holder": query.holder,
            "type": query.type,
            "token": query.token,
            "limit": query.limit,
        }
        return [rows.event_from(r) for r in self._all(Q["list_events"], params)]

    def reap(self, limit: int) -> list[Event]:
        with self._tx() as cur:
            now = self._now(cur)
            due = cur.execute(Q["reap"], {"now": now, "limit": limit}).fetchall()
            drafts = [reaped_event(row) for row in sorted(due, key=_deadline)]
            return insert_events(cur, drafts, now)

    def next_deadline(self) -> int | None:
        row = self._one(Q["next_deadline"], {})
        return None if row is None or row[0] is None else int(row[0])

    def add_principal(
        self, principal: Principal, token_hash: str | None = None, token_id: str | None = None
    ) -> None:
        with self._tx() as cur:
            now = self._now(cur)
            params = {**principal.to_dict(), "roles": rows.dumps(list(principal.roles)), "now": now}
            cur.execute(Q["add_principal"], params)
            if token_hash is not None:
                token = {
                    "id": token_id or token_hash[:12],
                    "principal": principal.name,
                    "token_hash": token_hash,
                    "now": now,
                }
                cur.execute(Q["add_token"], token)

    def add_token(self, name: str, token_id: str, token_hash: str) -> None:
        with self._tx() as cur:
            params = {
                "id": token_id,
                "principal": name,
                "token_hash": token_hash,
                "now": self._now(cur),
            }
            cur.execute(Q["add_token"], params)

    def revoke_token(self, name: str, token_id: str) -> bool:
        with self._tx() as cur:
            params = {"id": token_id, "principal": name, "now": self._now(cur)}
            return cur.execute(Q["revoke_token"], params).rowcount == 1

    def list_principals(self) -> list[Principal]:
        return [rows.principal_from(r) for r in self._all(Q["list_principals"], {})]

    def get_principal(self, name: str) -> Principal | None:
        row = self._one(Q["get_principal"], {"name": name})
        return rows.principal_from(row) if row else None

    def principal_by_token(self, token_hash: str) -> Principal | None:
        row = self._one(Q["principal_by_token"], {"token_hash": token_hash})
        return rows.principal_from(row) if row else None

    def create_item(self, item: Item) -> bool:
        with self._tx() as cur:
            return cur.execute(Q["insert_item"], rows.item_params(item)).rowcount == 1

    def get_item(self, item_id: str) -> Item | None:
        row = self._one(Q["get_item"], {"id": item_id})
        return rows.item_from(row) if row else None

    def list_items(
        self,
        status: str | None = None,
        assignee: str | None = None,
        label: str | None = None,
        limit: int = 100,
    ) -> list[Item]:
        params = {"status": status, "assignee": assignee, "label": label, "limit": limit}
        return [rows.item_from(r) for r in self._all(Q["list_items"], params)]

    def ready_items(self, now: int, limit: int) -> list[Item]:
        return [
            rows.item_from(r) for r in self._all(Q["ready_items"], {"now": now, "limit": limit})
        ]

    def transfers(self, item_id: str) -> list[Transfer]:
        return [rows.transfer_from(r) for r in self._all(Q["list_transfers"], {"item": item_id})]

    def get_cursor(self, principal: str, name: str) -> int:
        row = self._one(Q["get_cursor"], {"principal": principal, "name": name})
        return int(row[0]) if row else 0

    def set_cursor(self, principal: str, name: str, event_id: int) -> None:
        with self._tx() as cur:
            params = {"principal": principal, "name": name, "event_id": event_id}
            cur.execute(Q["set_cursor"], params)

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None]:
        """Call ``on_events`` when any server appends events and ``on_free(key)`` when it frees
        a key (LISTEN/NOTIFY); the function returned stops listening."""
        return Listener(self.url, on_events, on_free).start().stop

    def close(self) -> None:
        self.pool.close()


def _deadline(row: tuple[Any, ...]) -> Any:
    return row[4]


def _rollback(conn: psycopg.Connection[Any]) -> None:
    """End a failed pipelined transaction, if the connection still works (the pool discards a
    broken one, and rolls back what is left when a connection comes back)."""
    if conn.broken or conn.closed:
        return
    with suppress(psycopg.Error):
        conn.rollback()
