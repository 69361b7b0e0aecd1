-- Attempts and parking: how many times an item was claimed since it was created or reopened,
-- its failed attempts (a JSON list: the claim's epoch, `lapsed` or `command_exited`, when, the
-- exit status), and the epoch whose failure was counted (once per claim). An item whose
-- failures reach the policy's `max_attempts` is `parked`.
ALTER TABLE tenure_items ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tenure_items ADD COLUMN failures TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tenure_items ADD COLUMN counted_epoch INTEGER NOT NULL DEFAULT 0;
-- the claims in progress whose lapse is not counted yet: the reaper's scan for lapsed claims
CREATE INDEX tenure_items_uncounted ON tenure_items (id)
WHERE status = 'in_progress' AND counted_epoch < epoch;
