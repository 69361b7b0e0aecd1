-- The shared work queue. The item's lease lives in tenure_leases under key 'items/<id>'.
CREATE TABLE tenure_items (
    id           text    PRIMARY KEY,
    title        text    NOT NULL,
    body         text    NOT NULL DEFAULT '',
    status       text    NOT NULL DEFAULT 'open',
    priority     bigint  NOT NULL DEFAULT 2,
    labels       text    NOT NULL DEFAULT '[]',
    parent       text,
    assignee     text,
    epoch        bigint  NOT NULL DEFAULT 0,
    progress     text,
    progress_at  bigint ,
    result       text,
    created_by   text    NOT NULL,
    created_at   bigint  NOT NULL,
    updated_at   bigint  NOT NULL
);
CREATE INDEX tenure_items_assignee ON tenure_items (assignee) WHERE assignee IS NOT NULL;
CREATE INDEX tenure_items_ready ON tenure_items (priority, created_at) WHERE status = 'open';

CREATE TABLE tenure_transfers (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item    text    NOT NULL,
    from_p  text,
    to_p    text,
    epoch   bigint  NOT NULL,
    reason  text    NOT NULL,
    actor   text    NOT NULL,
    at      bigint  NOT NULL,
    note    text
);
CREATE INDEX tenure_transfers_item ON tenure_transfers (item, id);

CREATE TABLE tenure_item_ops (
    item    text NOT NULL,
    op_id   text NOT NULL,
    result  text NOT NULL,
    PRIMARY KEY (item, op_id)
);

-- Where each principal's last briefing left off in the event log.
CREATE TABLE tenure_cursors (
    principal  text    NOT NULL,
    name       text    NOT NULL,
    event_id   bigint  NOT NULL,
    PRIMARY KEY (principal, name)
);
