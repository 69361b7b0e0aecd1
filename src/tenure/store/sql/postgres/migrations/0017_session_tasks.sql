-- A session's task as a person wrote it (the first line of a harness session's first prompt),
-- one row per principal and session: the file leases the session's hooks take carry it, so a
-- blocked edit names a task a person can read. Deleted when the session ends.
CREATE TABLE tenure_session_tasks (
    principal TEXT   NOT NULL,
    session   TEXT   NOT NULL,
    task      TEXT   NOT NULL,
    at        BIGINT NOT NULL,
    PRIMARY KEY (principal, session)
);
CREATE INDEX tenure_session_tasks_at ON tenure_session_tasks (at);
