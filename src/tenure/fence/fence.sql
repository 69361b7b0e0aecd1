-- The table-backed fence, written once for SQLite and PostgreSQL: ``{table}`` is the
-- (validated) table name, ``?`` the parameter marker (``%s`` for psycopg).

-- name: install
CREATE TABLE IF NOT EXISTS {table} (
    key TEXT PRIMARY KEY,
    token BIGINT NOT NULL CHECK (token > 0),
    admitted_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- name: admit
-- One conditional upsert: the row moves only to an equal or larger token, and only if no
-- subtree above the key (the IN list: the key and its ancestors ``a/``, ``a/b/`` … as
-- parameters, the key first) admitted a larger token. A lower token matches no row, so
-- nothing is returned and nothing changes. On PostgreSQL the upsert locks the key's row until
-- the caller's transaction ends, so the check and the caller's own writes commit together; on
-- SQLite the statement takes the database write lock. The casts type the parameters of the
-- SELECT for PostgreSQL's drivers.
INSERT INTO {table} AS f (key, token, admitted_at)
SELECT CAST(? AS TEXT), CAST(? AS BIGINT), CURRENT_TIMESTAMP
WHERE NOT EXISTS (
    SELECT 1 FROM {table} AS a WHERE a.key IN ({keys}) AND a.token > CAST(? AS BIGINT)
)
ON CONFLICT (key) DO UPDATE SET token = excluded.token, admitted_at = excluded.admitted_at
WHERE excluded.token >= f.token
RETURNING token;

-- name: current_tree
-- The largest token of the key and the subtrees above it (the IN list as in admit).
SELECT max(token) FROM {table} WHERE key IN ({keys});

-- name: current
SELECT token FROM {table} WHERE key = ?;
