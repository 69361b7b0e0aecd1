-- The unended leases by key (byte order: the key column's collation is "C"), as SQLite's
-- migration 0015: a subtree acquisition reads and share-locks the unended leases under its
-- prefix along a range of this index, never the rows of the leases that ended there. It holds
-- the unended claims too (the items' keys are a range of it), so the index of those alone goes.
CREATE INDEX tenure_leases_unended ON tenure_leases (key) WHERE ended IS NULL;
DROP INDEX IF EXISTS tenure_leases_open_claims;
