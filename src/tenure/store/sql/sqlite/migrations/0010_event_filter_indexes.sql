-- The event log's readers filter by holder and by type (`/v1/events?holder=…`, the briefing's
-- reads by type, the dashboard's filtered follower). Without these indexes each such read walked
-- the log along the ids, up to the whole log when nothing matched. Each read is also bounded to
-- a window of ids, and its cursor moves past the window even when nothing in it matched.
CREATE INDEX IF NOT EXISTS tenure_events_holder ON tenure_events (holder, id);
CREATE INDEX IF NOT EXISTS tenure_events_type ON tenure_events (type, id);
