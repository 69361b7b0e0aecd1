-- Subtree leases: a lease on a key ending in '/' with scope 'subtree' holds every key under it.
ALTER TABLE tenure_leases ADD COLUMN scope text NOT NULL DEFAULT 'key';
-- "One live lease under a prefix": a range of the unended keys in byte order (text_pattern_ops,
-- whatever the database's collation). (The subtree leases above a key are primary-key lookups.)
CREATE INDEX tenure_leases_unended_key ON tenure_leases (key text_pattern_ops)
    WHERE ended IS NULL AND token > 0;
