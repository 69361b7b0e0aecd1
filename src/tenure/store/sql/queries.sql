-- The queries both backends run alike, written with :name parameters (PostgreSQL's
-- %(name)s are made from them: tenure.store.sqlfiles). A backend's own queries.sql may
-- name a query of its own instead.

-- name: get_register
SELECT key, token, value, version, updated_at FROM tenure_fenced WHERE key = :key;

-- name: save_register
INSERT INTO tenure_fenced (key, token, value, version, updated_at)
VALUES (:key, :token, :value, :version, :now)
ON CONFLICT (key) DO UPDATE SET token = excluded.token, value = excluded.value,
    version = excluded.version, updated_at = excluded.updated_at;

-- name: find_op
SELECT key, token, value, version, writer FROM tenure_fenced_ops
WHERE key = :key AND token = :token AND op_id = :op_id;

-- name: save_op
INSERT INTO tenure_fenced_ops (key, op_id, token, value, version, writer, at)
VALUES (:key, :op_id, :token, :value, :version, :writer, :now);

-- name: add_principal
INSERT INTO tenure_principals (name, kind, roles, parent, created_at, dispatched_for)
VALUES (:name, :kind, :roles, :parent, :now, :dispatched_for);

-- name: add_token
INSERT INTO tenure_tokens (id, principal, token_hash, created_at, expires_at)
VALUES (:id, :principal, :token_hash, :now, :expires_at);

-- name: add_signin_code
INSERT INTO tenure_signin_codes (code_hash, principal, created_at, expires_at)
VALUES (:code_hash, :principal, :now, :expires_at);

-- name: prune_signin_codes
DELETE FROM tenure_signin_codes WHERE expires_at < :before;

-- name: signin_code_open
-- Whether a sign-in code may still be traded (read before the trade's write transaction, so a
-- made-up code costs the writers nothing).
SELECT 1 FROM tenure_signin_codes
WHERE code_hash = :code_hash AND used_at IS NULL AND expires_at > :now;

-- name: redeem_signin_code
-- The one trade of a sign-in code: unused, unexpired, its principal still there.
UPDATE tenure_signin_codes SET used_at = :now
WHERE code_hash = :code_hash AND used_at IS NULL AND expires_at > :now
  AND principal IN (SELECT name FROM tenure_principals)
RETURNING principal;

-- name: revoke_token
UPDATE tenure_tokens SET revoked_at = :now
WHERE id = :id AND principal = :principal AND revoked_at IS NULL;

-- name: list_tokens
SELECT id, created_at, expires_at, revoked_at FROM tenure_tokens WHERE principal = :name
ORDER BY created_at, id;

-- name: live_token_ids
-- What a server checks a token's id against before it looks up a token from an address past
-- its budget of failed authentications.
SELECT id FROM tenure_tokens WHERE revoked_at IS NULL;

-- name: get_principal
SELECT name, kind, roles, parent FROM tenure_principals WHERE name = :name;

-- name: list_principals
SELECT name, kind, roles, parent FROM tenure_principals ORDER BY name;

-- name: auth_version
SELECT version FROM tenure_auth_version WHERE id = 1;

-- name: token_by_hash
-- The principal of an unrevoked token, the token's id and when it expires (NULL: never); the
-- caller compares that with its clock (an expired token reads as unknown).
SELECT p.name, p.kind, p.roles, p.parent, t.id, t.expires_at
FROM tenure_tokens t JOIN tenure_principals p ON p.name = t.principal
WHERE t.token_hash = :token_hash AND t.revoked_at IS NULL;

-- name: principal_by_token
SELECT p.name, p.kind, p.roles, p.parent
FROM tenure_tokens t JOIN tenure_principals p ON p.name = t.principal
WHERE t.token_hash = :token_hash AND t.revoked_at IS NULL;

-- name: get_item
SELECT id, title, body, status, priority, labels, parent, assignee, epoch, progress,
       progress_at, result, created_by, created_at, updated_at, revoked, stalled_epoch,
       attempts, failures, counted_epoch
FROM tenure_items WHERE id = :id;

-- name: add_item
-- A new item: its id, or no row when the id is taken.
INSERT INTO tenure_items (id, title, body, status, priority, labels, parent, assignee, epoch,
                          progress, progress_at, result, created_by, created_at, updated_at,
                          revoked, stalled_epoch, attempts, failures, counted_epoch)
VALUES (:id, :title, :body, :status, :priority, :labels, :parent, :assignee, :epoch, :progress,
        :progress_at, :result, :created_by, :created_at, :updated_at,
        :revoked, :stalled_epoch, :attempts, :failures, :counted_epoch)
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: save_item
UPDATE tenure_items SET title = :title, body = :body, status = :status, priority = :priority,
    labels = :labels, parent = :parent, assignee = :assignee, epoch = :epoch,
    progress = :progress, progress_at = :progress_at, result = :result,
    revoked = :revoked, stalled_epoch = :stalled_epoch,
    attempts = :attempts, failures = :failures, counted_epoch = :counted_epoch,
    updated_at = :updated_at
WHERE id = :id;

-- name: ready_items
SELECT i.id, i.title, i.body, i.status, i.priority, i.labels, i.parent, i.assignee, i.epoch,
       i.progress, i.progress_at, i.result, i.created_by, i.created_at, i.updated_at,
       i.revoked, i.stalled_epoch, i.attempts, i.failures, i.counted_epoch
FROM tenure_items i
LEFT JOIN tenure_leases l ON l.key = 'items/' || i.id
WHERE i.status = 'open' AND i.assignee IS NULL
  AND NOT (l.key IS NOT NULL AND l.ended IS NULL AND l.expires_at > :now)
ORDER BY i.priority, i.created_at, i.id
LIMIT :limit;

-- name: lapsed_claims
-- Claims in progress whose lease ran out while its holder was still the assignee (expired, or
-- not ended yet) and whose failure is not counted yet (their items' ids).
SELECT i.id
FROM tenure_items i JOIN tenure_leases l ON l.key = 'items/' || i.id
WHERE i.status = 'in_progress' AND i.counted_epoch < i.epoch
  AND l.token = i.epoch AND l.holder = i.assignee AND NOT i.revoked
  AND (l.ended IS NULL OR l.ended = 'expired') AND l.expires_at <= :now
ORDER BY i.id
LIMIT :limit;

-- name: insert_transfer
INSERT INTO tenure_transfers (item, from_p, to_p, epoch, reason, actor, at, note, exit_status)
VALUES (:item, :from_p, :to_p, :epoch, :reason, :actor, :at, :note, :exit_status);

-- name: list_transfers
SELECT item, from_p, to_p, epoch, reason, actor, at, note, exit_status
FROM tenure_transfers WHERE item = :item ORDER BY id;

-- name: find_item_op
SELECT result FROM tenure_item_ops WHERE item = :item AND op_id = :op_id;

-- name: save_item_op
INSERT INTO tenure_item_ops (item, op_id, result, at) VALUES (:item, :op_id, :result, :now);

-- name: get_cursor
SELECT event_id FROM tenure_cursors WHERE principal = :principal AND name = :name;

-- name: set_cursor
INSERT INTO tenure_cursors (principal, name, event_id) VALUES (:principal, :name, :event_id)
ON CONFLICT (principal, name) DO UPDATE SET event_id = excluded.event_id
WHERE excluded.event_id > tenure_cursors.event_id;

-- name: event_totals
SELECT kind, n FROM tenure_event_totals;

-- name: pruned_upto
SELECT coalesce(max(upto), 0) FROM tenure_event_pruned;

-- name: set_pruned
INSERT INTO tenure_event_pruned (one, upto) VALUES (1, :upto)
ON CONFLICT (one) DO UPDATE SET upto = excluded.upto;

-- name: revoke_all_tokens
UPDATE tenure_tokens SET revoked_at = :now
WHERE principal = :name AND revoked_at IS NULL
RETURNING id;

-- name: swept_agent
-- Its tokens are revoked: the sweep does not look at it again (compaction retires it later).
UPDATE tenure_principals SET dispatched_for = NULL, swept_at = :now WHERE name = :name;
-- name: count_stalled
-- Live claims whose stall is recorded (progress clears it): the stalled-claims gauge.
SELECT count(*)
FROM tenure_leases l JOIN tenure_items i ON i.id = substr(l.key, 7)
WHERE l.ended IS NULL AND l.key >= 'items/' AND l.key < 'items0'
  AND l.expires_at > :now AND i.epoch = l.token
  AND i.stalled_epoch = i.epoch AND i.status NOT IN ('done', 'cancelled');

-- Refusals in windows (tenure.store.retention) ----------------------------------------------

-- name: close_conflict_windows
DELETE FROM tenure_conflict_windows WHERE at <= :since;

-- name: conflict_total
-- Every refusal ever counted, from the keys' own counters (not the log: it coalesces and
-- retention drops events), and those of the rows compaction deleted.
SELECT coalesce(sum(conflicts), 0) + (SELECT retired_conflicts FROM tenure_token_floor)
FROM tenure_leases;

-- name: set_roles
UPDATE tenure_principals SET roles = :roles WHERE name = :name;

-- name: live_leases_of
-- What keeps a principal from being removed: the live leases it holds ...
SELECT key FROM tenure_leases
WHERE holder = :name AND ended IS NULL AND expires_at > :now
ORDER BY key LIMIT 10;

-- name: open_items_of
-- ... and the items assigned to it that are not done or cancelled.
SELECT id FROM tenure_items
WHERE assignee = :name AND status NOT IN ('done', 'cancelled')
ORDER BY id LIMIT 10;

-- name: children_of
-- ... and the principals it dispatched (their ancestry names it).
SELECT name FROM tenure_principals WHERE parent = :name ORDER BY name LIMIT 10;

-- name: end_leases_of
-- A principal's credentials ended (removed, or its last token revoked): its live leases end
-- with them, force-released, their tokens dead for fenced writes.
UPDATE tenure_leases SET ended = 'force_released', fence_open = false
WHERE holder = :name AND ended IS NULL AND expires_at > :now
RETURNING key, token, holder, task, acquired_at, session;

-- name: revoke_claimed_item
-- An item whose claim so ended reads revoked until someone takes it over (as a force-release).
UPDATE tenure_items SET revoked = true, updated_at = :now
WHERE id = :id AND assignee IS NOT NULL
RETURNING assignee, epoch;

-- name: valid_tokens_of
-- The tokens of a principal that still authenticate.
SELECT count(*) FROM tenure_tokens
WHERE principal = :name AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > :now);

-- name: delete_tokens
DELETE FROM tenure_tokens WHERE principal = :name;

-- name: delete_cursors
DELETE FROM tenure_cursors WHERE principal = :name;

-- name: delete_principal
DELETE FROM tenure_principals WHERE name = :name;

-- name: token_floor
-- The floor, and the largest token of the lease rows compaction deleted: a key without a row
-- gets a token above both.
SELECT floor, retired FROM tenure_token_floor;

-- name: max_token
-- The largest token ever granted: the rows' and the deleted rows'.
SELECT CASE WHEN most > retired THEN most ELSE retired END
FROM (SELECT coalesce(max(token), 0) AS most FROM tenure_leases) AS rows_, tenure_token_floor;

-- name: set_token_floor
UPDATE tenure_token_floor SET floor = :floor;

-- Compaction (tenure.store.compaction) ------------------------------------------------------

-- name: raise_retired
-- Before lease rows are deleted: their largest token (a key without a row gets a larger one)
-- and their refusals (the all-time total keeps them).
UPDATE tenure_token_floor
SET retired = CASE WHEN retired > :top THEN retired ELSE :top END,
    retired_conflicts = retired_conflicts + :conflicts;

-- name: delete_item_ops
-- Item op_ids past the window, the oldest first.
DELETE FROM tenure_item_ops
WHERE (item, op_id) IN (SELECT item, op_id FROM tenure_item_ops WHERE at < :before
                        ORDER BY at LIMIT :limit);

-- name: retirable_agents
-- Dispatched agents swept (tokens revoked once their claim ended) before :before that hold
-- nothing any more: no unrevoked token, no live lease, no item that is not done or cancelled,
-- no agent of their own.
SELECT p.name, p.kind, p.roles, p.parent
FROM tenure_principals p
WHERE p.swept_at IS NOT NULL AND p.swept_at < :before
  AND NOT EXISTS (SELECT 1 FROM tenure_tokens t
                  WHERE t.principal = p.name AND t.revoked_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM tenure_leases l
                  WHERE l.holder = p.name AND l.ended IS NULL AND l.expires_at > :now)
  AND NOT EXISTS (SELECT 1 FROM tenure_items i
                  WHERE i.assignee = p.name AND i.status NOT IN ('done', 'cancelled'))
  AND NOT EXISTS (SELECT 1 FROM tenure_principals c WHERE c.parent = p.name)
ORDER BY p.swept_at
LIMIT :limit;

-- name: count_items
-- Per-principal bounds (tenure.core.quotas): add :n to the items :principal created in the
-- minute :name names, unless that passes :limit; the new count, or no row (nothing added). The
-- counts live in tenure_cursors, one row per principal and minute ('quota:items:<minute>'):
-- the row's lock orders concurrent creations, so two of them cannot both take the last place.
INSERT INTO tenure_cursors (principal, name, event_id) VALUES (:principal, :name, :n)
ON CONFLICT (principal, name) DO UPDATE SET event_id = tenure_cursors.event_id + excluded.event_id
WHERE tenure_cursors.event_id + excluded.event_id <= :limit
RETURNING event_id;

-- name: forget_item_counts
-- The counts of the other minutes than :name's (done once a minute's first count is written).
DELETE FROM tenure_cursors
WHERE principal = :principal AND substr(name, 1, 12) = 'quota:items:' AND name <> :name;

-- name: count_live_agents
-- How many agents :parent dispatched are still working (their claim on their item is live),
-- counting no further than :cap: along the principals' partial index on parent, the swept
-- ones (their tokens revoked) left out.
SELECT count(*) FROM (
    SELECT 1 FROM tenure_principals p
    WHERE p.parent = :parent AND p.dispatched_for IS NOT NULL AND p.swept_at IS NULL
      AND EXISTS (
          SELECT 1 FROM tenure_leases l
          WHERE l.key = 'items/' || p.dispatched_for AND l.holder = p.name
            AND l.ended IS NULL AND l.expires_at > :now
      )
    LIMIT :cap
) AS working;

-- name: get_session_task
SELECT task FROM tenure_session_tasks WHERE principal = :principal AND session = :session;

-- name: set_session_task
-- The first task set for a session stays (a session's later prompts do not change it, they only
-- mark it as still in use: compaction forgets the tasks of sessions quiet for a day).
INSERT INTO tenure_session_tasks (principal, session, task, at)
VALUES (:principal, :session, :task, :now)
ON CONFLICT (principal, session) DO UPDATE SET at = excluded.at;

-- name: forget_session_tasks
DELETE FROM tenure_session_tasks
WHERE (principal, session) IN (
    SELECT principal, session FROM tenure_session_tasks WHERE at < :before LIMIT :limit
);

-- name: end_session_task
DELETE FROM tenure_session_tasks WHERE principal = :principal AND session = :session;

-- name: schema_version
-- The newest migration the database has run.
SELECT coalesce(max(version), 0) FROM tenure_schema;
