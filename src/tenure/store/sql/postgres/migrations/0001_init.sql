-- One row per key ever leased. JSON is kept as text (as on SQLite), so values read back exactly as written.
-- The row outlives its lease, so `token` (the latest token
-- issued for the key) is durable state that only grows.
CREATE TABLE tenure_leases (
    key          text    PRIMARY KEY,
    token        bigint  NOT NULL CHECK (token >= 0),
    holder       text    NOT NULL,
    task         text,
    ttl_ms       bigint  NOT NULL,
    acquired_at  bigint  NOT NULL,
    renewed_at   bigint  NOT NULL,
    expires_at   bigint  NOT NULL,
    renewals     bigint  NOT NULL DEFAULT 0,
    meta         text    NOT NULL DEFAULT '{}',
    ended        text,
    fence_open   boolean NOT NULL DEFAULT true,
    conflicts    bigint  NOT NULL DEFAULT 0
);

-- The reaper finds lapsed, unrecorded leases in time proportional to their number.
CREATE INDEX tenure_leases_due ON tenure_leases (expires_at) WHERE ended IS NULL;
CREATE INDEX tenure_leases_holder ON tenure_leases (holder) WHERE ended IS NULL;

CREATE TABLE tenure_events (
    id      bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      bigint  NOT NULL,
    type    text    NOT NULL,
    key     text,
    holder  text,
    task    text,
    token   bigint,
    actor   text,
    reason  text,
    data    text    NOT NULL DEFAULT '{}'
);
CREATE INDEX tenure_events_key ON tenure_events (key, id);
CREATE INDEX tenure_events_holder ON tenure_events (holder, id);
CREATE INDEX tenure_events_type ON tenure_events (type, id);

CREATE TABLE tenure_fenced (
    key         text    PRIMARY KEY,
    token       bigint  NOT NULL,
    value       text    NOT NULL,
    version     bigint  NOT NULL,
    updated_at  bigint  NOT NULL
);

CREATE TABLE tenure_fenced_ops (
    key      text    NOT NULL,
    op_id    text    NOT NULL,
    token    bigint  NOT NULL,
    value    text    NOT NULL,
    version  bigint  NOT NULL,
    PRIMARY KEY (key, op_id)
);

CREATE TABLE tenure_principals (
    name        text    PRIMARY KEY,
    kind        text    NOT NULL,
    roles       text    NOT NULL DEFAULT '[]',
    parent      text,
    created_at  bigint  NOT NULL
);

-- Bearer tokens: only a hash is kept. A principal may hold several; revoking keeps the row.
CREATE TABLE tenure_tokens (
    id          text    PRIMARY KEY,
    principal   text    NOT NULL REFERENCES tenure_principals (name),
    token_hash  text    NOT NULL UNIQUE,
    created_at  bigint  NOT NULL,
    revoked_at  bigint
);
CREATE INDEX tenure_tokens_principal ON tenure_tokens (principal);
