-- The unended leases by key: a subtree acquisition reads the unended leases under its prefix
-- (a range of this index), never the rows of the leases that ended there (which stay, as a
-- key's history, until compaction deletes them). It holds the unended claims too (the items'
-- keys are a range of it), so the index of those alone goes.
CREATE INDEX tenure_leases_unended ON tenure_leases (key) WHERE ended IS NULL;
DROP INDEX IF EXISTS tenure_leases_open_claims;
