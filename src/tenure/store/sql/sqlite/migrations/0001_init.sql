-- One row per key ever leased. The row outlives its lease, so `token` (the latest token
-- issued for the key) is durable state that only grows.
CREATE TABLE tenure_leases (
    key          TEXT    PRIMARY KEY,
    token        INTEGER NOT NULL,
    holder       TEXT    NOT NULL,
    task         TEXT,
    ttl_ms       INTEGER NOT NULL,
    acquired_at  INTEGER NOT NULL,
    renewed_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    renewals     INTEGER NOT NULL DEFAULT 0,
    meta         TEXT    NOT NULL DEFAULT '{}',
    ended        TEXT,
    fence_open   INTEGER NOT NULL DEFAULT 1,
    conflicts    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- The reaper finds lapsed, unrecorded leases in time proportional to their number.
CREATE INDEX tenure_leases_due ON tenure_leases (expires_at) WHERE ended IS NULL;
CREATE INDEX tenure_leases_holder ON tenure_leases (holder) WHERE ended IS NULL;

CREATE TABLE tenure_events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL,
    type    TEXT    NOT NULL,
    key     TEXT,
    holder  TEXT,
    task    TEXT,
    token   INTEGER,
    actor   TEXT,
    reason  TEXT,
    data    TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX tenure_events_key ON tenure_events (key, id);
CREATE INDEX tenure_events_holder ON tenure_events (holder, id);
CREATE INDEX tenure_events_type ON tenure_events (type, id);

CREATE TABLE tenure_fenced (
    key         TEXT    PRIMARY KEY,
    token       INTEGER NOT NULL,
    value       TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE tenure_fenced_ops (
    key      TEXT    NOT NULL,
    op_id    TEXT    NOT NULL,
    token    INTEGER NOT NULL,
    value    TEXT    NOT NULL,
    version  INTEGER NOT NULL,
    PRIMARY KEY (key, op_id)
) WITHOUT ROWID;

CREATE TABLE tenure_principals (
    name        TEXT    PRIMARY KEY,
    kind        TEXT    NOT NULL,
    roles       TEXT    NOT NULL DEFAULT '[]',
    parent      TEXT,
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- Bearer tokens: only a hash is kept. A principal may hold several; revoking keeps the row.
CREATE TABLE tenure_tokens (
    id          TEXT    PRIMARY KEY,
    principal   TEXT    NOT NULL REFERENCES tenure_principals (name),
    token_hash  TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
) WITHOUT ROWID;
CREATE INDEX tenure_tokens_principal ON tenure_tokens (principal);
