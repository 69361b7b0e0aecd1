-- name: now_ms
-- The one clock every server sharing this database agrees on.
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint;

-- name: lock_lease
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases WHERE key = %(key)s FOR UPDATE;

-- name: create_lease_row
-- A placeholder (token 0) that gives a new key a row to lock; never visible once committed,
-- because the same transaction saves the real lease over it.
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at,
                           ended, due_at)
VALUES (%(key)s, 0, '', 0, 0, 0, 0, 'released', 0)
ON CONFLICT (key) DO NOTHING;

-- name: get_lease
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases WHERE key = %(key)s AND token > 0;

-- name: save_lease
-- Tokens only grow, whatever the caller computed: an update that would lower the token matches
-- no row, and then `1 / count(*)` fails (division by zero), which aborts the transaction in the
-- server. The check has to be the server's: this statement is pipelined with the transaction's
-- COMMIT (tenure.store.postgres), so the client sees its result only after the COMMIT ran, and
-- an error here is what makes that COMMIT roll everything back instead.
-- due_at (migration 0023): a renewal of the unended lease (same token) keeps it, unless the new
-- deadline comes before it; any other save starts it at the deadline.
WITH saved AS (
    UPDATE tenure_leases SET
        token = %(token)s, holder = %(holder)s, task = %(task)s, ttl_ms = %(ttl_ms)s,
        acquired_at = %(acquired_at)s, renewed_at = %(renewed_at)s,
        expires_at = %(expires_at)s, renewals = %(renewals)s, meta = %(meta)s,
        ended = %(ended)s, fence_open = %(fence_open)s, conflicts = %(conflicts)s,
        session = %(session)s, scope = %(scope)s,
        due_at = CASE WHEN ended IS NULL AND %(ended)s::text IS NULL AND token = %(token)s
                      THEN least(due_at, %(expires_at)s) ELSE %(expires_at)s END
    WHERE key = %(key)s AND %(token)s >= token
    RETURNING 1
)
SELECT 1 / count(*) FROM saved;

-- name: live_leases
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE ended IS NULL AND expires_at > %(now)s AND token > 0
  AND (%(prefix)s::text IS NULL OR left(key, length(%(prefix)s::text)) = %(prefix)s::text)
  AND (%(holder)s::text IS NULL OR holder = %(holder)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
  AND (%(after)s::text IS NULL OR key > %(after)s::text)
ORDER BY key
LIMIT %(limit)s;

-- name: live_leases_under
-- live_leases of the keys starting with %(prefix)s: the range [prefix, upper) of the unended keys
-- (byte order), so a list far into a million keys, or over the ended leases of its prefix,
-- reads only its own.
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE key >= %(prefix)s::text AND key < %(upper)s::text
  AND ended IS NULL AND expires_at > %(now)s AND token > 0
  AND (%(holder)s::text IS NULL OR holder = %(holder)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
  AND (%(after)s::text IS NULL OR key > %(after)s::text)
ORDER BY key
LIMIT %(limit)s;

-- name: ended_leases
-- The latest lease of each key that is no longer live, by key: %(state)s 'expired' (its
-- deadline passed, recorded or not), 'released' (ended by a release, a force-release or a
-- takeover) or 'all' (live ones too). The rows outlive their leases until the key is acquired
-- again.
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE token > 0
  AND (%(state)s::text = 'all'
       OR (%(state)s::text = 'expired'
           AND (ended = 'expired' OR (ended IS NULL AND expires_at <= %(now)s)))
       OR (%(state)s::text = 'released' AND ended IS NOT NULL AND ended <> 'expired'))
  AND (%(prefix)s::text IS NULL OR left(key, length(%(prefix)s::text)) = %(prefix)s::text)
  AND (%(holder)s::text IS NULL OR holder = %(holder)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
  AND (%(after)s::text IS NULL OR key > %(after)s::text)
ORDER BY key
LIMIT %(limit)s;

-- name: announce_events
-- Before a transaction draws event ids: the newest id drawn so far, L (every id it draws will
-- be above), announced as a shared advisory lock held to commit (classid 7470 + L >> 32, objid
-- L's low 32 bits). Shared locks never wait for each other, so writers do not queue here;
-- readers stop at the smallest L announced (max_event_id), so an `after` cursor never passes
-- an id that a transaction still in flight holds and may commit later.
SELECT pg_advisory_xact_lock_shared(7470 + (l >> 32)::int,
                                    (((l & 4294967295) # 2147483648) - 2147483648)::int)
FROM (SELECT last_value - (NOT is_called)::int AS l FROM tenure_events_id_seq) AS drawn;

-- name: insert_event
INSERT INTO tenure_events (at, type, key, holder, task, token, actor, reason, data)
VALUES (%(at)s, %(type)s, %(key)s, %(holder)s, %(task)s, %(token)s, %(actor)s, %(reason)s,
        %(data)s)
RETURNING id;

-- name: list_events
-- Events in the window of ids (after, upto], along the primary key: at most upto - after
-- rows are examined. tenure.store.sqlfiles derives list_key_events, list_holder_events and
-- list_type_events from it: the same read led by that column's equality, along its index
-- (column, id).
SELECT id, at, type, key, holder, task, token, actor, reason, data
FROM tenure_events
WHERE id > %(after)s AND id <= %(upto)s
  AND (%(key)s::text IS NULL OR key = %(key)s::text)
  AND (%(holder)s::text IS NULL OR holder = %(holder)s::text)
  AND (%(type)s::text IS NULL OR type = %(type)s::text)
  AND (%(token)s::bigint IS NULL OR token = %(token)s::bigint)
ORDER BY id
LIMIT %(limit)s;

-- name: move_due
-- Before reap: the unended leases whose due_at (a lower bound of their deadline, which their
-- renewals leave alone: migration 0023) has come but which are still live get due_at = their
-- deadline, at most %(limit)s of them, along tenure_leases_due; rows another transaction holds
-- are skipped (the next round moves them).
WITH early AS (
    SELECT key FROM tenure_leases
    WHERE ended IS NULL AND due_at <= %(now)s AND expires_at > %(now)s AND token > 0
    ORDER BY due_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE tenure_leases AS l SET due_at = l.expires_at
WHERE l.key = ANY(ARRAY(SELECT key FROM early)) AND l.ended IS NULL;

-- name: reap
-- Exactly once across reapers: rows another transaction holds are skipped, and the update
-- re-checks `ended IS NULL` under the row lock. Along tenure_leases_due (a lapsed lease's
-- due_at is at or before its deadline); the rows found are updated by key (the primary key).
WITH due AS (
    SELECT key FROM tenure_leases
    WHERE ended IS NULL AND due_at <= %(now)s AND expires_at <= %(now)s AND token > 0
    ORDER BY due_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE tenure_leases AS l SET ended = 'expired'
WHERE l.key = ANY(ARRAY(SELECT key FROM due)) AND l.ended IS NULL AND l.expires_at <= %(now)s
RETURNING l.key, l.token, l.holder, l.task, l.expires_at, l.acquired_at, l.session;

-- name: next_deadline
-- The earliest deadline of an unended lease, along tenure_leases_due: the lease with the
-- earliest due_at has a deadline X at or after it, and the earliest deadline's lease has a
-- due_at at or before it, so before X: only the leases due by X are read.
SELECT min(expires_at) FROM tenure_leases
WHERE ended IS NULL AND token > 0
  AND due_at <= (SELECT expires_at FROM tenure_leases WHERE ended IS NULL AND token > 0
                 ORDER BY due_at LIMIT 1);

-- name: list_items
-- :after_* (all or none): only items sorting after that (priority, created_at, id), a page's end.
SELECT id, title, body, status, priority, labels, parent, assignee, epoch, progress,
       progress_at, result, created_by, created_at, updated_at, revoked, stalled_epoch,
       attempts, failures, counted_epoch
FROM tenure_items
WHERE (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(assignee)s::text IS NULL OR assignee = %(assignee)s)
  AND (%(label)s::text IS NULL OR (labels::jsonb ? %(label)s::text))
  AND (%(after_id)s::text IS NULL OR (priority, created_at, id)
       > (%(after_priority)s::bigint, %(after_at)s::bigint, %(after_id)s::text))
ORDER BY priority, created_at, id
LIMIT %(limit)s;

-- name: list_item_summaries
-- list_items without what can be large: no body (its length instead), no result (whether
-- there is one: a stored JSON null is none), the progress without its data.
SELECT id, title, '', status, priority, labels, parent, assignee,
       epoch, ((progress)::jsonb - 'data')::text, progress_at, NULL, created_by,
       created_at, updated_at, revoked, stalled_epoch, attempts, failures, counted_epoch,
       char_length(body),
       coalesce(result, 'null') <> 'null'
-- FROM … as in list_items

-- name: ready_item_summaries
-- ready_items without what can be large: no body (its length instead), no result (whether
-- there is one: a stored JSON null is none), the progress without its data.
SELECT i.id, i.title, '', i.status, i.priority, i.labels, i.parent, i.assignee,
       i.epoch, ((i.progress)::jsonb - 'data')::text, i.progress_at, NULL, i.created_by,
       i.created_at, i.updated_at, i.revoked, i.stalled_epoch, i.attempts, i.failures,
       i.counted_epoch, char_length(i.body),
       coalesce(i.result, 'null') <> 'null'
-- FROM … as in ready_items

-- name: count_events_after
SELECT CASE WHEN type = 'released' AND reason = 'completed' THEN 'released:completed'
            ELSE type END AS kind,
       sum(CASE WHEN type = 'conflict' THEN coalesce((data::jsonb ->> 'repeats')::bigint, 1)
                ELSE 1 END), max(id)
FROM tenure_events WHERE id > %(after)s AND id <= %(upto)s
GROUP BY kind;

-- name: count_events_since
-- (a conflict event stands for its repeats)
SELECT CASE WHEN type = 'released' AND reason = 'completed' THEN 'released:completed'
            ELSE type END AS kind,
       sum(CASE WHEN type = 'conflict' THEN coalesce((data::jsonb ->> 'repeats')::bigint, 1)
                ELSE 1 END)
FROM tenure_events WHERE at >= %(since)s
GROUP BY kind;

-- name: live_counts
SELECT count(*), count(*) FILTER (WHERE key >= 'items/' AND key < 'items0')
FROM tenure_leases WHERE ended IS NULL AND expires_at > %(now)s AND token > 0;

-- name: hot_keys
SELECT key, sum(coalesce((data::jsonb ->> 'repeats')::bigint, 1)) AS n
FROM tenure_events WHERE type = 'conflict' AND at >= %(since)s AND key IS NOT NULL
GROUP BY key ORDER BY n DESC, key LIMIT %(limit)s;

-- name: expiring_holders
SELECT holder, count(*) FILTER (WHERE type = 'expired') AS expired, count(*) AS ended
FROM tenure_events
WHERE at >= %(since)s AND holder IS NOT NULL
  AND type IN ('released', 'expired', 'force_released', 'taken_over')
GROUP BY holder HAVING count(*) FILTER (WHERE type = 'expired') > 0
ORDER BY expired DESC, holder LIMIT %(limit)s;

-- name: hold_times
SELECT held FROM (
    SELECT id, (data::jsonb ->> 'held_ms')::bigint AS held
    FROM tenure_events
    WHERE at >= %(since)s AND type IN ('released', 'expired', 'force_released', 'taken_over')
) AS e
WHERE held IS NOT NULL
ORDER BY id DESC LIMIT %(limit)s;

-- name: timeline
SELECT (at - %(start)s) / %(bucket)s AS slot,
       CASE WHEN type = 'released' AND reason = 'completed' THEN 'completed' ELSE type END AS kind,
       count(*)
FROM tenure_events
WHERE at >= %(start)s AND type IN ('released', 'expired', 'force_released', 'taken_over')
GROUP BY slot, kind;

-- Retention --------------------------------------------------------------------------------

-- name: serialize_pruning
-- One pruner at a time across servers, so no batch is folded into the totals twice.
SELECT pg_advisory_xact_lock(7468, 2);

-- name: max_event_id
-- The event horizon: the newest committed id, but no further than the smallest id announced by
-- a transaction in flight (announce_events: its own ids are above it). Every id up to it that will ever exist is committed, and visible to
-- a statement that starts after this one: the snapshot is taken before the locks are read, so
-- a writer missing from the locks either had not drawn its ids yet (they will be above the
-- newest id seen) or had committed.
SELECT least(
    (SELECT coalesce(max(id), 0) FROM tenure_events),
    (SELECT min(((classid::bigint - 7470) << 32) | objid::bigint)
     FROM pg_locks
     WHERE locktype = 'advisory' AND objsubid = 2 AND classid::bigint >= 7470
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())));

-- Cross-server wake-ups --------------------------------------------------------------------

-- name: notify
-- Delivered on commit to every server that LISTENs (tenure.store.postgres_listen).
SELECT pg_notify('tenure', %(payload)s);

-- name: lock_holder_leases
-- renew_all, first step: lock the rows of :holder's unended leases (of :session unless NULL;
-- or those among :keys) in
-- key order, so that concurrent bulk renewals cannot deadlock; the instant is read after this.
SELECT key FROM tenure_leases
WHERE holder = %(holder)s AND ended IS NULL AND token > 0
  AND (%(session)s::text IS NULL OR session = %(session)s::text)
  AND (%(keys)s::text[] IS NULL OR key = ANY(%(keys)s::text[]))
ORDER BY key
FOR UPDATE;

-- name: renew_all
-- renew_all, second step: renew those still live at %(now)s in one statement, each with its own
-- ttl; nothing shortens a lease.
UPDATE tenure_leases
SET renewed_at = %(now)s, renewals = renewals + 1,
    expires_at = greatest(expires_at, %(now)s + ttl_ms)
WHERE key = ANY(%(locked)s::text[]) AND holder = %(holder)s AND ended IS NULL
  AND expires_at > %(now)s AND token > 0
RETURNING key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
          ended, fence_open, conflicts, session, scope;

-- name: renew_all_json
-- A slot lease's semaphore, slot and slots are sent as null here: the service fills them in.
-- renew_all without keys, second step, whose reply PostgreSQL writes, once for each part of
-- the rows lock_holder_leases locked (:locked, a slice of its keys in their order): the update
-- of renew_all, then the number of leases renewed and their JSON separated by commas (each
-- one's Lease.to_dict(), state live), by key in code point order (COLLATE "C"), as Python sorts
-- them in renew_all, whatever the database's collation; '' when none was renewed. Each lease's
-- JSON is put together as text (strings escaped by to_json, meta as stored: JSON text), half the
-- time json_build_object took. Text, which the caller reads in binary form: its UTF-8 bytes.
WITH renewed AS (
    UPDATE tenure_leases
    SET renewed_at = %(now)s, renewals = renewals + 1,
        expires_at = greatest(expires_at, %(now)s + ttl_ms)
    WHERE key = ANY(%(locked)s::text[]) AND holder = %(holder)s AND ended IS NULL
      AND expires_at > %(now)s AND token > 0
    RETURNING key, holder, session, task, token, ttl_ms, acquired_at, renewed_at, expires_at,
              renewals, meta, scope
)
SELECT count(*), coalesce(string_agg(concat(
           '{"key":', to_json(key), ',"holder":', to_json(holder),
           ',"session":', to_json(session), ',"task":', coalesce(to_json(task)::text, 'null'),
           ',"token":', token, ',"ttl_ms":', ttl_ms, ',"acquired_at":', acquired_at,
           ',"renewed_at":', renewed_at, ',"expires_at":', expires_at,
           ',"renewals":', renewals, ',"meta":', meta, ',"state":"live","scope":', to_json(scope),
           ',"semaphore":null,"slot":null,"slots":null}'
       ), ',' ORDER BY key COLLATE "C"), '')
FROM renewed;

-- name: lapsed_leases
-- The leases of a holder's session that lapsed lately, as SQLite's lapsed_leases: the recorded
-- ones along tenure_leases_lapsed (ended_at: an ended lease's deadline), the unrecorded ones
-- along the unended leases due by now (tenure_leases_due: a lapsed lease's due_at is at or
-- before its deadline; the holder is filtered after, so its live leases are never read).
SELECT key, token, ended FROM tenure_leases
WHERE holder = %(holder)s AND session = %(session)s AND ended_at > %(since)s
  AND ended IN ('expired', 'force_released')
UNION ALL
SELECT key, token, 'expired' FROM (
    SELECT key, token, holder, session FROM tenure_leases
    WHERE ended IS NULL AND due_at <= %(now)s AND expires_at > %(since)s
      AND expires_at <= %(now)s
    OFFSET 0
) AS due
WHERE holder = %(holder)s AND session = %(session)s;

-- name: save_leases
-- A group's leases, each as the group saved it last, in one statement (tenure.store.postgres_tx
-- Group.commit). Tokens only grow, as in save_lease: if any row would get a lower token, fewer
-- rows match than were given, and the division by zero aborts the group's transaction.
-- due_at as in save_lease.
WITH v AS (
    SELECT * FROM unnest(
        %(key)s::text[], %(token)s::bigint[], %(holder)s::text[], %(task)s::text[],
        %(ttl_ms)s::bigint[], %(acquired_at)s::bigint[], %(renewed_at)s::bigint[],
        %(expires_at)s::bigint[], %(renewals)s::bigint[], %(meta)s::text[], %(ended)s::text[],
        %(fence_open)s::boolean[], %(conflicts)s::bigint[], %(session)s::text[],
        %(scope)s::text[]
    ) AS v(key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals,
           meta, ended, fence_open, conflicts, session, scope)
), saved AS (
    UPDATE tenure_leases l SET
        token = v.token, holder = v.holder, task = v.task, ttl_ms = v.ttl_ms,
        acquired_at = v.acquired_at, renewed_at = v.renewed_at, expires_at = v.expires_at,
        renewals = v.renewals, meta = v.meta, ended = v.ended, fence_open = v.fence_open,
        conflicts = v.conflicts, session = v.session, scope = v.scope,
        due_at = CASE WHEN l.ended IS NULL AND v.ended IS NULL AND l.token = v.token
                      THEN least(l.due_at, v.expires_at) ELSE v.expires_at END
    FROM v
    WHERE l.key = v.key AND v.token >= l.token
    RETURNING 1
)
SELECT 1 / (count(*) = cardinality(%(key)s::text[]))::int FROM saved;

-- name: insert_events
-- A group's events in one statement, their ids handed out in the order given.
INSERT INTO tenure_events (at, type, key, holder, task, token, actor, reason, data)
SELECT at, type, key, holder, task, token, actor, reason, data
FROM unnest(%(at)s::bigint[], %(type)s::text[], %(key)s::text[], %(holder)s::text[],
            %(task)s::text[], %(token)s::bigint[], %(actor)s::text[], %(reason)s::text[],
            %(data)s::text[])
     WITH ORDINALITY AS e(at, type, key, holder, task, token, actor, reason, data, n)
ORDER BY n;

-- name: lock_leases
-- A group's keys locked ahead in one statement, in key order (so that groups of different
-- servers cannot deadlock on them): the rows there are (a new key has none yet).
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases WHERE key = ANY(%(keys)s::text[])
ORDER BY key
FOR UPDATE;

-- name: notify_all
-- The notices of a group's events in one statement (see notify).
SELECT pg_notify('tenure', payload) FROM unnest(%(payloads)s::text[]) AS payload;

-- name: ended_agents
-- Dispatched agents whose claim on their item is not live any more (their tokens are still to
-- revoke): from the agents not yet swept (the partial index on dispatched_for).
SELECT p.name
FROM tenure_principals p
WHERE p.dispatched_for IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM tenure_leases l
      WHERE l.key = 'items/' || p.dispatched_for AND l.holder = p.name
        AND l.ended IS NULL AND l.expires_at > %(now)s
  )
ORDER BY p.name
LIMIT %(limit)s;

-- name: stalled_claims
-- Live claims idle since %(before)s or earlier whose stall is not recorded yet (their items'
-- ids); from the unended claims (a range of the unended keys), not from every item or lease.
-- (Keys compare in byte order, item ids in the database's collation: the join names the
-- latter, so that each claim finds its item along the items' primary key.)
SELECT i.id
FROM tenure_leases l JOIN tenure_items i ON i.id = substr(l.key, 7) COLLATE "default"
WHERE l.ended IS NULL AND l.key >= 'items/' AND l.key < 'items0'
  AND l.expires_at > %(now)s
  AND i.epoch = l.token AND i.stalled_epoch < i.epoch AND i.status NOT IN ('done', 'cancelled')
  AND greatest(l.acquired_at, coalesce(i.progress_at, 0)) <= %(before)s
ORDER BY i.id
LIMIT %(limit)s;

-- name: record_conflict
-- A refusal: one more on the requester's open window's event on the key (if it is still there
-- and the same lease refused), else a new event, which opens the window.
WITH open AS (
    SELECT event_id FROM tenure_conflict_windows
    WHERE key = %(key)s::text AND actor = %(actor)s::text AND session = %(session)s::text
      AND at > %(since)s::bigint
), repeated AS (
    UPDATE tenure_events e
    SET data = (e.data::jsonb || jsonb_build_object(
                    'repeats', coalesce((e.data::jsonb ->> 'repeats')::bigint, 1) + 1))::text
    FROM open
    WHERE e.id = open.event_id AND e.type = 'conflict'
      AND e.holder IS NOT DISTINCT FROM %(holder)s::text
      AND e.token IS NOT DISTINCT FROM %(token)s::bigint
    RETURNING e.id
), added AS (
    INSERT INTO tenure_events (at, type, key, holder, task, token, actor, reason, data)
    SELECT %(at)s::bigint, %(type)s::text, %(key)s::text, %(holder)s::text, %(task)s::text,
           %(token)s::bigint, %(actor)s::text, %(reason)s::text, %(data)s::text
    WHERE NOT EXISTS (SELECT 1 FROM repeated)
    RETURNING id
)
INSERT INTO tenure_conflict_windows (key, actor, session, event_id, at)
SELECT %(key)s::text, %(actor)s::text, %(session)s::text, id, %(at)s::bigint FROM added
ON CONFLICT (key, actor, session) DO UPDATE SET event_id = excluded.event_id, at = excluded.at;

-- name: prune_next_upto
-- The newest event id of the oldest batch not yet folded that is over the count or past the
-- age (the events kept by age are folded already: below pruned), never past the event horizon
-- (max_event_id, read before: an id a transaction in flight holds is folded after it commits).
SELECT max(id) FROM (SELECT id, at FROM tenure_events
                     WHERE id > %(pruned)s AND id <= %(newest)s ORDER BY id
                     LIMIT %(batch)s) AS oldest
WHERE id <= %(over_count)s OR at < %(before)s;

-- name: fold_range
INSERT INTO tenure_event_totals (kind, n)
SELECT CASE WHEN type = 'released' AND reason = 'completed' THEN 'released:completed'
            ELSE type END AS kind,
       sum(CASE WHEN type = 'conflict' THEN coalesce((data::jsonb ->> 'repeats')::bigint, 1)
                ELSE 1 END)
FROM tenure_events WHERE id > %(pruned)s AND id <= %(upto)s
GROUP BY kind
ON CONFLICT (kind) DO UPDATE SET n = tenure_event_totals.n + excluded.n;

-- name: delete_range
-- The folded batch, but the kinds kept by age (tenure.core.retention) that are not past the
-- audit window: retention by count drops only the kinds :by_count names.
DELETE FROM tenure_events
WHERE id > %(pruned)s AND id <= %(upto)s
  AND (at < %(audit_before)s OR type = ANY(%(by_count)s::text[]));

-- name: delete_aged_endings
-- The events kept by age (folded already) once they are past the audit window.
DELETE FROM tenure_events
WHERE id IN (SELECT id FROM (SELECT id, at FROM tenure_events WHERE id <= %(pruned)s
                             ORDER BY id LIMIT %(batch)s) AS oldest
             WHERE at < %(audit_before)s);

-- name: token_floor_for_update
SELECT floor FROM tenure_token_floor FOR UPDATE;


-- Compaction (tenure.store.compaction) ------------------------------------------------------

-- name: idle_leases
-- The oldest ended leases of the scope's keys whose deadline is before the mark (never an
-- item's claim), along their partial index (ended_at: an ended lease's deadline), locked; a
-- row another transaction holds (an acquisition of that key) is skipped.
SELECT key, token, conflicts
FROM tenure_leases
WHERE ended IS NOT NULL AND left(key, 6) <> 'items/' AND ended_at < %(before)s
  AND substr(key, 1, length(%(prefix)s)) = %(prefix)s
  AND NOT EXISTS (SELECT 1 FROM unnest(%(skip)s::text[]) AS s(p)
                  WHERE substr(key, 1, length(s.p)) = s.p)
ORDER BY ended_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: delete_leases
DELETE FROM tenure_leases
WHERE key = ANY(%(keys)s::text[]) AND ended IS NOT NULL AND expires_at < %(before)s;

-- name: delete_fenced_ops
DELETE FROM tenure_fenced_ops
WHERE (key, token, op_id) IN (
    SELECT key, token, op_id FROM tenure_fenced_ops
    WHERE at < %(before)s AND substr(key, 1, length(%(prefix)s)) = %(prefix)s
      AND NOT EXISTS (SELECT 1 FROM unnest(%(skip)s::text[]) AS s(p)
                      WHERE substr(key, 1, length(s.p)) = s.p)
    ORDER BY at LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
);

-- name: lock_prefixes
-- Subtree leases are decided under advisory locks on key prefixes (tenure.store.postgres.keylock):
-- a transaction that may make a lease on a key live holds a shared lock on each prefix above it
-- ending in '/', and an exclusive one on the key itself when it ends in '/'. So a subtree acquisition of P/ and any
-- transaction on a key under P/ (or on a subtree above it) run one after the other, and what
-- each reads of the other's keys cannot change before it commits. Taken in the order given
-- (shortest prefix first): transactions that take them in that order cannot deadlock on them.
SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(hashtextextended(p, 7468))::text
                  ELSE pg_advisory_xact_lock_shared(hashtextextended(p, 7468))::text END)
FROM unnest(%(prefixes)s::text[], %(exclusive)s::boolean[]) AS u(p, x);

-- name: nearby_subtrees
-- Subtree leases on the prefixes above the keys being acquired, unended (the core decides which
-- are live and whose): primary-key lookups, each row share-locked, in key order. The lock waits
-- for a writer of the row (a renew-all, which takes no prefix lock), and the row is then read
-- as that writer committed it; the filter is on columns no renewal changes.
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE key = ANY(%(prefixes)s::text[]) AND scope = 'subtree' AND ended IS NULL AND token > 0
ORDER BY key
FOR SHARE;

-- name: nearby_under
-- The unended lease under the subtree %(prefix)s (keys in [prefix, upper): a range of the
-- index of unended keys, whose collation is byte order, so the leases that ended under it are
-- never read) that is not (holder, session)'s
-- and not among %(skip)s (a group's own, which it knows better), with the latest deadline: if
-- it is not live, none is. Every such row is share-locked first, in key order (as
-- nearby_subtrees, so that a renewal in flight is waited for and read as it committed), then
-- the latest deadline is taken among them (then the smallest key).
SELECT * FROM (
    SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
           ended, fence_open, conflicts, session, scope
    FROM tenure_leases
    WHERE key >= %(prefix)s::text AND key < %(upper)s::text AND ended IS NULL AND token > 0
      AND NOT (holder = %(holder)s::text AND session = %(session)s::text)
      AND key <> ALL(%(skip)s::text[])
    ORDER BY key
    FOR SHARE
) AS under
ORDER BY expires_at DESC, key
LIMIT 1;

-- name: lock_leases_above
-- lock_leases for a group whose keys have prefixes above them (and none ends in '/'), in one
-- statement and one key order: its keys and the unended subtree leases on the prefixes
-- %(above)s. Those are locked for update too (one locking clause per statement): a renewal in
-- flight is waited for, and the row is read as it committed it (the filter is on columns no
-- renewal changes).
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE key = ANY(%(keys)s::text[] || %(above)s::text[])
  AND (key = ANY(%(keys)s::text[]) OR (scope = 'subtree' AND ended IS NULL AND token > 0))
ORDER BY key
FOR UPDATE;

-- name: lock_leases_tree
-- lock_leases for a group whose keys have subtrees near them, in one statement and one key
-- order: its keys; the unended subtree leases on the prefixes %(above)s above them; every
-- unended lease under a key of the group that ends in '/' (the ranges (%(lo)s, %(hi)s)), for a
-- subtree acquisition among its calls. Rows are locked for update, all of them (one locking
-- clause per statement): a renewal in flight is waited for, and the rows read then are as it
-- committed them. The rows of the keys and of the prefixes above come back; those under the
-- ranges stay locked (nearby_under reads them, for a subtree acquisition, without waiting).
WITH wanted AS (
    SELECT key FROM tenure_leases WHERE key = ANY(%(keys)s::text[])
    UNION
    SELECT key FROM tenure_leases
    WHERE key = ANY(%(above)s::text[]) AND scope = 'subtree' AND ended IS NULL AND token > 0
    UNION
    SELECT t.key FROM unnest(%(lo)s::text[], %(hi)s::text[]) AS r(lo, hi)
    JOIN tenure_leases AS t ON t.key > r.lo AND t.key < r.hi
    WHERE t.ended IS NULL AND t.token > 0
), locked AS MATERIALIZED (
    SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
           ended, fence_open, conflicts, session, scope
    FROM tenure_leases WHERE key = ANY(ARRAY(SELECT key FROM wanted))
    ORDER BY key
    FOR UPDATE
)
SELECT * FROM locked
WHERE key = ANY(%(keys)s::text[]) OR key = ANY(%(above)s::text[]);

-- name: lock_principal
-- Per-principal bounds (tenure.core.quotas): a transaction that counts what a principal has
-- before adding one (a lease, an agent) holds this lock until it ends, so two of them cannot
-- both take the last place. (Its own key space: hashtextextended's seed 7469; the prefix
-- locks use 7468.)
SELECT pg_advisory_xact_lock(hashtextextended(%(principal)s, 7469))::text;

-- name: lock_principal_slots
-- A group's commit, its saves sent before, that gave %(principal)s %(n)s new leases: take %(n)s
-- of the principal's %(tries)s slots (one for each lease in flight: try-locks, each with its
-- own seed of hashtextextended from 7471, and none waits), starting from one that depends on
-- the backend. With them all, the principal's lock shared: groups that hold their slots do not
-- wait for each other, and leave the margin the other slots may be adding (%(tries)s - %(n)s)
-- in the transaction's setting tenure.bound_margin, which check_live_leases adds to the count.
-- Without them (too few free, or %(tries)s 0), the lock as lock_principal takes it (waiting
-- for the groups that hold it shared to end, so that the count sees all they added), margin 0.
SELECT CASE WHEN (
    SELECT count(*) FROM (
        SELECT 1 FROM generate_series(0, %(tries)s - 1) AS s
        WHERE pg_try_advisory_xact_lock(
            hashtextextended(%(principal)s, 7471 + mod(s + pg_backend_pid(), %(tries)s)))
        LIMIT %(n)s
    ) AS got) = %(n)s
  THEN set_config('tenure.bound_margin', (%(tries)s - %(n)s)::text, true)
       || pg_advisory_xact_lock_shared(hashtextextended(%(principal)s, 7469))::text
  ELSE set_config('tenure.bound_margin', '0', true)
       || pg_advisory_xact_lock(hashtextextended(%(principal)s, 7469))::text
END;

-- name: count_live_leases
-- How many live leases %(holder)s has (item claims included), counting no further than
-- %(cap)s, along the partial index of the unended leases by holder.
SELECT count(*) FROM (
    SELECT 1 FROM tenure_leases
    WHERE holder = %(holder)s AND ended IS NULL AND expires_at > %(now)s
    LIMIT %(cap)s
) AS held;

-- name: check_live_leases
-- A group's commit (its saves sent before, then lock_principal_slots): fail if %(holder)s has
-- more than %(limit)s live leases with the margin left by lock_principal_slots added (counting
-- to %(over)s, one more than the bound): ln(0)'s error, which nothing else raises (the store
-- knows it for a bound passed: the whole group is lost); else ln(1).
SELECT ln(CASE WHEN count(*) + current_setting('tenure.bound_margin')::int > %(limit)s
               THEN 0 ELSE 1 END::float8) FROM (
    SELECT 1 FROM tenure_leases
    WHERE holder = %(holder)s AND ended IS NULL AND expires_at > %(now)s
    LIMIT %(over)s
) AS held;

-- Subtree tokens (tenure.core.subtree_tokens) -----------------------------------------------

-- name: subtree_grant_above
-- The latest token granted to a subtree lease on one of the prefixes above a key (a JSON
-- array), and that prefix's lease as it is now (NULL columns: no row).
SELECT g.token, l.key, l.token, l.holder, l.task, l.ttl_ms, l.acquired_at, l.renewed_at,
       l.expires_at, l.renewals, l.meta, l.ended, l.fence_open, l.conflicts, l.session, l.scope
FROM tenure_subtree_tokens g LEFT JOIN tenure_leases l ON l.key = g.prefix AND l.token > 0
WHERE g.prefix IN (SELECT jsonb_array_elements_text(%(prefixes)s::jsonb))
ORDER BY g.token DESC LIMIT 1;

-- name: subtree_grants_above
-- subtree_grant_above for every prefix above a group's keys at once, read ahead in the group's
-- first round trip (after its prefix locks, which keep both from changing under it): each
-- prefix's latest subtree token and that prefix's lease as it is now (NULL columns: no row).
SELECT g.prefix, g.token, l.key, l.token, l.holder, l.task, l.ttl_ms, l.acquired_at,
       l.renewed_at, l.expires_at, l.renewals, l.meta, l.ended, l.fence_open, l.conflicts,
       l.session, l.scope
FROM tenure_subtree_tokens g LEFT JOIN tenure_leases l ON l.key = g.prefix AND l.token > 0
WHERE g.prefix = ANY(%(prefixes)s::text[]);

-- name: max_token_under
-- The largest token ever granted on a key under a prefix: a range of the primary key (and the
-- largest of the rows compaction deleted, which may have been under it).
SELECT greatest((SELECT max(token) FROM tenure_leases WHERE key > %(prefix)s AND key < %(upper)s),
                (SELECT retired FROM tenure_token_floor), 0);

-- name: save_subtree_token
INSERT INTO tenure_subtree_tokens (prefix, token) VALUES (%(prefix)s, %(token)s)
ON CONFLICT (prefix) DO UPDATE
SET token = greatest(tenure_subtree_tokens.token, excluded.token);


-- Semaphores (tenure.core.semaphores) --------------------------------------------------------

-- name: semaphore_next
-- The next token of semaphore key (above its counter and the floor), drawn for a slot being
-- granted; its N becomes slots. No row when the semaphore has another N and one of its slots
-- (the keys in [lo, hi)) is live: holders must agree on N. The row's lock orders the
-- semaphore's grants until the commit.
INSERT INTO tenure_semaphores (key, slots, token) VALUES (%(key)s, %(slots)s, %(floor)s::bigint + 1)
ON CONFLICT (key) DO UPDATE
SET token = greatest(tenure_semaphores.token, excluded.token - 1) + 1, slots = excluded.slots
WHERE tenure_semaphores.slots = excluded.slots OR NOT EXISTS (
    SELECT 1 FROM tenure_leases
    WHERE key >= %(lo)s AND key < %(hi)s AND ended IS NULL AND expires_at > %(now)s
      AND token > 0)
RETURNING token;

-- name: semaphore_slots
SELECT slots FROM tenure_semaphores WHERE key = %(key)s;
