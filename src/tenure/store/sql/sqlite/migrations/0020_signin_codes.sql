-- One-time sign-in codes (`tenure dashboard`): a principal asks for one with its token, and the
-- dashboard trades it once, before it expires, for a session token of that principal. Only a
-- hash of the code is kept; `used_at` is set by the one trade that succeeds.
CREATE TABLE tenure_signin_codes (
    code_hash   TEXT    PRIMARY KEY,
    principal   TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER
) WITHOUT ROWID;
CREATE INDEX tenure_signin_codes_expiry ON tenure_signin_codes (expires_at);
