-- Refusals are recorded in windows, not one event each: the first refusal of a requester
-- (an actor and its session) on a key writes a `conflict` event, and the refusals that follow
-- within the window add to that event's `repeats` (in its data) instead of writing more. This
-- table finds the open window's event: one row per (key, actor, session), pruned with the log.
CREATE TABLE tenure_conflict_windows (
    key      text   NOT NULL,
    actor    text   NOT NULL,
    session  text   NOT NULL,
    event_id bigint NOT NULL,
    at       bigint NOT NULL,
    PRIMARY KEY (key, actor, session)
);
CREATE INDEX tenure_conflict_windows_at ON tenure_conflict_windows (at);
