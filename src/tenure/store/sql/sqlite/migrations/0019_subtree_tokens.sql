-- The latest token granted to a subtree lease on each prefix (kept after the lease ends): a key
-- under the prefix acquired afterwards gets a larger token, and the fenced register refuses
-- on the keys under it any token of theirs that is older.
CREATE TABLE tenure_subtree_tokens (
    prefix TEXT PRIMARY KEY,
    token INTEGER NOT NULL
) WITHOUT ROWID;
-- The subtree leases a database has already (their rows keep the latest one on each prefix).
INSERT INTO tenure_subtree_tokens (prefix, token)
SELECT key, token FROM tenure_leases WHERE scope = 'subtree' AND token > 0;
