-- The token floor: every token granted from now on is larger than it (set after tenure's
-- database was reset or replaced, so that fences downstream keep admitting new holders).
-- One row; floors only grow. As SQLite's migration 0012.
CREATE TABLE tenure_token_floor (
    id integer PRIMARY KEY CHECK (id = 1),
    floor bigint NOT NULL
);
INSERT INTO tenure_token_floor (id, floor) VALUES (1, 0);
