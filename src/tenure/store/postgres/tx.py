"""PostgreSQL key transactions: statements sent in batches, alone or in a group.

A :class:`Batch` queues statements bound on the client and sends them together as one simple
query: one round trip, one result each, run in order, stopped at the first that fails (which
aborts the transaction). The statements of key transactions are prepared once per connection
(:data:`PREPARE_ALL`), so the server neither parses nor plans them again: each is an ``EXECUTE``.

A key's transaction (:class:`KeyTx`) is two round trips: ``BEGIN``, the row lock and the
instant; then its writes, the notices, the events and the ``COMMIT``. In a :class:`Group` (the
server's group commit, :meth:`PostgresConnector.group`) many key transactions share one
transaction: each call's lock and instant go with the writes of the calls before it, and one
``COMMIT`` (one fsync) ends them all. A call that fails in Python
is undone alone: its writes, still queued, are dropped (or rolled back to a savepoint, taken
only if the call had to send its own writes before it failed). An error of the database aborts
the whole group; the caller decides what to do with its calls (the server runs each again on
its own, :mod:`tenure.server.runtime.executor`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.adapt import Transformer
from psycopg.errors import error_from_result
from psycopg.generators import execute
from psycopg.pq import ExecStatus
from psycopg.pq.abc import PGresult

from tenure.core.items import Item
from tenure.core.models import EventDraft, FencedValue, FencedWrite, KeyRecord
from tenure.core.quotas import SETTINGS
from tenure.core.subtree_tokens import GrantAbove
from tenure.errors import QuotaExceeded, Unavailable
from tenure.store import keytx, rows
from tenure.store.health import first_line
from tenure.store.postgres import session as session
from tenure.store.postgres.listen import notices
from tenure.store.postgres.literals import literals
from tenure.store.retention import coalesced, window_params
from tenure.store.sqlfiles import queries

Q = queries("postgres")
log = logging.getLogger(__name__)
SAVEPOINT = "tenure_call"
TUPLES_OK, FATAL_ERROR = ExecStatus.TUPLES_OK, ExecStatus.FATAL_ERROR

#: The statements sent through a :class:`Batch`, by name: each is prepared as
#: ``tenure_<name>`` on a connection before its first batch (:data:`PREPARE_ALL`), and
#: :meth:`Batch.add` executes it: ``EXECUTE tenure_<name>('…', …)``, its parameters in the order
#: of :data:`PARAMS` written as literals (:mod:`tenure.store.postgres.literals`).
HOT = (
    "now_ms",
    "auth_version",
    "principal_by_token",
    "lock_lease",
    "create_lease_row",
    "save_lease",
    "get_register",
    "save_register",
    "find_op",
    "save_op",
    "add_principal",
    "add_token",
    "get_item",
    "save_item",
    "insert_transfer",
    "add_item",
    "find_item_op",
    "save_item_op",
    "notify",
    "announce_events",
    "insert_event",
    "save_leases",
    "insert_events",
    "lock_leases",
    "lock_leases_above",
    "lock_leases_tree",
    "notify_all",
    "record_conflict",
    "token_floor",
    "lock_prefixes",
    "nearby_subtrees",
    "nearby_under",
    "lock_principal",
    "lock_principal_slots",
    "count_live_leases",
    "check_live_leases",
    "count_live_agents",
    "count_items",
    "forget_item_counts",
    "get_cursor",
    "subtree_grant_above",
    "subtree_grants_above",
    "max_token_under",
    "save_subtree_token",
    "semaphore_next",
    "semaphore_slots",
)
_PARAM = re.compile(r"%\((\w+)\)s")
#: How a key transaction (alone or a group) and its notices' transaction begin. Their
#: statements (all of :data:`HOT`) run on generic plans, made once per connection: under the
#: default ``plan_cache_mode`` (``auto``) PostgreSQL planned ``subtree_grants_above`` again at
#: every execution (its custom plan looked cheaper than the generic one), in every group of
#: keys that have a prefix. Side by side, one server and 16 clients: PostgreSQL's CPU a call
#: 0.88-0.91x, the cycle 1.03x (bench/results/2026-11-29-generic-plans.md). Every other
#: statement of :data:`HOT` already ran on its generic plan after its first five executions;
#: a test checks that each generic plan reads the growing tables through an index.
BEGIN = ("BEGIN", "SET LOCAL plan_cache_mode = force_generic_plan")


def _positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` without its comment lines, its parameters positional, and their names in
    order."""
    order: list[str] = []

    def positional(m: re.Match[str]) -> str:
        if m[1] not in order:
            order.append(m[1])
        return f"${order.index(m[1]) + 1}"

    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    return _PARAM.sub(positional, body), tuple(order)


_STATEMENTS = {name: _positional(Q[name]) for name in HOT}
PARAMS = {name: order for name, (_, order) in _STATEMENTS.items()}


def prepared(name: str) -> str:
    """The statement ``name`` of :data:`HOT` as it is prepared (its parameters positional)."""
    return _STATEMENTS[name][0]


#: psycopg's own automatic prepared statements are off on the store's connections (it would
#: ``DEALLOCATE ALL`` at every ``ROLLBACK``), so ``DEALLOCATE ALL`` here drops only ours. The
#: literals are written for ``standard_conforming_strings`` on (the default since PostgreSQL
#: 9.1; a batch checks it, see :meth:`Batch.__init__`).
PREPARE_ALL = ";".join(
    [
        "SET standard_conforming_strings = on",
        "SET client_encoding = 'UTF8'",
        "DEALLOCATE ALL",
        *(f"PREPARE tenure_{name} AS {sql}" for name, (sql, _) in _STATEMENTS.items()),
    ]
).encode()
_prepared: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()


def record(row: Sequence[Any] | None) -> KeyRecord | None:
    if row is None or row[1] == 0:  # token 0: the placeholder of a key being created
        return None
    return rows.record_from(row)


class Batch:
    """Statements queued on one connection, sent together as one simple query."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        # Once per connection, outside any transaction; again if something changed
        # client_encoding or standard_conforming_strings (the server reports those changes).
        if conn not in _prepared or not session.literals_safe(conn):
            conn.execute(PREPARE_ALL)
            _prepared.add(conn)
            session.check_literals(conn)  # (the encoding or the strings could not be set)
        self.conn = conn
        self._loader = Transformer(conn)
        self._sql: list[str] = []
        self.failed: psycopg.Error | None = None  # a batch failed: the transaction is lost
        #: the last round trip's last statement got no answer of its own (its fate is unknown)
        self.unanswered = False
        self.notices: list[str] = []  # NOTIFY payloads, sent after the COMMIT (commit())

    def add(self, name: str, params: dict[str, Any] | None = None) -> None:
        """Queue the prepared statement ``name`` (of :data:`HOT`) with ``params``."""
        order = PARAMS[name]
        if not order:
            self._sql.append(f"EXECUTE tenure_{name}")
            return
        assert params is not None, name
        self._sql.append(f"EXECUTE tenure_{name}({literals([params[p] for p in order])})")

    def begin(self) -> None:
        """Queue the start of the transaction (:data:`BEGIN`)."""
        self._sql.extend(BEGIN)

    def add_sql(self, sql: str, at: int | None = None) -> None:
        self._sql.insert(len(self._sql) if at is None else at, sql)

    def mark(self) -> int:
        """Where the next statement queued goes (for :meth:`drop` and :meth:`add_sql`)."""
        return len(self._sql)

    def drop(self, mark: int) -> None:
        """Unqueue what was queued since ``mark`` (it was never sent)."""
        del self._sql[mark:]

    def _run(self, committed_at: int | None = None) -> list[PGresult]:
        """Send what is queued as one simple query and wait for its results: libpq's own calls
        through the connection's wait (flushing the query first, however long), as a cursor
        does without its bookkeeping, which cost a round trip 30-40 µs of CPU. The first
        statement that fails raises, as ``cursor.execute`` would, but one after the statement
        at ``committed_at`` (a ``COMMIT`` that went through): the notices' own transaction
        failed, which is rolled back and logged (waiters wake by their fallbacks)."""
        if self.failed is not None:
            raise psycopg.OperationalError("the transaction failed before") from self.failed
        sent, self.unanswered = len(self._sql), True
        query, self._sql = ";".join(self._sql).encode(), []
        conn = self.conn
        try:
            with conn.lock:
                conn.pgconn.send_query(query)
                results: list[PGresult] = conn.wait(execute(conn.pgconn))
            for at, result in enumerate(results):
                if result.status == FATAL_ERROR and committed_at is not None and at > committed_at:
                    return self._notices_failed(results, at)
                if result.status == FATAL_ERROR:
                    # An error answered for a statement before the last: that statement failed
                    # and the rest never ran. On the last one (or with no answer) it is unknown.
                    self.unanswered = at >= sent - 1
                    raise error_from_result(result, encoding=conn.info.encoding)
        except psycopg.Error as exc:
            self.failed = exc
            raise
        return results

    def _notices_failed(self, results: list[PGresult], at: int) -> list[PGresult]:
        self.unanswered = False
        error = error_from_result(results[at], encoding=self.conn.info.encoding)
        log.warning("the notices of a commit were not sent: %s", first_line(error))
        self.conn.execute("ROLLBACK")
        return results

    def _load(self, result: PGresult, n: int | None = None) -> list[tuple[Any, ...]]:
        """The rows of ``result`` (its first ``n``), as Python values."""
        if result.status != TUPLES_OK:
            return []
        self._loader.set_pgresult(result)
        last = result.ntuples if n is None else min(n, result.ntuples)
        return self._loader.load_rows(0, last, tuple)

    def _first(self, result: PGresult) -> tuple[Any, ...] | None:
        got = self._load(result, 1)
        return got[0] if got else None

    def send(self) -> PGresult:
        """Run what is queued: the last statement's result."""
        return self._run()[-1]

    def rows(self, n: int) -> list[Any]:
        """Run what is queued: the first row (or None) of each of the last ``n`` statements."""
        return [self._first(r) for r in self._run()[-n:]]

    def all_rows(self, n: int) -> list[list[Any]]:
        """Run what is queued: every row of each of the last ``n`` statements."""
        return [self._load(r) for r in self._run()[-n:]]

    def ask(self, name: str, params: dict[str, Any] | None = None) -> tuple[Any, ...] | None:
        """Run what is queued and then ``name``: its first row."""
        self.add(name, params)
        return self._first(self.send())

    def queue_events(self, events: Sequence[tuple[EventDraft, int]]) -> None:
        """Queue the notices and the events (each with its instant), the last statements before
        the ``COMMIT``. Before the events draw their ids, the transaction announces the newest
        id drawn so far (``announce_events``: a shared lock, which no writer waits for), so
        that readers stop below its ids until it ends: ids are handed out in no particular
        order across transactions, yet an ``after`` cursor never passes one still in flight."""
        if not events:
            return
        self.notices = notices([e for e, _ in events])  # sent after the COMMIT (commit())
        self.add("announce_events")  # ids are drawn after this, above the value announced
        run: list[dict[str, Any]] = []  # events to insert, in one statement
        for e, now in events:
            params = rows.event_params(e, now, rows.dumps(e.data))
            if coalesced(e):  # a refusal: in its window (tenure.store.retention), in order
                self._insert(run)
                run = []
                self.add("record_conflict", {**params, **window_params(e, now)})
            else:
                run.append(params)
        self._insert(run)

    def _insert(self, params: list[dict[str, Any]]) -> None:
        if len(params) == 1:
            self.add("insert_event", params[0])
        elif params:
            self.add("insert_events", columns(params))

    def commit(self) -> None:
        """Send what is queued and the ``COMMIT``, in one round trip. A connection lost in that
        round trip leaves the outcome unknown (the COMMIT may have run): :func:`in_doubt`.

        The notices of the events follow in the same round trip, in a transaction of their
        own that does not wait for the disk: PostgreSQL takes one lock for the whole cluster
        at the ``COMMIT`` of every transaction that notifies, held until its commit is flushed,
        so notices sent in the transaction would make the commits of every server wait for
        each other. Sent after, they reach the listeners once the change is visible, as
        before, and hold that lock for a moment only."""
        self.add_sql("COMMIT")
        committed_at = self.mark() - 1
        if self.notices:
            self.begin()
            self.add_sql("SET LOCAL synchronous_commit = off")
            if len(self.notices) == 1:
                self.add("notify", {"payload": self.notices[0]})
            else:
                self.add("notify_all", {"payloads": self.notices})
            self.add_sql("COMMIT")
            self.notices = []
        try:
            status = self._run(committed_at)[committed_at].command_status
        except psycopg.Error as exc:
            if self.unanswered and (self.conn.broken or self.conn.closed):
                raise in_doubt(exc) from exc
            raise
        # A COMMIT of a failed transaction rolls it back and says so: that is not a commit.
        if status != b"COMMIT":
            raise psycopg.OperationalError(f"the COMMIT said {status!r}")


def in_doubt(exc: psycopg.Error) -> Unavailable:
    """What a commit raises when the connection was lost with its ``COMMIT`` unanswered, or
    answered by the end of the connection (a backend terminated while it waited for a
    synchronous standby has committed locally): it may or may not have happened. (An error
    answered for an earlier statement, or a refusal of the COMMIT on a connection that still
    works, is known: nothing was written, the error is raised as it is.)"""
    return Unavailable(
        f"the database connection was lost while the call was committing ({first_line(exc)}); "
        "it may or may not have happened: read the state back before repeating it",
        outcome="unknown",
    )


class Crowded:
    """The principals whose bound a group's commit found passed in the last :attr:`SPAN_S`
    seconds (each of the group's, since the check does not say which): their acquisitions in
    a group are counted in the call, a round trip each, instead of at the commit. At most
    :attr:`MOST` are remembered."""

    SPAN_S = 60.0
    MOST = 10_000

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, checks: dict[str, tuple[int, int, int]]) -> None:
        until = time.monotonic() + self.SPAN_S
        with self._lock:
            if len(self._until) + len(checks) > self.MOST:
                self._until.clear()
            self._until.update(dict.fromkeys(checks, until))

    def __contains__(self, holder: object) -> bool:
        until = self._until.get(holder) if isinstance(holder, str) else None
        return until is not None and until > time.monotonic()


def over_bound(checks: dict[str, tuple[int, int, int]]) -> QuotaExceeded:
    """A group's commit found a principal past its bound on live leases, or within the margin
    of the slots it did not hold (:meth:`Group.queue_bounds`): the group failed, nothing of it
    happened (the server's executor runs its calls again, each alone, and each then counts for
    itself, exactly)."""
    holders = ", ".join(repr(h) for h in sorted(checks))
    limits = {limit for limit, _, _ in checks.values()}
    return QuotaExceeded(
        f"a group of calls would have given one of {holders} more live leases than it may "
        "hold, or came too near that bound to count alongside other groups: nothing of the "
        "group was done (each call alone is counted exactly)",
        limit=min(limits) if limits else None,
        setting=SETTINGS["live_leases"],
    )


def columns(params: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Rows of parameters as one list per parameter (for ``unnest``)."""
    return {name: [p[name] for p in params] for name in params[0]}


class KeyTx(keytx.KeyTx):
    """One key's transaction, or one call's share of a group's. A write is queued; a read
    sends what is queued and itself and waits (one round trip)."""

    def __init__(
        self,
        batch: Batch,
        key: str,
        now: int,
        record: KeyRecord | None,
        mark: int | None = None,
        floor: tuple[int, int] | None = None,
    ) -> None:
        self.batch, self.key, self.now, self.record = batch, key, now, record
        self.floor = floor  # the token floor and the retired-token mark, read with the lock
        self.events: list[EventDraft] = []
        self.saved: KeyRecord | None = None  # the last record saved
        self.mark = mark  # in a group: where this call's writes begin in the queue
        self.savepoint = False  # in a group: taken at the mark, before this call's writes
        self.nearby_records: list[KeyRecord] = []  # read with the lock (tree.queue_nearby)
        #: in a group: the principals a group's commit found at their bound lately (counted
        #: in the call)
        self.crowded: Crowded | None = None
        self.group: Group | None = None  # the group it joined (its grants read ahead)

    def nearby(self) -> list[KeyRecord]:
        return self.nearby_records

    def write(self, name: str, params: dict[str, Any]) -> None:
        self.batch.add(name, params)

    def _ask(self, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        if self.mark is not None and not self.savepoint and self.batch.mark() > self.mark:
            # A group call is sending writes of its own: a savepoint before them, so that the
            # call can still fail alone.
            self.batch.add_sql(f"SAVEPOINT {SAVEPOINT}", at=self.mark)
            self.savepoint = True
        return self.batch.ask(name, params)

    def read(self, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        return self._ask(name, params)

    def live_leases(self, holder: str, cap: int) -> int:
        """Alone: counted under the principal's lock. In a group: 0, and the group checks at
        its commit, in the same round trip, that ``holder`` has no more than ``cap`` live
        leases then (:meth:`Group.commit`): a group's acquisitions cost no round trip more.
        But a principal that made a group fail so lately (:class:`Crowded`) is counted here,
        so that one client at its bound does not make every group it joins fail: under its
        lock, plus the new leases the group gave it before (saved only at the commit, which
        checks its bound again, exactly)."""
        n = 0
        group = self.group
        if group is not None:
            _, _, n = group.checks.get(holder, (cap, self.now, 0))
            group.checks[holder] = (cap, self.now, n + 1)  # one more new lease of holder's
            if self.crowded is None or holder not in self.crowded:
                return 0
            group.exact.add(holder)
        self.batch.add("lock_principal", {"principal": holder})
        row = self._ask("count_live_leases", {"holder": holder, "now": self.now, "cap": cap})
        return (int(row[0]) if row else 0) + n

    def live_agents(self, parent: str, cap: int) -> int:
        self.batch.add("lock_principal", {"principal": parent})
        row = self._ask("count_live_agents", {"parent": parent, "now": self.now, "cap": cap})
        return int(row[0]) if row else 0

    def undo(self) -> None:
        """In a group: the call failed; forget its writes and its events."""
        assert self.mark is not None
        self.events.clear()
        if self.savepoint:
            self.batch.add_sql(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")
        else:
            self.batch.drop(self.mark)

    def register(self) -> FencedValue | None:
        row = self._ask("get_register", {"key": self.key})
        return rows.register_from(row) if row else None

    def token_floor(self) -> int:
        if self.floor is None:
            row = self._ask("token_floor", {})
            self.floor = (int(row[0]), int(row[1])) if row else (0, 0)
        floor, retired = self.floor
        return floor if self.record is not None else max(floor, retired)

    def find_op(self, token: int, op_id: str) -> FencedWrite | None:
        row = self._ask("find_op", {"key": self.key, "token": token, "op_id": op_id})
        return rows.op_from(row) if row else None

    def save(self, record: KeyRecord) -> None:
        # An update that would lower the token fails in the server, which aborts the
        # transaction before its COMMIT (see save_lease in queries.sql). In a group the record
        # is kept instead, and the group saves each key's last one at its commit.
        if self.mark is None:
            self.batch.add("save_lease", rows.record_params(record, rows.dumps(record.meta)))
        self.saved = record

    def append(self, events: Sequence[EventDraft]) -> None:
        self.events.extend(events)  # sent with the COMMIT: readers are held back briefly

    def grant_above(self, prefixes: Sequence[str]) -> GrantAbove | None:
        """In a group that read the grants above its keys ahead (:attr:`Group.grants`): from
        those, no round trip; else read. An acquisition of a key under a prefix in a group
        costs no round trip of its own: the cycle on ``a/b/key`` keys, groups of four round
        trips → two; side by side with the tree before it (bench/trees.py, one server, 16
        clients, 10 alternated rounds on a loaded machine) the cycle's median 1.04x and 1.25x,
        the server's CPU a call 0.91x and 0.98x, and ``pg_stat_statements`` 2.6-2.9 grant reads
        a group → one."""
        group = self.group
        if group is None or group.grants is None or not group.grants_read.issuperset(prefixes):
            return super().grant_above(prefixes)
        best: tuple[int, KeyRecord | None] | None = None
        for prefix in prefixes:
            got = group.grants.get(prefix)
            if got is not None and (best is None or got[0] > best[0]):
                best = got
        return None if best is None else GrantAbove(*best)

    def save_subtree_token(self, prefix: str, token: int) -> None:
        if self.group is not None:
            self.group.grants = None  # read ahead before this write: read again from now on
        super().save_subtree_token(prefix, token)

    def item(self, item_id: str) -> Item | None:
        row = self._ask("get_item", {"id": item_id})
        return rows.item_from(row) if row else None

    def save_item(self, item: Item) -> None:
        self.batch.add("save_item", rows.item_params(item))

    def add_item(self, item: Item) -> bool:
        return self._ask("add_item", rows.item_params(item)) is not None

    def find_item_op(self, item_id: str, op_id: str) -> Any:
        row = self._ask("find_item_op", {"item": item_id, "op_id": op_id})
        return None if row is None else rows.loads_text(row[0])


class Group:
    """One transaction on one connection that many key transactions join; its ``BEGIN`` goes
    with the first batch and its events with the ``COMMIT``. Keys locked ahead (:attr:`locked`,
    by :meth:`PostgresConnector.group`) cost their calls no round trip: the group holds their rows'
    locks, so their records (as the group saved them last) are the truth until its commit."""

    #: a principal's slots for new leases in flight (:meth:`queue_bounds`): the margin below
    #: its bound on live leases where groups of several servers stop committing side by side
    SLOTS = 128

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.batch = Batch(conn)
        self.batch.begin()
        self.events: list[tuple[EventDraft, int]] = []
        self.saves: dict[str, KeyRecord] = {}  # key -> the record to save at the commit
        self.locked: dict[str, KeyRecord | None] = {}  # key -> its record, locked ahead
        #: prefix -> its unended subtree lease (None: none), read ahead for the keys locked
        self.subtrees: dict[str, KeyRecord | None] = {}
        self.now = 0  # the instant, read once the keys locked ahead were
        self.auth_version: int | None = None  # read in the same round trip
        #: the token floor and the retired-token mark, read in the same round trip
        self.floor: tuple[int, int] | None = None
        #: holder -> (its bound on live leases, an instant, the new leases the group gave it):
        #: checked at the commit
        self.checks: dict[str, tuple[int, int, int]] = {}
        #: the holders of :attr:`checks` counted in a call (:class:`Crowded`): checked exactly
        self.exact: set[str] = set()
        #: prefix -> its latest subtree token and its lease, read ahead for the keys locked
        #: (for the prefixes in :attr:`grants_read`); None once the group wrote a subtree token
        self.grants: dict[str, tuple[int, KeyRecord | None]] | None = None
        self.grants_read: frozenset[str] = frozenset()

    def commit(self) -> None:
        """One round trip: what is queued, every lease the group saved (one statement), the
        bounds of the principals that got a new lease (:meth:`queue_bounds`; one passed fails
        the group: :func:`over_bound`), the notices, the events and the ``COMMIT``."""
        if self.saves:
            params = [rows.record_params(r, rows.dumps(r.meta)) for r in self.saves.values()]
            self.batch.add("save_leases", columns(params))
        self.queue_bounds()
        self.batch.queue_events(self.events)
        self.batch.commit()

    def queue_bounds(self) -> None:
        """Each principal's bound on live leases, checked after the group's saves, in one
        order of the principals. Groups of different servers that give one principal new
        leases do not wait for each other while it is far from its bound: a group holds one
        of the principal's :attr:`SLOTS` slots for each new lease it gives it (try-locks,
        none waits) and the principal's lock shared, and counts with a margin of the slots
        it does not hold. That is exact: every lease added by a transaction still in flight
        that passed its check holds a slot (or, under the lock held exclusive, none is in
        flight), so the group's count, what committed and its own, plus the others' slots
        bounds what the principal will hold. Without enough free slots, with a bound no
        larger than :attr:`SLOTS`, or for a principal counted in the calls, the group takes
        the lock exclusive and counts exactly (it waits for the groups holding it). Within
        the margin of the bound the group fails (:func:`over_bound`) and its calls run again,
        each alone, counted under the lock."""
        for holder in sorted(self.checks):  # the principals' locks, in one order
            limit, now, n = self.checks[holder]
            fast = holder not in self.exact and n <= self.SLOTS < limit
            tries = self.SLOTS if fast else 0
            self.batch.add("lock_principal_slots", {"principal": holder, "n": n, "tries": tries})
            check = {"holder": holder, "now": now, "over": limit + 1, "limit": limit}
            self.batch.add("check_live_leases", check)
