-- A counter that moves whenever a principal or a token changes (created, revoked, deleted),
-- whoever writes it: a server may then keep the principals of the tokens it has seen for as
-- long as the counter stands still, checking it once per group of requests instead of
-- looking up every request's token (tenure.server.executor). As SQLite's migration 0004.
CREATE TABLE tenure_auth_version (
    id       integer PRIMARY KEY CHECK (id = 1),
    version  bigint  NOT NULL
);
INSERT INTO tenure_auth_version (id, version) VALUES (1, 0);

CREATE FUNCTION tenure_bump_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tenure_auth_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tenure_tokens_changed
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tenure_tokens
FOR EACH STATEMENT EXECUTE FUNCTION tenure_bump_auth_version();
CREATE TRIGGER tenure_principals_changed
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tenure_principals
FOR EACH STATEMENT EXECUTE FUNCTION tenure_bump_auth_version();
