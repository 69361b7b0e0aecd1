-- The event log's (type, id) and (at) indexes served only the statistics' time windows, and
-- cost every appended event two more B-tree writes (pages written in full to the WAL by every
-- group commit). Events are appended under the write lock with the instant read after taking
-- it, so `at` grows with `id`: the statistics find a window's first id by a binary search on
-- the primary key (`SqliteStats._first_event_at`) and walk the ids from there.
DROP INDEX IF EXISTS tenure_events_type;
DROP INDEX IF EXISTS tenure_events_at;
