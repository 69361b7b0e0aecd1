-- A lease belongs to a principal *and* one of its sessions (a process, a `tenure run`, an MCP
-- connection); leases granted before sessions existed belong to the default session ''.
ALTER TABLE tenure_leases ADD COLUMN session TEXT NOT NULL DEFAULT '';

-- The fenced register's op_ids name one intended write per token: the same op_id under a newer
-- token is a new write. `writer` is the principal that wrote it (only it may repeat it).
CREATE TABLE tenure_fenced_ops_v2 (
    key      TEXT    NOT NULL,
    token    INTEGER NOT NULL,
    op_id    TEXT    NOT NULL,
    value    TEXT    NOT NULL,
    version  INTEGER NOT NULL,
    writer   TEXT,
    PRIMARY KEY (key, token, op_id)
) WITHOUT ROWID;
INSERT INTO tenure_fenced_ops_v2 (key, token, op_id, value, version)
SELECT key, token, op_id, value, version FROM tenure_fenced_ops;
DROP TABLE tenure_fenced_ops;
ALTER TABLE tenure_fenced_ops_v2 RENAME TO tenure_fenced_ops;
