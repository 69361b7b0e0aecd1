-- The event log's (holder, id) index served no query (the listing filters by holder on its way
-- along the ids) and cost every appended event a page of its own: with the events of many
-- holders in one group commit, one more page per holder, written in full to the WAL.
DROP INDEX IF EXISTS tenure_events_holder;
