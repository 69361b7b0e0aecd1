-- The latest token granted to a subtree lease on each prefix (kept after the lease ends): a key
-- under the prefix acquired afterwards gets a larger token, and the fenced register refuses
-- on the keys under it any token of theirs that is older.
CREATE TABLE tenure_subtree_tokens (
    prefix TEXT PRIMARY KEY,
    token INTEGER NOT NULL
) WITHOUT ROWID;
