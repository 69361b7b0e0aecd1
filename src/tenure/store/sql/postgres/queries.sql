-- name: now_ms
-- The one clock every server sharing this database agrees on.
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint;

-- name: lock_lease
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts
FROM tenure_leases WHERE key = %(key)s FOR UPDATE;

-- name: create_lease_row
-- A placeholder (token 0) that gives a new key a row to lock; never visible once committed,
-- because the same transaction saves the real lease over it.
INSERT INTO tenure_leases (key, token, holder, ttl_ms, acquired_at, renewed_at, expires_at,
                           ended)
VALUES (%(key)s, 0, '', 0, 0, 0, 0, 'released')
ON CONFLICT (key) DO NOTHING;

-- name: get_lease
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts
FROM tenure_leases WHERE key = %(key)s AND token > 0;

-- name: save_lease
UPDATE tenure_leases SET
    token = %(token)s, holder = %(holder)s, task = %(task)s, ttl_ms = %(ttl_ms)s,
    acquired_at = %(acquired_at)s, renewed_at = %(renewed_at)s, expires_at = %(expires_at)s,
    renewals = %(renewals)s, meta = %(meta)s, ended = %(ended)s, fence_open = %(fence_open)s,
    conflicts = %(conflicts)s
-- Tokens only grow, whatever the caller computed.
WHERE key = %(key)s AND %(token)s >= token;

-- name: live_leases
SELECT key, token, holder, task, ttl_ms, acquired_at, renewed_at, expires_at, renewals, meta,
       ended, fence_open, conflicts
FROM tenure_leases
WHERE ended IS NULL AND expires_at > %(now)s AND token > 0
  AND (%(prefix)s::text IS NULL OR left(key, length(%(prefix)s::text)) = %(prefix)s::text)
  AND (%(holder)s::text IS NULL OR holder = %(holder)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
ORDER BY key
LIMIT %(limit)s;

-- name: serialize_events
-- Held to commit, so event ids are handed out in commit order and an `after` cursor never
-- skips an event that commits late.
SELECT pg_advisory_xact_lock(7468, 1);

-- name: insert_event
INSERT INTO tenure_events (at, type, key, holder, task, token, actor, reason, data)
VALUES (%(at)s, %(type)s, %(key)s, %(holder)s, %(task)s, %(token)s, %(actor)s, %(reason)s,
        %(data)s)
RETURNING id;

-- name: list_events
SELECT id, at, type, key, holder, task, token, actor, reason, data
FROM tenure_events
WHERE id > %(after)s
  AND (%(key)s::text IS NULL OR key = %(key)s::text)
  AND (%(holder)s::text IS NULL OR holder = %(holder)s::text)
  AND (%(type)s::text IS NULL OR type = %(type)s::text)
  AND (%(token)s::bigint IS NULL OR token = %(token)s::bigint)
ORDER BY id
LIMIT %(limit)s;

-- name: reap
-- Exactly once across reapers: rows another transaction holds are skipped, and the update
-- re-checks `ended IS NULL` under the row lock.
WITH due AS (
    SELECT key FROM tenure_leases
    WHERE ended IS NULL AND expires_at <= %(now)s AND token > 0
    ORDER BY expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE tenure_leases AS l SET ended = 'expired'
FROM due
WHERE l.key = due.key AND l.ended IS NULL AND l.expires_at <= %(now)s
RETURNING l.key, l.token, l.holder, l.task, l.expires_at;

-- name: next_deadline
SELECT min(expires_at) FROM tenure_leases WHERE ended IS NULL AND token > 0;

-- name: get_register
SELECT key, token, value, version, updated_at FROM tenure_fenced WHERE key = %(key)s;

-- name: save_register
INSERT INTO tenure_fenced (key, token, value, version, updated_at)
VALUES (%(key)s, %(token)s, %(value)s, %(version)s, %(now)s)
ON CONFLICT (key) DO UPDATE SET token = excluded.token, value = excluded.value,
    version = excluded.version, updated_at = excluded.updated_at;

-- name: find_op
SELECT key, token, value, version FROM tenure_fenced_ops
WHERE key = %(key)s AND op_id = %(op_id)s;

-- name: save_op
INSERT INTO tenure_fenced_ops (key, op_id, token, value, version)
VALUES (%(key)s, %(op_id)s, %(token)s, %(value)s, %(version)s);

-- name: add_principal
INSERT INTO tenure_principals (name, kind, roles, parent, created_at)
VALUES (%(name)s, %(kind)s, %(roles)s, %(parent)s, %(now)s);

-- name: add_token
INSERT INTO tenure_tokens (id, principal, token_hash, created_at)
VALUES (%(id)s, %(principal)s, %(token_hash)s, %(now)s);

-- name: revoke_token
UPDATE tenure_tokens SET revoked_at = %(now)s
WHERE id = %(id)s AND principal = %(principal)s AND revoked_at IS NULL;

-- name: list_tokens
SELECT id, created_at, revoked_at FROM tenure_tokens WHERE principal = %(name)s ORDER BY created_at, id;

-- name: get_principal
SELECT name, kind, roles, parent FROM tenure_principals WHERE name = %(name)s;

-- name: list_principals
SELECT name, kind, roles, parent FROM tenure_principals ORDER BY name;

-- name: principal_by_token
SELECT p.name, p.kind, p.roles, p.parent
FROM tenure_tokens t JOIN tenure_principals p ON p.name = t.principal
WHERE t.token_hash = %(token_hash)s AND t.revoked_at IS NULL;
