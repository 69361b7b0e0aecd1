"""The PostgreSQL connector: a connection pool, row locks, and the database's clock.

Every server sharing the database reads instants from PostgreSQL's ``clock_timestamp()``, so
their deadlines agree. A key's transaction holds the key's row lock (``SELECT … FOR UPDATE``);
a new key first gets a placeholder row (``INSERT … ON CONFLICT DO NOTHING``) so there is a row
to lock, and concurrent first acquisitions queue on it.

A key's transaction sends its statements in batches of prepared statements
(:mod:`tenure.store.postgres.tx`), so the client waits only where it needs a result: a verb is
two round trips, BEGIN, the row lock and the instant (:mod:`tenure.store.postgres.keylock`);
then the update, the notices, the events and the COMMIT. In a group
(:meth:`PostgresConnector.group`, the server's group commit) many verbs share one transaction:
a round trip each, and one COMMIT for all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, TypedDict

import psycopg
from psycopg.errors import DivisionByZero, InvalidArgumentForLogarithm

from tenure.core.clock import Clock
from tenure.core.decide import reaped_event
from tenure.core.models import (
    Event,
    EventDraft,
    KeyRecord,
)
from tenure.store import rows, writes
from tenure.store.health import Health
from tenure.store.postgres import keylock, renew_json
from tenure.store.postgres import session as session
from tenure.store.postgres import tx as tx_module
from tenure.store.postgres.continuity import Continuity
from tenure.store.postgres.listen import Listener, notices
from tenure.store.postgres.pool import Pool, probe_connection
from tenure.store.postgres.tx import SAVEPOINT, Batch, Group, KeyTx, in_doubt, over_bound
from tenure.store.sqlfiles import migrations, queries
from tenure.store.values import Reach

Q = queries("postgres")
MIGRATION_LOCK = (7468, 0)


def insert_events(cur: psycopg.Cursor[Any], events: Sequence[EventDraft], now: int) -> list[Event]:
    """Append ``events`` in the open transaction of ``cur``, one statement each, with their
    ids (for the reaper, whose caller needs them)."""
    if not events:
        return []
    cur.execute(Q["announce_events"])  # readers stop below this transaction's ids until it ends
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


class PostgresOptions(TypedDict, total=False):
    """A :class:`PostgresConnector`'s options beside its URL: ``clock`` (the store's time, the
    database's own by default), the connection pool's ``min_size`` (2) and ``max_size`` (10),
    and ``timeout`` (30 s): how long to wait for a connection, at the start and later."""

    clock: Clock | None
    min_size: int
    max_size: int
    timeout: float


class PostgresConnector:
    """One PostgreSQL database, shareable by several servers."""

    Q: Mapping[str, str] = Q
    NO_LIMIT: int | None = None

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
        self._local = threading.local()  # .group: this thread's open group, if any
        #: principals a group's commit found at their bound lately: counted in the call
        self.crowded = tx_module.Crowded()
        self.health = Health()
        self._probe: psycopg.Connection[Any] | None = None  # the watcher's own connection
        self.continuity = Continuity(self._raise_floor_on)
        self.pool = Pool(
            url,
            health=self.health,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            # No automatic prepared statements: psycopg would DEALLOCATE ALL at every ROLLBACK,
            # the key transactions' too (tenure.store.postgres.tx prepares those itself).
            kwargs={"autocommit": True, "prepare_threshold": None, **session.OPTIONS},
            configure=self._configure,
            open=False,
            name="tenure",
        )
        self.pool.open(wait=True, timeout=timeout)
        try:
            self._migrate()
        except BaseException:
            self.pool.close()
            raise

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection of the pool: its session settings, and the floor raised if it
        reached another database than before (:mod:`tenure.store.postgres.continuity`)."""
        session.configure(conn)
        self.continuity.check(conn)

    def _raise_floor_on(self, conn: psycopg.Connection[Any], reason: str) -> None:
        with conn.transaction(), conn.cursor() as cur:
            writes.raise_floor_in(self, cur, reason)

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[Any]]:
        with self.pool.connection() as conn:
            committing = False
            try:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
                    committing = True
            except psycopg.Error as exc:
                if committing and (conn.broken or conn.closed):  # the COMMIT's fate is unknown
                    raise in_doubt(exc) from exc
                raise

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

    def _one(self, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        with self.pool.connection() as conn:
            return conn.execute(sql.encode(), params).fetchone()

    def _all(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self.pool.connection() as conn:
            return conn.execute(sql.encode(), params).fetchall()

    # the primitives (tenure.store.connector) -----------------------------------------------
    def query_all(self, name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        return self._all(Q[name], params)

    def query_one(self, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        return self._one(Q[name], params)

    @contextmanager
    def reading(self) -> Iterator[psycopg.Cursor[Any]]:
        with self.pool.connection() as conn, conn.cursor() as cur:
            yield cur

    @contextmanager
    def snapshot(self) -> Iterator[psycopg.Cursor[Any]]:
        with self.pool.connection() as conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            try:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            finally:
                conn.isolation_level = None

    def writing(self) -> AbstractContextManager[psycopg.Cursor[Any]]:
        return self._tx()

    def now_in(self, cur: Any) -> int:
        return self._now(cur)

    def append(self, cur: Any, events: Sequence[EventDraft], now: int) -> list[Event]:
        return insert_events(cur, events, now)

    def texts(self, values: Sequence[str]) -> list[str]:
        return list(values)

    def stats_rows(self, name: str, params: dict[str, Any]) -> Iterator[Any]:
        return iter(self._all(Q[name], params))

    # the protocol --------------------------------------------------------------------------
    def now_ms(self) -> int:
        if self.clock is not None:
            return self.clock.now_ms()
        row = self._one(Q["now_ms"], {})
        assert row is not None
        return int(row[0])

    @contextmanager
    def key_tx(
        self, key: str, *, create: bool = False, reach: Reach | None = None, extends: bool = False
    ) -> Iterator[KeyTx]:
        group: Group | None = getattr(self._local, "group", None)
        guard = reach is not None or extends  # it may make a lease live: the prefix locks
        if group is not None:
            with self._joined(group, key, create=create, reach=reach, guard=guard) as tx:
                yield tx
            return
        with self.pool.connection() as conn:
            try:
                batch = Batch(conn)
                batch.begin()
                locked = keylock.lock_key(
                    batch, key, reach=reach, create=create, guard=guard, clock=self.clock
                )
                now = locked.now
                tx = KeyTx(batch, key, now, locked.record, floor=locked.floor)
                tx.nearby_records = locked.nearby
                yield tx
                batch.queue_events([(e, now) for e in tx.events])
                batch.commit()
            except DivisionByZero as err:  # save_lease refused to lower the token
                _rollback(conn)
                raise RuntimeError(f"refused to lower the token of {key!r}") from err
            except BaseException:
                _rollback(conn)
                raise

    @contextmanager
    def _joined(
        self, group: Group, key: str, *, create: bool, reach: Reach | None, guard: bool
    ) -> Iterator[KeyTx]:
        """A key transaction inside ``group`` (:func:`tenure.store.postgres.keylock.lock_key`)."""
        batch = group.batch
        locked = keylock.lock_key(
            batch, key, reach=reach, create=create, guard=guard, clock=self.clock, group=group
        )
        now = locked.now
        tx = KeyTx(batch, key, now, locked.record, mark=batch.mark(), floor=locked.floor)
        tx.savepoint = locked.savepoint
        tx.nearby_records = locked.nearby
        tx.crowded, tx.group = self.crowded, group
        try:
            yield tx
        except BaseException:
            tx.undo()
            raise
        if tx.savepoint:
            batch.add_sql(f"RELEASE SAVEPOINT {SAVEPOINT}")
        if tx.saved is not None:
            group.saves[key] = group.locked[key] = tx.saved
        group.events.extend((e, now) for e in tx.events)

    @contextmanager
    def group(self, keys: Sequence[str] = ()) -> Iterator[None]:
        """The key transactions of this thread inside share one transaction on one connection,
        committed when the block ends (:class:`tenure.store.postgres.tx.Group`): each sees what
        the ones before it wrote, one that fails in Python is undone alone, and nothing is
        durable (or visible to others) before the commit. An error of the database (a write,
        the commit) loses the whole group: it raises in the call that met it, and here. Other
        writes of this thread inside (renew_all, principals…) are transactions of their own.
        Nested groups are one group.

        ``keys``: the keys the calls will write, if known. The group's first round trip locks
        them (in key order, so that groups of different servers cannot deadlock on them) and
        reads the instant and the auth version: their calls then need no round trip of their
        own, and all see that instant. Subtree acquisitions run in groups like any call: the
        same round trip takes the keys' prefix locks (all of them, shortest first) and locks
        the subtree leases above them with the keys' rows, in key order, and each call decides
        on the group's own records where it has them (:mod:`tenure.store.postgres.keylock`)."""
        if getattr(self._local, "group", None) is not None:
            yield
            return
        with self.pool.connection() as conn:
            group = self._local.group = Group(conn)
            try:
                if keys:
                    keylock.lock_ahead(group, list(dict.fromkeys(keys)), self.clock)
                yield
                group.commit()
            except InvalidArgumentForLogarithm as err:  # check_live_leases: a bound passed
                _rollback(conn)
                self.crowded.add(group.checks)
                raise over_bound(group.checks) from err
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self._local.group = None

    def auth_version(self) -> int:
        """Moves whenever a principal or a token changes (migration 0004's triggers)."""
        group: Group | None = getattr(self._local, "group", None)
        if group is not None and group.auth_version is not None:
            return group.auth_version  # read in this transaction
        row = self._read("auth_version", {})
        assert row is not None
        return int(row[0])

    def _read(self, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """One prepared read (:data:`tenure.store.postgres.tx.HOT`), in this thread's group if
        it has one (after the writes queued there)."""
        group: Group | None = getattr(self._local, "group", None)
        if group is not None:
            return group.batch.ask(name, params)
        with self.pool.connection() as conn:
            return Batch(conn).ask(name, params)

    def renew_all(
        self, holder: str, session: str | None, keys: Sequence[str] | None
    ) -> tuple[int, list[KeyRecord]]:
        with self._tx() as cur:
            params: dict[str, Any] = {
                "holder": holder,
                "session": session,
                "keys": None if keys is None else list(keys),
            }
            locked = [row[0] for row in cur.execute(Q["lock_holder_leases"], params)]
            now = self._now(cur)  # once the rows are locked, so it orders with the commit
            if not locked:
                return now, []
            params.update(now=now, locked=locked)
            return now, [rows.record_from(r) for r in cur.execute(Q["renew_all"], params)]

    def renew_all_json(self, holder: str, session: str | None) -> tuple[int, list[bytes], int]:
        with self._tx() as cur:
            return renew_json.renew_all_json(cur, holder, session, lambda: self._now(cur))

    def reap(self, limit: int) -> list[Event]:
        with self._tx() as cur:
            now = self._now(cur)
            params = {"now": now, "limit": limit}
            moved = limit
            while moved == limit:  # each round moves leases out of the due range: it ends
                moved = cur.execute(Q["move_due"], params).rowcount
            due = cur.execute(Q["reap"], params).fetchall()
            drafts = [reaped_event(row) for row in sorted(due, key=_deadline)]
            return insert_events(cur, drafts, now)

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None]:
        """Call ``on_events`` when any server appends events and ``on_free(key)`` when it frees
        a key (LISTEN/NOTIFY); the function returned stops listening."""
        return Listener(self.url, on_events, on_free).start().stop

    def group_commit(self) -> PostgresConnector:
        """A server's group commits: :meth:`group`, in one thread."""
        return self

    def probe(self) -> None:
        """Check that the database answers, on a connection of its own (not the pool's: a
        pool busy with requests is no outage); raises the driver's error if it does not. For
        one thread at a time (the server's watcher)."""
        try:
            if self._probe is None or self._probe.closed:
                self._probe = probe_connection(self.url)
            row = self._probe.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is not None and row[0]:  # a standby (a URL without a writable host)
                raise psycopg.errors.ReadOnlySqlTransaction(
                    "the database is a read-only standby: no primary takes writes (give "
                    "the URL every host with target_session_attrs=read-write)"
                )
        except BaseException:
            self._close_probe()
            raise

    def recovered(self) -> None:
        """The database answers again after an outage the watch saw: it may be another one
        (a promoted standby), so the token floor is raised from the clock (reason
        ``reconnect``) on the watch's connection, before the pool hands out another."""
        if self._probe is None or self._probe.closed:
            self._probe = probe_connection(self.url)
        self.continuity.reconnected(self._probe)

    def _close_probe(self) -> None:
        probe, self._probe = self._probe, None
        if probe is not None:
            with suppress(psycopg.Error):
                probe.close()

    def close(self) -> None:
        self._close_probe()
        self.pool.close()


def _deadline(row: tuple[Any, ...]) -> Any:
    return row[4]


def _rollback(conn: psycopg.Connection[Any]) -> None:
    """End a failed transaction, if the connection still works (the pool discards a
    broken one, and rolls back what is left when a connection comes back)."""
    if conn.broken or conn.closed:
        return
    with suppress(psycopg.Error):
        conn.rollback()
