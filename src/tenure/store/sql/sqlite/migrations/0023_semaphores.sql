-- Semaphores: a key acquired with `slots: N` is held by up to N holders at once, each lease on
-- a slot key of its own (`KEY#slot/0` … `KEY#slot/N-1`, ordinary lease rows). This row keeps
-- the semaphore's N and its one token counter: every slot's new token is drawn from it, so the
-- holders' tokens are distinct and only grow.
CREATE TABLE tenure_semaphores (
    key TEXT PRIMARY KEY,
    slots INTEGER NOT NULL CHECK (slots >= 1),
    token INTEGER NOT NULL CHECK (token >= 0)
) WITHOUT ROWID;
