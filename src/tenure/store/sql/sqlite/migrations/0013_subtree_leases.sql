-- Subtree leases: a lease on a key ending in '/' with scope 'subtree' holds every key under it.
ALTER TABLE tenure_leases ADD COLUMN scope TEXT NOT NULL DEFAULT 'key';
-- "The live subtree leases among these prefixes" (every acquisition of a key with a '/' asks):
-- an index of the unended subtree leases only, which no plain lease's write touches. ("One
-- live lease under a prefix", asked by a subtree acquisition only, is a range of the primary
-- key: the table is clustered by key, in byte order.)
CREATE INDEX tenure_leases_subtrees ON tenure_leases (key)
    WHERE scope = 'subtree' AND ended IS NULL;
