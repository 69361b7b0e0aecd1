-- name: get_lease
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases WHERE key = :key;

-- name: save_lease
INSERT INTO tenure_leases (key, token, holder, task, ttl_ms, acquired_at, renewed_at,
                           expires_at, renewals, meta, ended, fence_open, conflicts, session,
                           scope)
VALUES (:key, :token, :holder, :task, :ttl_ms, :acquired_at, :renewed_at, :expires_at,
        :renewals, :meta, :ended, :fence_open, :conflicts, :session, :scope)
ON CONFLICT (key) DO UPDATE SET
    token = excluded.token, holder = excluded.holder, task = excluded.task,
    ttl_ms = excluded.ttl_ms, acquired_at = excluded.acquired_at,
    renewed_at = excluded.renewed_at, expires_at = excluded.expires_at,
    renewals = excluded.renewals, meta = excluded.meta, ended = excluded.ended,
    fence_open = excluded.fence_open, conflicts = excluded.conflicts,
    session = excluded.session, scope = excluded.scope
-- Tokens only grow, whatever the caller computed.
WHERE excluded.token >= tenure_leases.token;

-- name: live_leases
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE ended IS NULL AND expires_at > :now
  AND (:prefix IS NULL OR substr(key, 1, length(:prefix)) = :prefix)
  AND (:holder IS NULL OR holder = :holder)
  AND (:task IS NULL OR task = :task)
  AND (:after IS NULL OR key > :after)
ORDER BY key
LIMIT :limit;

-- name: live_leases_under
-- live_leases of the keys starting with :prefix: the range [prefix, upper) of the unended keys
-- (byte order), so a list far into a million keys, or over the ended leases of its prefix,
-- reads only its own.
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE key >= :prefix AND key < :upper
  AND ended IS NULL AND expires_at > :now
  AND (:holder IS NULL OR holder = :holder)
  AND (:task IS NULL OR task = :task)
  AND (:after IS NULL OR key > :after)
ORDER BY key
LIMIT :limit;

-- name: ended_leases
-- The latest lease of each key that is no longer live, by key: :state 'expired' (its deadline
-- passed, recorded or not), 'released' (ended by a release, a force-release or a takeover) or
-- 'all' (live ones too). The rows outlive their leases until the key is acquired again.
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases
WHERE token > 0
  AND (:state = 'all'
       OR (:state = 'expired' AND (ended = 'expired' OR (ended IS NULL AND expires_at <= :now)))
       OR (:state = 'released' AND ended IS NOT NULL AND ended <> 'expired'))
  AND (:prefix IS NULL OR substr(key, 1, length(:prefix)) = :prefix)
  AND (:holder IS NULL OR holder = :holder)
  AND (:task IS NULL OR task = :task)
  AND (:after IS NULL OR key > :after)
ORDER BY key
LIMIT :limit;

-- name: insert_event
INSERT INTO tenure_events (at, type, key, holder, task, token, actor, reason, data)
VALUES (:at, :type, :key, :holder, :task, :token, :actor, :reason, :data);

-- name: list_events
-- Events in the window of ids (after, upto], along the primary key: at most upto - after
-- rows are examined. tenure.store.sqlfiles derives list_key_events, list_holder_events and
-- list_type_events from it: the same read led by that column's equality, along its index
-- (column, id).
SELECT id, at, type, key, holder, task, token, actor, reason, data
FROM tenure_events
WHERE id > :after AND id <= :upto
  AND (:key IS NULL OR key = :key)
  AND (:holder IS NULL OR holder = :holder)
  AND (:type IS NULL OR type = :type)
  AND (:token IS NULL OR token = :token)
ORDER BY id
LIMIT :limit;

-- name: due_leases
SELECT key, token, holder, task, expires_at, acquired_at, session
FROM tenure_leases
WHERE ended IS NULL AND expires_at <= :now
ORDER BY expires_at
LIMIT :limit;

-- name: mark_expired
UPDATE tenure_leases SET ended = 'expired'
WHERE key = :key AND token = :token AND ended IS NULL AND expires_at <= :now;

-- name: next_deadline
SELECT min(expires_at) FROM tenure_leases WHERE ended IS NULL;

-- name: list_items
-- :after_* (all or none): only items sorting after that (priority, created_at, id), a page's end.
SELECT id, title, body, status, priority, labels, parent, assignee, epoch, progress,
       progress_at, result, created_by, created_at, updated_at, revoked, stalled_epoch,
       attempts, failures, counted_epoch
FROM tenure_items
WHERE (:status IS NULL OR status = :status)
  AND (:assignee IS NULL OR assignee = :assignee)
  AND (:label IS NULL OR EXISTS (SELECT 1 FROM json_each(labels) WHERE value = :label))
  AND (:after_id IS NULL OR (priority, created_at, id) > (:after_priority, :after_at, :after_id))
ORDER BY priority, created_at, id
LIMIT :limit;

-- name: list_item_summaries
-- list_items without what can be large: no body (its length instead), no result (whether
-- there is one: a stored JSON null is none), the progress without its data.
SELECT id, title, '', status, priority, labels, parent, assignee,
       epoch, json_remove(progress, '$.data'), progress_at, NULL, created_by,
       created_at, updated_at, revoked, stalled_epoch, attempts, failures, counted_epoch,
       length(body),
       coalesce(result, 'null') <> 'null'
-- FROM … as in list_items

-- name: ready_item_summaries
-- ready_items without what can be large: no body (its length instead), no result (whether
-- there is one: a stored JSON null is none), the progress without its data.
SELECT i.id, i.title, '', i.status, i.priority, i.labels, i.parent, i.assignee,
       i.epoch, json_remove(i.progress, '$.data'), i.progress_at, NULL, i.created_by,
       i.created_at, i.updated_at, i.revoked, i.stalled_epoch, i.attempts, i.failures,
       i.counted_epoch, length(i.body),
       coalesce(i.result, 'null') <> 'null'
-- FROM … as in ready_items

-- Statistics ---------------------------------------------------------------------------------
-- An event's kind is its type, except that the release by a completion is `released:completed`.
-- A time window starts at :first_id, the first event at or after its start (found by a binary
-- search on the ids, see SqliteStats._first_event_at); `at` is checked too.

-- name: count_events_after
SELECT CASE WHEN type = 'released' AND reason = 'completed' THEN 'released:completed'
            ELSE type END AS kind,
       sum(CASE WHEN type = 'conflict' THEN coalesce(json_extract(data, '$.repeats'), 1) ELSE 1 END), max(id)
FROM tenure_events WHERE id > :after AND id <= :upto
GROUP BY kind;

-- name: count_events_since
-- (a conflict event stands for its repeats)
SELECT CASE WHEN type = 'released' AND reason = 'completed' THEN 'released:completed'
            ELSE type END AS kind,
       sum(CASE WHEN type = 'conflict' THEN coalesce(json_extract(data, '$.repeats'), 1) ELSE 1 END)
FROM tenure_events WHERE id >= :first_id AND at >= :since
GROUP BY kind;

-- name: event_id_range
SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM tenure_events;

-- name: event_at_or_after
SELECT id, at FROM tenure_events WHERE id >= :id ORDER BY id LIMIT 1;

-- name: live_counts
SELECT count(*), coalesce(sum(key >= 'items/' AND key < 'items0'), 0)
FROM tenure_leases WHERE ended IS NULL AND expires_at > :now;

-- name: hot_keys
SELECT key, sum(coalesce(json_extract(data, '$.repeats'), 1)) AS n
FROM tenure_events
WHERE id >= :first_id AND at >= :since AND type = 'conflict' AND key IS NOT NULL
GROUP BY key ORDER BY n DESC, key LIMIT :limit;

-- name: expiring_holders
SELECT holder, sum(type = 'expired') AS expired, count(*) AS ended
FROM tenure_events
WHERE id >= :first_id AND at >= :since AND holder IS NOT NULL
  AND type IN ('released', 'expired', 'force_released', 'taken_over')
GROUP BY holder HAVING sum(type = 'expired') > 0
ORDER BY expired DESC, holder LIMIT :limit;

-- name: hold_times
SELECT CAST(json_extract(data, '$.held_ms') AS INTEGER) AS held
FROM tenure_events
WHERE id >= :first_id AND at >= :since
  AND type IN ('released', 'expired', 'force_released', 'taken_over')
  AND held IS NOT NULL
ORDER BY id DESC LIMIT :limit;

-- name: timeline
SELECT (at - :start) / :bucket AS slot,
       CASE WHEN type = 'released' AND reason = 'completed' THEN 'completed' ELSE type END AS kind,
       count(*)
FROM tenure_events
WHERE id >= :first_id AND at >= :start AND type IN ('released', 'expired', 'force_released', 'taken_over')
GROUP BY slot, kind;

-- Retention --------------------------------------------------------------------------------

-- name: serialize_pruning
-- One pruner at a time: the write lock of its transaction already sees to that.
SELECT 1;

-- name: max_event_id
SELECT coalesce(max(id), 0) FROM tenure_events;

-- name: renew_all
-- Renew every live lease of :holder (of its :session, unless NULL; or those among the JSON
-- array :keys) in one statement,
-- each with its own ttl; nothing shortens a lease. Runs under the write lock, :now read after it.
UPDATE tenure_leases
SET renewed_at = :now, renewals = renewals + 1, expires_at = max(expires_at, :now + ttl_ms)
WHERE holder = :holder AND ended IS NULL AND expires_at > :now
  AND (:session IS NULL OR session = :session)
  AND (:keys IS NULL OR key IN (SELECT value FROM json_each(:keys)))
RETURNING key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
          ended, fence_open, conflicts, session, scope;

-- name: lapsed_leases
-- The leases of :holder's :session that lapsed lately, for renew_all without keys: (key, token,
-- why) of each one that expired (recorded or not yet) or was force-released, whose deadline is
-- after :since. The recorded ones along a range of tenure_leases_lapsed (holder, session,
-- deadline); the unrecorded ones (the reaper records them within a second) along a range of the
-- unended leases by deadline (tenure_leases_due), never the holder's live leases.
SELECT key, token, ended FROM tenure_leases INDEXED BY tenure_leases_lapsed
WHERE holder = :holder AND session = :session AND expires_at > :since
  AND ended IN ('expired', 'force_released')
UNION ALL
SELECT key, token, 'expired' FROM tenure_leases INDEXED BY tenure_leases_due
WHERE ended IS NULL AND expires_at > :since AND expires_at <= :now
  AND holder = :holder AND session = :session;

-- name: renew_held
-- renew_all without keys, whose reply SQLite writes (renewed_json): the update of renew_all
-- without its RETURNING, in the same write transaction as renewed_json, with the same :now.
UPDATE tenure_leases
SET renewed_at = :now, renewals = renewals + 1, expires_at = max(expires_at, :now + ttl_ms)
WHERE holder = :holder AND ended IS NULL AND expires_at > :now
  AND (:session IS NULL OR session = :session);

-- name: renewed_json
-- A slot lease's semaphore, slot and slots are sent as null here: the service fills them in.
-- The leases renew_held just renewed, as the JSON of the reply, and their number: each one's
-- Lease.to_dict() (state live), by key, separated by commas (the inside of the reply's array),
-- as a BLOB, so that Python gets the UTF-8 bytes as they are. The predicate is renew_held's: the
-- update keeps every row it renewed inside it (expires_at only grows, holder and ended are
-- unchanged) and changes no other row, and no other write runs in between (same transaction,
-- under the write lock), so it picks exactly the renewed rows. Why not json_group_array: an
-- aggregate gets its rows in key order only from an ordered subquery, and json_object's JSON
-- subtype does not survive one (the objects would be quoted as strings; json() on each one again
-- costs 0.2 s per 100,000); and the brackets are added by the caller, not by a copy of the
-- whole text here (22 MB for 100,000 leases). Parsing an empty meta costs 0.08 s per 100,000.
SELECT count(*), CAST(group_concat(lease, ',') AS BLOB)
FROM (
    SELECT json_object('key', key, 'holder', holder, 'session', session, 'task', task,
                       'token', token,
                       'ttl_ms', ttl_ms, 'acquired_at', acquired_at, 'renewed_at', renewed_at,
                       'expires_at', expires_at, 'renewals', renewals,
                       'meta', CASE meta WHEN '{}' THEN json_object() ELSE json(meta) END,
                       'state', 'live', 'scope', scope,
                       'semaphore', NULL, 'slot', NULL, 'slots', NULL) AS lease
    FROM tenure_leases
    WHERE holder = :holder AND ended IS NULL AND expires_at > :now
      AND (:session IS NULL OR session = :session)
    ORDER BY key
);

-- name: ended_agents
-- Dispatched agents whose claim on their item is not live any more (their tokens are still to
-- revoke): from the agents not yet swept (the partial index on dispatched_for).
SELECT p.name
FROM tenure_principals p INDEXED BY tenure_principals_dispatched
WHERE p.dispatched_for IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM tenure_leases l
      WHERE l.key = 'items/' || p.dispatched_for AND l.holder = p.name
        AND l.ended IS NULL AND l.expires_at > :now
  )
ORDER BY p.name
LIMIT :limit;

-- name: stalled_claims
-- Live claims idle since :before or earlier whose stall is not recorded yet (their items'
-- ids); from the unended claims (a range of the unended keys), not from every item or lease.
SELECT i.id
FROM tenure_leases l JOIN tenure_items i ON i.id = substr(l.key, 7)
WHERE l.ended IS NULL AND l.key >= 'items/' AND l.key < 'items0'
  AND l.expires_at > :now
  AND i.epoch = l.token AND i.stalled_epoch < i.epoch AND i.status NOT IN ('done', 'cancelled')
  AND max(l.acquired_at, coalesce(i.progress_at, 0)) <= :before
ORDER BY i.id
LIMIT :limit;

-- name: conflict_window
-- The event of the requester's open window on the key, if any.
SELECT event_id FROM tenure_conflict_windows
WHERE key = :key AND actor = :actor AND session = :session AND at > :since;

-- name: repeat_conflict
-- One refusal more on the window's event, if it is still there and the same lease refused.
UPDATE tenure_events
SET data = json_set(data, '$.repeats', coalesce(json_extract(data, '$.repeats'), 1) + 1)
WHERE id = :id AND type = 'conflict' AND holder IS :holder AND token IS :token;

-- name: open_conflict_window
INSERT INTO tenure_conflict_windows (key, actor, session, event_id, at)
VALUES (:key, :actor, :session, :event_id, :at)
ON CONFLICT (key, actor, session) DO UPDATE SET event_id = excluded.event_id, at = excluded.at;

-- name: prune_next_upto
-- The newest event id of the oldest batch not yet folded that is over the count or past the
-- age (the events kept by age are folded already: below :pruned), up to :newest (max_event_id).
SELECT max(id) FROM (SELECT id, at FROM tenure_events WHERE id > :pruned AND id <= :newest
                     ORDER BY id LIMIT :batch)
WHERE id <= :over_count OR at < :before;

-- name: fold_range
INSERT INTO tenure_event_totals (kind, n)
SELECT CASE WHEN type = 'released' AND reason = 'completed' THEN 'released:completed'
            ELSE type END AS kind,
       sum(CASE WHEN type = 'conflict'
                THEN coalesce(json_extract(data, '$.repeats'), 1) ELSE 1 END)
FROM tenure_events WHERE id > :pruned AND id <= :upto
GROUP BY kind
ON CONFLICT (kind) DO UPDATE SET n = tenure_event_totals.n + excluded.n;

-- name: delete_range
-- The folded batch, but the kinds kept by age (tenure.core.retention) that are not past the
-- audit window: retention by count drops only the kinds :by_count names.
DELETE FROM tenure_events
WHERE id > :pruned AND id <= :upto
  AND (at < :audit_before OR type IN (SELECT value FROM json_each(:by_count)));

-- name: delete_aged_endings
-- The events kept by age (folded already) once they are past the audit window.
DELETE FROM tenure_events
WHERE id IN (SELECT id FROM (SELECT id, at FROM tenure_events WHERE id <= :pruned
                             ORDER BY id LIMIT :batch)
             WHERE at < :audit_before);

-- name: token_floor_for_update
-- (the transaction already holds SQLite's write lock)
SELECT floor FROM tenure_token_floor;


-- Compaction (tenure.store.compaction) ------------------------------------------------------

-- name: idle_leases
-- The oldest ended leases of :scope's keys whose deadline is before :before (never an item's
-- claim), along their partial index.
SELECT key, token, conflicts
FROM tenure_leases INDEXED BY tenure_leases_idle
WHERE ended IS NOT NULL AND substr(key, 1, 6) <> 'items/' AND expires_at < :before
  AND substr(key, 1, length(:prefix)) = :prefix
  AND NOT EXISTS (SELECT 1 FROM json_each(:skip) AS s
                  WHERE substr(key, 1, length(s.value)) = s.value)
ORDER BY expires_at
LIMIT :limit;

-- name: delete_leases
DELETE FROM tenure_leases
WHERE key IN (SELECT value FROM json_each(:keys)) AND ended IS NOT NULL AND expires_at < :before;

-- name: delete_fenced_ops
-- The fenced writes' op_ids of :scope's keys written before :before, the oldest first.
DELETE FROM tenure_fenced_ops
WHERE (key, token, op_id) IN (
    SELECT key, token, op_id FROM tenure_fenced_ops
    WHERE at < :before AND substr(key, 1, length(:prefix)) = :prefix
      AND NOT EXISTS (SELECT 1 FROM json_each(:skip) AS s
                      WHERE substr(key, 1, length(s.value)) = s.value)
    ORDER BY at LIMIT :limit
);

-- name: get_lease_to_acquire
-- get_lease for an acquisition, and whether any unended subtree lease exists at all (a probe of
-- their own small index, in the same statement): if none does, no acquisition of a plain key
-- needs to read the prefixes above it. One row even for a key never leased (then NULLs).
SELECT l.key, l.token, l.holder, l.task, l.ttl_ms, l.acquired_at, l.renewed_at, l.expires_at,
       l.renewals, l.meta, l.ended, l.fence_open, l.conflicts, l.session, l.scope,
       EXISTS (SELECT 1 FROM tenure_leases INDEXED BY tenure_leases_subtrees
               WHERE scope = 'subtree' AND ended IS NULL)
FROM (SELECT :key AS k) AS asked LEFT JOIN tenure_leases AS l ON l.key = asked.k;

-- name: nearby_subtrees
-- The unended subtree leases on the prefixes above a key being acquired (the core decides which
-- are live and whose), along their own small index. `(:prefixes)` is replaced by one `?` per
-- prefix (tenure.store.sqlite.tx).
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases INDEXED BY tenure_leases_subtrees
WHERE key IN (:prefixes) AND scope = 'subtree' AND ended IS NULL;

-- name: nearby_under
-- The unended lease under the subtree :prefix (keys in [prefix, upper), byte order: a range of
-- the index of unended keys, so the leases that ended under it are never read) that is not
-- (:holder, :session)'s, with the latest deadline (then the smallest key, as on PostgreSQL): if
-- it is not live, none is.
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts, session, scope
FROM tenure_leases INDEXED BY tenure_leases_unended
WHERE key > :prefix AND key < :upper AND ended IS NULL
  AND NOT (holder = :holder AND session = :session)
ORDER BY expires_at DESC, key
LIMIT 1;

-- name: count_live_leases
-- How many live leases :holder has (item claims included), counting no further than :cap:
-- along the partial index of the unended leases by holder (tenure.core.quotas).
SELECT count(*) FROM (
    SELECT 1 FROM tenure_leases INDEXED BY tenure_leases_holder
    WHERE holder = :holder AND ended IS NULL AND expires_at > :now
    LIMIT :cap
) AS held;

-- Subtree tokens (tenure.core.subtree_tokens) -----------------------------------------------

-- name: subtree_grant_above
-- The latest token granted to a subtree lease on one of the prefixes above a key (a JSON
-- array), and that prefix's lease as it is now (NULL columns: no row).
SELECT g.token, l.key, l.token, l.holder, l.task, l.ttl_ms, l.acquired_at, l.renewed_at,
       l.expires_at, l.renewals, l.meta, l.ended, l.fence_open, l.conflicts, l.session, l.scope
FROM tenure_subtree_tokens g LEFT JOIN tenure_leases l ON l.key = g.prefix
WHERE g.prefix IN (SELECT value FROM json_each(:prefixes))
ORDER BY g.token DESC LIMIT 1;

-- name: max_token_under
-- The largest token ever granted on a key under a prefix: a range of the primary key (and the
-- largest of the rows compaction deleted, which may have been under it).
SELECT max(coalesce((SELECT max(token) FROM tenure_leases WHERE key > :prefix AND key < :upper),
                    0),
           (SELECT retired FROM tenure_token_floor));

-- name: save_subtree_token
INSERT INTO tenure_subtree_tokens (prefix, token) VALUES (:prefix, :token)
ON CONFLICT (prefix) DO UPDATE SET token = max(token, excluded.token);


-- Semaphores (tenure.core.semaphores) --------------------------------------------------------

-- name: semaphore_next
-- The next token of semaphore :key (above its counter and :floor), drawn for a slot being
-- granted; its N becomes :slots. No row when the semaphore has another N and one of its slots
-- (the keys in [:lo, :hi)) is live: holders must agree on N.
INSERT INTO tenure_semaphores (key, slots, token) VALUES (:key, :slots, :floor + 1)
ON CONFLICT (key) DO UPDATE
SET token = max(tenure_semaphores.token, excluded.token - 1) + 1, slots = excluded.slots
WHERE tenure_semaphores.slots = excluded.slots OR NOT EXISTS (
    SELECT 1 FROM tenure_leases
    WHERE key >= :lo AND key < :hi AND ended IS NULL AND expires_at > :now AND token > 0)
RETURNING token;

-- name: semaphore_slots
SELECT slots FROM tenure_semaphores WHERE key = :key;
