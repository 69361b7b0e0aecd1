-- The event log's (holder, id) index served no query (the listing filters by holder on its way
-- along the ids) and cost every appended event an index insert.
DROP INDEX IF EXISTS tenure_events_holder;
