-- Subtree leases: a lease on a key ending in '/' with scope 'subtree' holds every key under it.
ALTER TABLE tenure_leases ADD COLUMN scope text NOT NULL DEFAULT 'key';
-- Keys compare in byte order (code point order in UTF-8), whatever the database's collation, as
-- on SQLite: so the primary key's index serves "the leases under a prefix" (a range of keys),
-- and lists of leases are in that order on both backends. (The indexes on key are rebuilt.)
ALTER TABLE tenure_leases ALTER COLUMN key TYPE text COLLATE "C";
