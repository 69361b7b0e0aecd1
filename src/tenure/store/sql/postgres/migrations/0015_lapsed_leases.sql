-- The leases that lapsed (expired, recorded by the reaper, or force-released) by holder, session
-- and deadline, as SQLite's migration 0016: a renew-all without keys reports its session's
-- leases that lapsed within the last max_ttl along a range of this index.
CREATE INDEX tenure_leases_lapsed ON tenure_leases (holder, session, expires_at)
    WHERE ended IN ('expired', 'force_released');
