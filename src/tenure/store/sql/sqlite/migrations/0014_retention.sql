-- Compaction (tenure.store.compaction) deletes what the retention settings no longer keep.
-- The lease row of a key idle past the retention age is deleted; the largest token of the rows
-- deleted is kept here (`retired`), and a key without a row gets a token above it, so a key
-- acquired again after its row went gets a larger token than any it ever had. The refusals
-- those rows counted are kept too (`retired_conflicts`), so the all-time total stays right.
ALTER TABLE tenure_token_floor ADD COLUMN retired INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tenure_token_floor ADD COLUMN retired_conflicts INTEGER NOT NULL DEFAULT 0;

-- The ended leases (not the items' claims, which are kept with their items) by deadline: a
-- pass reads the oldest, never the whole table.
CREATE INDEX tenure_leases_idle ON tenure_leases (expires_at)
    WHERE ended IS NOT NULL AND substr(key, 1, 6) <> 'items/';

-- The fenced register's op_ids and the items' are kept for an idempotency window: when each
-- was written (the rows written before this migration count from now).
ALTER TABLE tenure_fenced_ops ADD COLUMN at INTEGER NOT NULL DEFAULT 0;
UPDATE tenure_fenced_ops SET at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);
CREATE INDEX tenure_fenced_ops_at ON tenure_fenced_ops (at);
ALTER TABLE tenure_item_ops ADD COLUMN at INTEGER NOT NULL DEFAULT 0;
UPDATE tenure_item_ops SET at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);
CREATE INDEX tenure_item_ops_at ON tenure_item_ops (at);

-- When a dispatched agent's tokens were revoked because its claim ended: it is retired (the
-- principal and its tokens deleted) a grace period later.
ALTER TABLE tenure_principals ADD COLUMN swept_at INTEGER;
CREATE INDEX tenure_principals_swept ON tenure_principals (swept_at) WHERE swept_at IS NOT NULL;
CREATE INDEX tenure_principals_parent ON tenure_principals (parent) WHERE parent IS NOT NULL;
