-- Retention prunes the oldest events in bounded batches. What a batch removes is first added to
-- these totals (by kind), in the same transaction, so all-time counts survive pruning.
CREATE INDEX tenure_events_at ON tenure_events (at);

CREATE TABLE tenure_event_totals (
    kind  TEXT    PRIMARY KEY,
    n     INTEGER NOT NULL
) WITHOUT ROWID;

-- The newest event id folded into tenure_event_totals (one row).
CREATE TABLE tenure_event_pruned (
    one   INTEGER PRIMARY KEY CHECK (one = 1),
    upto  INTEGER NOT NULL
);
