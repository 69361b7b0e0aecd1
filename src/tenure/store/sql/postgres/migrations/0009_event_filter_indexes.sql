-- The event log's readers filter by holder (`/v1/events?holder=…`, the dashboard's filtered
-- follower): without this index each such read walked the log along the ids, up to the whole
-- log when nothing matched. (The (type, id) index is still there.) Each read is also bounded to
-- a window of ids, and its cursor moves past the window even when nothing in it matched.
CREATE INDEX IF NOT EXISTS tenure_events_holder ON tenure_events (holder, id);
