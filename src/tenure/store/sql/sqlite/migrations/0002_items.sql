-- The shared work queue. The item's lease lives in tenure_leases under key 'items/<id>'.
CREATE TABLE tenure_items (
    id           TEXT    PRIMARY KEY,
    title        TEXT    NOT NULL,
    body         TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL DEFAULT 'open',
    priority     INTEGER NOT NULL DEFAULT 2,
    labels       TEXT    NOT NULL DEFAULT '[]',
    parent       TEXT,
    assignee     TEXT,
    epoch        INTEGER NOT NULL DEFAULT 0,
    progress     TEXT,
    progress_at  INTEGER,
    result       TEXT,
    created_by   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tenure_items_assignee ON tenure_items (assignee) WHERE assignee IS NOT NULL;
CREATE INDEX tenure_items_ready ON tenure_items (priority, created_at) WHERE status = 'open';

CREATE TABLE tenure_transfers (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    item    TEXT    NOT NULL,
    from_p  TEXT,
    to_p    TEXT,
    epoch   INTEGER NOT NULL,
    reason  TEXT    NOT NULL,
    actor   TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    note    TEXT
);
CREATE INDEX tenure_transfers_item ON tenure_transfers (item, id);

CREATE TABLE tenure_item_ops (
    item    TEXT NOT NULL,
    op_id   TEXT NOT NULL,
    result  TEXT NOT NULL,
    PRIMARY KEY (item, op_id)
) WITHOUT ROWID;

-- Where each principal's last briefing left off in the event log.
CREATE TABLE tenure_cursors (
    principal  TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    event_id   INTEGER NOT NULL,
    PRIMARY KEY (principal, name)
) WITHOUT ROWID;
