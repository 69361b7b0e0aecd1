-- Semaphores: a key acquired with `slots: N` is held by up to N holders at once, each lease on
-- a slot key of its own (`KEY#slot/0` … `KEY#slot/N-1`, ordinary lease rows). This row keeps
-- the semaphore's N and its one token counter: every slot's new token is drawn from it, so the
-- holders' tokens are distinct and only grow. As SQLite's migration 0023.
CREATE TABLE tenure_semaphores (
    key text COLLATE "C" PRIMARY KEY,
    slots integer NOT NULL CHECK (slots >= 1),
    token bigint NOT NULL CHECK (token >= 0)
);
