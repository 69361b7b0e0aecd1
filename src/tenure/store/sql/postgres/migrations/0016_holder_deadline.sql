-- The unended leases by holder now carry their deadline, as SQLite's migration 0017: the
-- per-principal bound on live leases counts a holder's live leases along a range of this index.
DROP INDEX tenure_leases_holder;
CREATE INDEX tenure_leases_holder ON tenure_leases (holder, expires_at) WHERE ended IS NULL;
