-- A lease belongs to a principal *and* one of its sessions (a process, a `tenure run`, an MCP
-- connection); leases granted before sessions existed belong to the default session ''.
ALTER TABLE tenure_leases ADD COLUMN session text NOT NULL DEFAULT '';

-- The fenced register's op_ids name one intended write per token: the same op_id under a newer
-- token is a new write. `writer` is the principal that wrote it (only it may repeat it).
ALTER TABLE tenure_fenced_ops ADD COLUMN writer text;
ALTER TABLE tenure_fenced_ops DROP CONSTRAINT tenure_fenced_ops_pkey;
ALTER TABLE tenure_fenced_ops ADD PRIMARY KEY (key, token, op_id);
