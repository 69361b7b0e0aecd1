-- A counter that moves whenever a principal or a token changes (created, revoked, deleted),
-- whoever writes it: a server may then keep the principals of the tokens it has seen for as
-- long as the counter stands still, checking it once per group of requests instead of
-- hashing and looking up every request's token (tenure.server.executor).
CREATE TABLE tenure_auth_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO tenure_auth_version (id, version) VALUES (1, 0);

CREATE TRIGGER tenure_tokens_inserted AFTER INSERT ON tenure_tokens
BEGIN UPDATE tenure_auth_version SET version = version + 1; END;
CREATE TRIGGER tenure_tokens_updated AFTER UPDATE ON tenure_tokens
BEGIN UPDATE tenure_auth_version SET version = version + 1; END;
CREATE TRIGGER tenure_tokens_deleted AFTER DELETE ON tenure_tokens
BEGIN UPDATE tenure_auth_version SET version = version + 1; END;
CREATE TRIGGER tenure_principals_inserted AFTER INSERT ON tenure_principals
BEGIN UPDATE tenure_auth_version SET version = version + 1; END;
CREATE TRIGGER tenure_principals_updated AFTER UPDATE ON tenure_principals
BEGIN UPDATE tenure_auth_version SET version = version + 1; END;
CREATE TRIGGER tenure_principals_deleted AFTER DELETE ON tenure_principals
BEGIN UPDATE tenure_auth_version SET version = version + 1; END;
