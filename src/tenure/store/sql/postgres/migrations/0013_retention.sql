-- Compaction (tenure.store.compaction): as SQLite's migration 0014. The largest token of the
-- lease rows deleted (`retired`; a key without a row gets a token above it) and the refusals
-- they counted (`retired_conflicts`).
ALTER TABLE tenure_token_floor ADD COLUMN retired bigint NOT NULL DEFAULT 0;
ALTER TABLE tenure_token_floor ADD COLUMN retired_conflicts bigint NOT NULL DEFAULT 0;

-- The ended leases (not the items' claims) by deadline.
CREATE INDEX tenure_leases_idle ON tenure_leases (expires_at)
    WHERE ended IS NOT NULL AND left(key, 6) <> 'items/';

-- When each op_id was written (the rows written before this migration count from now).
ALTER TABLE tenure_fenced_ops ADD COLUMN at bigint NOT NULL DEFAULT 0;
UPDATE tenure_fenced_ops SET at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
CREATE INDEX tenure_fenced_ops_at ON tenure_fenced_ops (at);
ALTER TABLE tenure_item_ops ADD COLUMN at bigint NOT NULL DEFAULT 0;
UPDATE tenure_item_ops SET at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
CREATE INDEX tenure_item_ops_at ON tenure_item_ops (at);

-- When a dispatched agent's tokens were revoked because its claim ended.
ALTER TABLE tenure_principals ADD COLUMN swept_at bigint;
CREATE INDEX tenure_principals_swept ON tenure_principals (swept_at) WHERE swept_at IS NOT NULL;
CREATE INDEX tenure_principals_parent ON tenure_principals (parent) WHERE parent IS NOT NULL;
