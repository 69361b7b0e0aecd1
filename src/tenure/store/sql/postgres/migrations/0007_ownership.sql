-- A force-released claim reads `revoked` until someone takes it over with a reason or an
-- authority reassigns it; a stalled claim is recorded once per epoch.
ALTER TABLE tenure_items ADD COLUMN revoked boolean NOT NULL DEFAULT false;
ALTER TABLE tenure_items ADD COLUMN stalled_epoch bigint NOT NULL DEFAULT 0;
-- An agent principal made by dispatch names the item it was made for: its tokens are revoked
-- once its claim on that item ends, whichever way it ends.
ALTER TABLE tenure_principals ADD COLUMN dispatched_for text;
CREATE INDEX tenure_principals_dispatched ON tenure_principals (dispatched_for)
    WHERE dispatched_for IS NOT NULL;
-- The unended claims (leases of item keys): the reaper looks for stalled ones every round.
CREATE INDEX tenure_leases_open_claims ON tenure_leases (key)
    WHERE ended IS NULL AND key >= 'items/' AND key < 'items0';
