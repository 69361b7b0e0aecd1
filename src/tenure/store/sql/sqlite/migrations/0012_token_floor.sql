-- The token floor: every token granted from now on is larger than it (set after tenure's
-- database was reset or replaced, so that fences downstream keep admitting new holders).
-- One row; floors only grow.
CREATE TABLE tenure_token_floor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    floor INTEGER NOT NULL
);
INSERT INTO tenure_token_floor (id, floor) VALUES (1, 0);
