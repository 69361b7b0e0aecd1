"""The PostgreSQL store: a connection pool, row locks, and the database's clock.

Every server sharing the database reads instants from PostgreSQL's ``clock_timestamp()``, so
their deadlines agree. A key's transaction holds the key's row lock (``SELECT … FOR UPDATE``);
a new key first gets a placeholder row (``INSERT … ON CONFLICT DO NOTHING``) so there is a row
to lock, and concurrent first acquisitions queue on it.

A key's transaction sends its statements in batches of prepared statements
(:mod:`tenure.store.postgres.tx`), so the client waits only where it needs a result: a verb is
two round trips, BEGIN, the row lock and the instant; then the update, the notices, the events
and the COMMIT. In a group (:meth:`PostgresStore.group`, the server's group commit) many verbs
share one transaction: a round trip each, and one COMMIT for all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

import psycopg
from psycopg.errors import DivisionByZero, InvalidArgumentForLogarithm

from tenure.core.clock import Clock
from tenure.core.decide import reaped_event
from tenure.core.models import (
    Event,
    EventDraft,
    KeyRecord,
    LostLease,
)
from tenure.core.token_floor import TokenFloor
from tenure.store import rows
from tenure.store.compaction import Compaction
from tenure.store.health import Health
from tenure.store.postgres import renew_json, tree
from tenure.store.postgres import session as session
from tenure.store.postgres import tx as tx_module
from tenure.store.postgres.listen import Listener, notices
from tenure.store.postgres.pool import Pool, probe_connection
from tenure.store.postgres.stats import PostgresStats
from tenure.store.postgres.tx import SAVEPOINT, Batch, Group, KeyTx, in_doubt, over_bound, record
from tenure.store.reads import Reads
from tenure.store.sqlfiles import migrations, queries
from tenure.store.values import Reach
from tenure.store.writes import Writes

Q = queries("postgres")
MIGRATION_LOCK = (7468, 0)


def _floors(row: Any) -> tuple[int, int]:
    """The token floor and the retired-token mark (:data:`Q` ``token_floor``)."""
    return (int(row[0]), int(row[1])) if row else (0, 0)


def _floor(cur: psycopg.Cursor[Any]) -> TokenFloor:
    floor = cur.execute(Q["token_floor"]).fetchone()
    most = cur.execute(Q["max_token"]).fetchone()
    return TokenFloor(int(floor[0]) if floor else 0, int(most[0]) if most else 0)


def insert_events(cur: psycopg.Cursor[Any], events: Sequence[EventDraft], now: int) -> list[Event]:
    """Append ``events`` in the open transaction of ``cur``, one statement each, with their
    ids (for the reaper, whose caller needs them)."""
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


class PostgresStore(PostgresStats, Reads, Writes, Compaction):
    """A store in one PostgreSQL database, shareable by several servers."""

    Q: Mapping[str, str] = Q

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
        self.pool = Pool(
            url,
            health=self.health,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            # No automatic prepared statements: psycopg would DEALLOCATE ALL at every ROLLBACK,
            # the key transactions' too (tenure.store.postgres.tx prepares those itself).
            kwargs={"autocommit": True, "prepare_threshold": None, **session.OPTIONS},
            configure=session.configure,
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

    def schema_version(self) -> int:
        row = self._one("SELECT max(version) FROM tenure_schema", {})
        return int(row[0]) if row else 0

    def _one(self, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        with self.pool.connection() as conn:
            return conn.execute(sql.encode(), params).fetchone()

    def _all(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self.pool.connection() as conn:
            return conn.execute(sql.encode(), params).fetchall()

    def _writing(self) -> AbstractContextManager[psycopg.Cursor[Any]]:
        return self._tx()

    def _now_in(self, cur: Any) -> int:
        return self._now(cur)

    def _append(self, cur: Any, events: Sequence[EventDraft], now: int) -> list[Event]:
        return insert_events(cur, events, now)

    def _query_all(self, name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        return self._all(Q[name], params)

    def _texts(self, values: Sequence[str]) -> list[str]:
        return list(values)

    def _query_one(self, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        return self._one(Q[name], params)

    # the protocol --------------------------------------------------------------------------
    def now_ms(self) -> int:
        if self.clock is not None:
            return self.clock.now_ms()
        row = self._one(Q["now_ms"], {})
        assert row is not None
        return int(row[0])

    @contextmanager
    def key_tx(
        self,
        key: str,
        *,
        create: bool = False,
        reach: Reach | None = None,
        extends: bool = False,
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
                # One round trip: BEGIN, the prefix locks (tree), a new key's placeholder
                # row, the row lock, the nearby leases, the instant. PostgreSQL runs them in
                # order, so the instant is read once the row lock is granted (a waiter reads it
                # after the holder committed): it orders with the commit, as if the client had
                # waited for the lock before asking.
                batch.add_sql("BEGIN")
                if guard:
                    tree.queue_key_locks(batch, key)
                row, now, floor, nearby = self._lock(batch, key, reach, create=create)
                if create and row is None:
                    # Its row was there when the placeholder was tried, and a compaction
                    # deleted it before the lock was granted: make the placeholder now, so the
                    # key is locked (a concurrent acquisition waits for this one).
                    row, now, floor, nearby = self._lock(batch, key, reach, create=True)
                tx = KeyTx(batch, key, now, record(row), floor=floor)
                tx.nearby_records = nearby
                yield tx
                batch.queue_events([(e, now) for e in tx.events])
                batch.commit()
            except DivisionByZero as err:  # save_lease refused to lower the token
                _rollback(conn)
                raise RuntimeError(f"refused to lower the token of {key!r}") from err
            except BaseException:
                _rollback(conn)
                raise

    def _lock(
        self,
        batch: Batch,
        key: str,
        reach: Reach | None = None,
        group: Group | None = None,
        create: bool = False,
    ) -> tuple[Any, int, tuple[int, int], list[KeyRecord]]:
        """Send what is queued, the subtree leases above (share-locked), a new key's placeholder
        row (if ``create``), the row lock, the token floor, the leases under a subtree
        (share-locked) and the instant: the row (or None), the instant, the floor (read in the
        same round trip: a new token costs no round trip of its own), the nearby leases. The
        rows are locked in key order (:mod:`tenure.store.postgres.tree`)."""
        locked, subtrees = (group.locked, group.subtrees) if group else ({}, {})
        above = tree.queue_above(batch, key, reach, locked, subtrees)
        if create:
            batch.add("create_lease_row", {"key": key})
        batch.add("lock_lease", {"key": key})
        batch.add("token_floor")
        under = tree.queue_under(batch, key, reach, locked, subtrees)
        if self.clock is None:
            batch.add("now_ms")
        got = batch.all_rows(above + create + 2 + under + (self.clock is None))
        nearby = tree.records(got[:above])
        got = got[above + create :]
        row = got[0][0] if got[0] else None
        floor = _floors(got[1][0] if got[1] else None)
        nearby += tree.records(got[2 : 2 + under])
        now = int(got[-1][0][0]) if self.clock is None else self.clock.now_ms()
        return row, now, floor, nearby

    @contextmanager
    def _joined(
        self, group: Group, key: str, *, create: bool, reach: Reach | None, guard: bool
    ) -> Iterator[KeyTx]:
        """A key transaction inside ``group``: its lock goes with the writes queued before it;
        a new key's placeholder row costs a second round trip (and a savepoint, since it is
        written before the call could fail)."""
        batch = group.batch
        floor: tuple[int, int] | None = group.floor
        nearby: list[KeyRecord] = []
        if key in group.locked:
            rec, now = group.locked[key], group.now
            if reach is not None and reach.scope == "subtree":  # the keys under it: a read
                nearby, now = self._under(group, key, reach)
        else:
            if guard:
                tree.queue_key_locks(batch, key)
            row, now, floor, nearby = self._lock(batch, key, reach, group)
            rec = record(row)
        savepoint = False
        if rec is None and create:
            batch.add_sql(f"SAVEPOINT {SAVEPOINT}")
            row, now, floor, _ = self._lock(batch, key, create=True)
            rec = record(row)
            savepoint = True
        tx = KeyTx(batch, key, now, rec, mark=batch.mark(), floor=floor)
        tx.savepoint = savepoint
        tx.nearby_records = nearby + tree.from_group(key, reach, group.locked, group.subtrees)
        tx.checks, tx.crowded = group.checks, self.crowded
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

    def _under(self, group: Group, key: str, reach: Reach) -> tuple[list[KeyRecord], int]:
        """In ``group``, a subtree acquisition of a key locked ahead: the unended lease under it
        and an instant read after it (a release, which takes no prefix lock, may have committed
        since the group's instant: the decision must not predate what it read)."""
        batch = group.batch
        batch.add("nearby_under", tree.under_params(key, reach, group.locked, group.subtrees))
        if self.clock is None:
            batch.add("now_ms")
        got = batch.all_rows(1 + (self.clock is None))
        now = int(got[1][0][0]) if self.clock is None else self.clock.now_ms()
        return tree.records(got[:1]), now

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
        on the group's own records where it has them (:mod:`tenure.store.postgres.tree`)."""
        if getattr(self._local, "group", None) is not None:
            yield
            return
        with self.pool.connection() as conn:
            group = self._local.group = Group(conn)
            try:
                if keys:
                    self._lock_ahead(group, list(dict.fromkeys(keys)))
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

    def _lock_ahead(self, group: Group, keys: list[str]) -> None:
        """The group's first round trip: the auth version, the keys' prefix locks, their rows
        and the subtree leases above them (locked in key order, with the leases under the keys
        that end in "/": :func:`tenure.store.postgres.tree.lock_ahead`), the token floor and
        the instant."""
        batch = group.batch
        batch.add("auth_version")
        locks = tree.queue_locks(batch, keys)
        above = tree.above_all(keys)
        batch.add(*tree.lock_ahead(keys, above))  # the rows near them too, in key order
        batch.add("token_floor")
        if self.clock is None:
            batch.add("now_ms")
        got = batch.all_rows(3 + locks + (self.clock is None))
        group.auth_version = int(got[0][0][0])
        got = got[1 + locks :]
        found = {row[0]: record(row) for row in got[0]}
        group.locked = {k: found.get(k) for k in keys}  # a key without a row: None
        if above:
            group.subtrees = {p: r if tree.live_subtree(r := found.get(p)) else None for p in above}
        group.floor = _floors(got[1][0] if got[1] else None)
        group.now = int(got[2][0][0]) if self.clock is None else self.clock.now_ms()

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

    def lapsed(self, holder: str, session: str, window_ms: int) -> tuple[int, list[LostLease]]:
        with self.pool.connection() as conn, conn.cursor() as cur:
            now = self._now(cur)
            params = {"holder": holder, "session": session, "now": now, "since": now - window_ms}
            return now, rows.lapsed_of(cur.execute(Q["lapsed_leases"], params).fetchall())

    def reap(self, limit: int) -> list[Event]:
        with self._tx() as cur:
            now = self._now(cur)
            due = cur.execute(Q["reap"], {"now": now, "limit": limit}).fetchall()
            drafts = [reaped_event(row) for row in sorted(due, key=_deadline)]
            return insert_events(cur, drafts, now)

    def token_floor(self) -> TokenFloor:
        with self._tx() as cur:
            return _floor(cur)

    def listen(
        self, on_events: Callable[[], None], on_free: Callable[[str], None]
    ) -> Callable[[], None]:
        """Call ``on_events`` when any server appends events and ``on_free(key)`` when it frees
        a key (LISTEN/NOTIFY); the function returned stops listening."""
        return Listener(self.url, on_events, on_free).start().stop

    def group_commit(self) -> PostgresStore:
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
